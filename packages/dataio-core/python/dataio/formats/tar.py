"""Tar shards as record sources, WebDataset style: entries that share a
sample key (the path up to the first dot of the file name) form one record,
``{"key": "dir/0001", "jpg": b"...", "cls": b"3"}``. Local uncompressed
shards are read from a memory map; nothing is extracted to disk."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..io import reader

__all__ = ["tar_records"]


def _split(name: str) -> tuple[str, str]:
    head, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot:
        return name, ""
    return (f"{head}/{stem}" if head else stem), ext


class _TarRecords:
    def __init__(self, uris: Sequence[str], gunzip: bool | None) -> None:
        self.uris, self.gunzip = list(uris), gunzip

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for uri in self.uris:
            r = reader(uri)
            compressed = self.gunzip if self.gunzip is not None else uri.endswith((".tar.gz", ".tgz"))
            if compressed:
                r = r.gunzip()
            view = memoryview(r)
            current: dict[str, Any] | None = None
            for name, size, offset in r.tar_index():
                key, ext = _split(name)
                if current is not None and current["key"] != key:
                    yield current
                    current = None
                if current is None:
                    current = {"key": key, "__shard__": uri}
                if ext:
                    current[ext] = bytes(view[offset : offset + size])
            if current is not None:
                yield current

    def __repr__(self) -> str:
        return f"<tar_records over {len(self.uris)} shards>"


def tar_records(uris: str | Sequence[str], *, gunzip: bool | None = None) -> Iterable[dict[str, Any]]:
    """Samples of tar (or tar.gz) shards as pipeline records (one pass)."""
    if isinstance(uris, str):
        uris = [uris]
    if not uris:
        raise InvalidArgumentError("tar_records needs at least one shard")
    return _TarRecords(uris, gunzip)
