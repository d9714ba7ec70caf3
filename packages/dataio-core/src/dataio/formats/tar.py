"""Tar shards as a record source, WebDataset style: entries that share a
sample key (the path up to the first dot of the file name) form one record,
``{"key": "dir/0001", "jpg": b"...", "cls": b"3", "__url__": shard}``.

The source is sized and indexed (see :mod:`dataio.formats.shards`): it
shuffles, shards by rank and resumes like a list of files, and its member
bytes reach the decoders as slices of the shard (mapped locally or from the
shard cache), never as Python objects."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .shards import DEFAULT_SHUFFLE_WINDOW, ShardRecords, shard_set

__all__ = ["tar_records"]


def tar_records(
    uris: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    gunzip: bool | None = None,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
) -> ShardRecords:
    """Samples of tar (or ``.tar.gz``/``.tgz``) shards as a sized record source.

    ``uris``: a URI, a list, a glob or brace ranges (``train-{0000..0099}.tar``).
    ``gunzip``: ``None`` decides by the name. ``shuffle_window``: samples
    shuffled together when the loader has a seed (more mixes better, and
    keeps more shards open). ``cache``/``cache_dir``/``cache_bytes``: the
    local cache of remote shards and its budget."""
    return shard_set("tar", uris, gunzip=gunzip, shuffle_window=shuffle_window, cache=cache, cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir)
