"""Flat IO verbs over every URI scheme: local paths, ``file://`` and whatever
the installed plugins serve (``s3://``, ``gs://``, ``az://``, ``hf://``, ...).

Every verb releases the GIL while it works. Writes are atomic: the object
appears whole when the call (or the ``writer`` block) finishes, or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

from . import _native
from ._native import ObjectMeta, Reader, Writer

__all__ = [
    "ObjectMeta",
    "Reader",
    "Writer",
    "head",
    "read",
    "write",
    "exists",
    "delete",
    "ls",
    "glob",
    "fetch_into",
    "read_ranges",
    "reader",
    "writer",
]


def head(uri: str) -> ObjectMeta:
    """Metadata of one object: size, mtime, etag, whether it is a directory."""
    return _native.head(uri)


def read(uri: str, offset: int = 0, size: int | None = None) -> bytes:
    """Bytes ``[offset, offset + size)`` of ``uri`` (to the end when ``size`` is None).

    A range that does not lie inside the object raises :class:`dataio.errors.OutOfRangeError`.
    """
    return _native.read(uri, offset, size)


def write(uri: str, data: Any) -> str:
    """Writes ``data`` (any bytes-like object) atomically; returns the etag."""
    return _native.write(uri, data)


def exists(uri: str) -> bool:
    return _native.exists(uri)


def delete(uri: str) -> None:
    """Deletes one object (not a directory)."""
    _native.delete(uri)


@overload
def ls(uri: str, *, detail: Literal[False] = ..., recursive: bool = ...) -> list[str]: ...
@overload
def ls(uri: str, *, detail: Literal[True], recursive: bool = ...) -> list[ObjectMeta]: ...
def ls(uri: str, *, detail: bool = False, recursive: bool = False) -> list[str] | list[ObjectMeta]:
    """Direct children of a directory or prefix (directories included), or
    every object below it with ``recursive=True``. Sorted."""
    metas = _native.ls(uri, recursive)
    return metas if detail else [m.uri for m in metas]


@overload
def glob(pattern: str, *, detail: Literal[False] = ...) -> list[str]: ...
@overload
def glob(pattern: str, *, detail: Literal[True]) -> list[ObjectMeta]: ...
def glob(pattern: str, *, detail: bool = False) -> list[str] | list[ObjectMeta]:
    """Objects matching ``pattern``: ``*`` within a path segment, ``**`` across
    segments, ``?``, ``[abc]``, ``{a,b}``. Sorted."""
    metas = _native.glob(pattern)
    return metas if detail else [m.uri for m in metas]


def fetch_into(uri: str, buf: Any, offset: int = 0, size: int | None = None) -> int:
    """Reads ``uri`` (from ``offset``, ``size`` bytes or to the end) straight into
    the caller's writable buffer (bytearray, numpy array, mmap, ...) with the
    GIL released; returns the number of bytes written. From a remote store a
    read longer than 8 MiB goes out as 8 MiB parts fetched concurrently."""
    return _native.fetch_into(uri, buf, offset, size)


def read_ranges(
    uri: str, ranges: Sequence[tuple[int, int]], *, gap: int | None = None, part_size: int | None = None
) -> list[bytes]:
    """The bytes of each ``(offset, size)`` range of one object, in the order given.

    From a remote store, ranges less than ``gap`` bytes apart (default 1 MiB)
    are fetched by one request as long as it spans at most ``part_size`` bytes
    (default 8 MiB); a longer range is split into ``part_size`` parts; up to 16
    requests run at once. Local files are read range by range from their map.
    """
    return _native.read_ranges(uri, list(ranges), gap=gap, part_size=part_size)


def reader(uri: str) -> Reader:
    """A handle for repeated reads of one source; see :class:`dataio.Reader`."""
    return _native.reader(uri)


def writer(uri: str) -> Writer:
    """A streaming, atomic writer; use it as a context manager."""
    return _native.writer(uri)
