"""JSON Lines shards (``.jsonl``, ``.jsonl.gz``, ``.jsonl.zst``) as a sized,
indexed record source: each non-blank line is a record, its object's
fields the record's fields (strings as text, numbers, bools; arrays and
objects as their JSON text). Like the other shard sources: line tables
kept in the index directory, block shuffle, cache, rank sharding, resume
(see :mod:`dataio.formats.shards`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import InvalidArgumentError
from .shards import DEFAULT_SHUFFLE_SPREAD, DEFAULT_SHUFFLE_WINDOW, ShardRecords, shard_set

__all__ = ["jsonl_records"]


def jsonl_records(
    uris: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    compression: str | None = "auto",
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
) -> ShardRecords:
    """Lines of JSON Lines shards (a list, a glob, braces, any backend) as
    records. ``key`` is the line's ``key`` field when it is a string, else
    ``uri#L<line>``. ``compression``: ``"auto"`` (gzip for ``.gz``, zstd
    for ``.zst``), ``"gzip"`` or ``None``. A line that is not a JSON object
    fails its record with an error naming the shard and the line."""
    if compression not in ("auto", "gzip", None):
        raise InvalidArgumentError(f"compression must be None, 'gzip' or 'auto', got {compression!r}")
    gunzip = None if compression == "auto" else compression == "gzip"
    return shard_set(
        "jsonl", uris, gunzip=gunzip, shuffle_window=shuffle_window, shuffle_spread=shuffle_spread, cache=cache,
        cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir,
    )
