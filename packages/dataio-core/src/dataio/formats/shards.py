"""Datasets in shards: naming them, and the sized source over them.

Shards are named one way on every backend: a URI, a list of URIs, a glob
(``s3://b/train-*.tar``) or WebDataset's brace ranges
(``s3://b/train-{0000..0999}.tar``, also lists ``{a,b}``), mixed freely.

:class:`ShardRecords` is what ``tar_records`` and ``tfrecord_records``
return: a sized sequence of samples over a native shard set. The loader reads
it natively (no Python per sample); its epoch order is a keyed permutation of
the shards with a shuffle of samples inside a window of ``shuffle_window``
samples (see ``docs/arch.md``, "Datasets in shards"), so each shard is read
once per epoch, front to back, while batches mix the shards of the window.

Indexes are kept under ``index_dir`` (default ``$DATAIO_CACHE_DIR/index``,
``~/.cache/dataio/shards/index``), keyed by URI, size and etag (or mtime):
a second epoch or a restarted job does not index again. Remote shards are
kept in a local cache (``cache_dir``, default ``$DATAIO_CACHE_DIR/cache``)
within ``cache_bytes``; the ranks of one host share it when they point at
the same directory.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import _native
from .. import uri as _uri
from ..errors import InvalidArgumentError
from ..io import glob, ls

__all__ = ["expand_shards", "ShardRecords", "shard_set", "cache_root", "DEFAULT_SHUFFLE_WINDOW"]

#: Samples shuffled together (a window of the shard-ordered stream).
DEFAULT_SHUFFLE_WINDOW = 8192
#: The cache budget when none is given: this much, at most half the free disk.
DEFAULT_CACHE_BYTES = 64 << 30

_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_LIST = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _braces(spec: str) -> list[str]:
    """Expands the leftmost brace group first, as a shell does."""
    ranges, lists = _RANGE.search(spec), _LIST.search(spec)
    m = min((x for x in (ranges, lists) if x), key=lambda x: x.start(), default=None)
    if m is None:
        return [spec]
    head, tail = spec[: m.start()], spec[m.end() :]
    if m is lists:
        return [out for alt in m.group(1).split(",") for out in _braces(head + alt + tail)]
    lo, hi = m.group(1), m.group(2)
    if int(hi) < int(lo):
        raise InvalidArgumentError(f"shard range {m.group(0)} in {spec!r} runs backwards")
    width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
    return [out for i in range(int(lo), int(hi) + 1) for out in _braces(head + str(i).zfill(width) + tail)]


def expand_shards(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The shard URIs ``spec`` names, in order: brace ranges and lists
    expanded, globs matched (sorted) on their backend, lists concatenated.
    A glob that matches nothing is an error naming it."""
    return [u for u, _ in _expand(spec)]


def _expand(spec: Any) -> list[tuple[str, Any]]:
    """(uri, listing metadata or None) per shard."""
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out: list[tuple[str, Any]] = []
    for item in items:
        for one in _braces(os.fspath(item)):
            if any(c in one for c in "*?["):
                found = glob(one, detail=True)
                if not found:
                    raise FileNotFoundError(f"no shard matches {one!r}")
                out.extend((m.uri, m) for m in found)
            else:
                out.append((one, None))
    if not out:
        raise InvalidArgumentError("a shard source needs at least one shard")
    return out


#: Remote shards named one by one in a folder holding at least this many are
#: looked up with one listing of the folder instead of a request each.
_LIST_FROM = 8


def _known(shards: list[tuple[str, Any]]) -> list[tuple[int, str] | None]:
    """(size, etag) of remote shards from listings, so opening a set of many
    shards costs a few listings, not a request per shard. Local shards and
    objects without an etag are asked one by one (a stat, or a head)."""
    metas = {u: m for u, m in shards if m is not None}
    folders: dict[str, list[str]] = {}
    for u, m in shards:
        if m is None and _uri.local_path(u) is None and "/" in u:
            folders.setdefault(u.rsplit("/", 1)[0] + "/", []).append(u)
    for folder, members in folders.items():
        if len(members) >= _LIST_FROM:
            try:
                metas.update((m.uri, m) for m in ls(folder, detail=True))
            except (OSError, InvalidArgumentError):
                pass  # asked one by one below
    out: list[tuple[int, str] | None] = []
    for u, _ in shards:
        m = metas.get(u)
        local = _uri.local_path(u) is not None
        out.append((int(m.size), str(m.etag)) if m is not None and m.etag and not local and not m.is_dir else None)
    return out


def cache_root() -> Path:
    """Where shard indexes and the shard cache live by default."""
    env = os.environ.get("DATAIO_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "dataio" / "shards"


def _budget(cache_dir: Path, cache_bytes: int | None) -> int:
    if cache_bytes is not None:
        if not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool) or cache_bytes <= 0:
            raise InvalidArgumentError(f"cache_bytes must be a positive number of bytes, got {cache_bytes!r}")
        return cache_bytes
    cache_dir.mkdir(parents=True, exist_ok=True)
    return min(DEFAULT_CACHE_BYTES, shutil.disk_usage(cache_dir).free // 2)


def shard_set(
    fmt: str,
    uris: Any,
    *,
    gunzip: bool | None = None,
    check_crc: bool = True,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
) -> ShardRecords:
    if not isinstance(shuffle_window, int) or isinstance(shuffle_window, bool) or shuffle_window < 1:
        raise InvalidArgumentError(f"shuffle_window must be a positive number of samples, got {shuffle_window!r}")
    named = _expand(uris)
    shards = [u for u, _ in named]
    root = cache_root()
    index = Path(index_dir) if index_dir is not None else root / "index"
    remote = any(_uri.local_path(u) is None for u in shards)
    cdir = (Path(cache_dir) if cache_dir is not None else root / "cache") if cache and remote else None
    native = _native.ShardSet(
        fmt,
        shards,
        index_dir=str(index),
        known=_known(named),
        gunzip=gunzip,
        check_crc=check_crc,
        window=shuffle_window,
        cache_dir=str(cdir) if cdir is not None else None,
        cache_bytes=_budget(cdir, cache_bytes) if cdir is not None else 0,
    )
    return ShardRecords(native, (fmt, shards, gunzip, check_crc, shuffle_window, cache, cache_dir, cache_bytes, index_dir))


class ShardRecords(Sequence[dict[str, Any]]):
    """A sized, indexed source over shards (see the module docstring).

    ``len()`` is the number of samples; ``records[i]`` is sample ``i`` in
    storage order as a dict (for inspection; the loader does not go through
    it). ``shards`` and ``counts`` describe the shards; ``stats()`` counts
    shards opened and the cache's hits, misses, bytes fetched and evictions."""

    def __init__(self, native: Any, args: tuple[Any, ...]) -> None:
        self._dataio_native = native
        self._args = args

    def __len__(self) -> int:
        return len(self._dataio_native)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, int):
            raise TypeError(f"shard records are indexed by int, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample {i} is out of range ({n} samples)")
        return self._dataio_native.record(i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self._dataio_native.record(i)

    def _dataio_layout(self) -> tuple[list[int], int]:
        return list(self._dataio_native.counts), int(self._dataio_native.window)

    def _dataio_source_stats(self) -> dict[str, Any]:
        return dict(self._dataio_native.stats())

    @property
    def shards(self) -> list[str]:
        return list(self._dataio_native.uris)

    @property
    def counts(self) -> list[int]:
        return list(self._dataio_native.counts)

    @property
    def shuffle_window(self) -> int:
        return int(self._dataio_native.window)

    def stats(self) -> dict[str, Any]:
        return self._dataio_source_stats()

    def __reduce__(self) -> Any:
        fmt, shards, *rest = self._args
        return (_reopen, (fmt, shards, *rest))

    def __repr__(self) -> str:
        return f"<dataio shard records: {len(self)} samples in {len(self.counts)} {self._args[0]} shards>"


def _reopen(fmt: str, shards: list[str], gunzip: Any, check_crc: bool, window: int, cache: bool, cache_dir: Any, cache_bytes: Any, index_dir: Any) -> ShardRecords:
    return shard_set(fmt, shards, gunzip=gunzip, check_crc=check_crc, shuffle_window=window, cache=cache, cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir)
