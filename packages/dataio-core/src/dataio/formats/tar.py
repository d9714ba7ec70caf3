"""Tar shards as a record source, WebDataset style: entries that share a
sample key (the path up to the first dot of the file name) form one record,
``{"key": "dir/0001", "jpg": b"...", "cls": b"3", "__url__": shard}``.

The source is sized and indexed (see :mod:`dataio.formats.shards`): it
shuffles, shards by rank and resumes like a list of files, and its member
bytes reach the decoders as slices of the shard (mapped locally or from the
shard cache), never as Python objects.

Its sample counts come from a shard index (webdataset's
``wids-shard-index-v1``, as ``widsindex create`` or ``python -m dataio
index`` write it) when there is one, so a fresh host opens the source
without reading any shard; without one every shard is read once to count
it (see :mod:`dataio.formats.shards`, "Sample counts")."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .shards import DEFAULT_SHUFFLE_SPREAD, DEFAULT_SHUFFLE_WINDOW, ShardRecords, shard_set

__all__ = ["tar_records"]


def tar_records(
    uris: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    gunzip: bool | None = None,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    index: str | os.PathLike[str] | None = None,
    write_index: bool = False,
) -> ShardRecords:
    """Samples of tar (or ``.tar.gz``/``.tgz``) shards as a sized record source.

    ``uris``: a URI, a list, a glob or brace ranges (``train-{0000..0099}.tar``),
    or the URI of a shard index (``s3://b/train/shardindex.json``: any URI
    ending in ``.json``), whose shards are then the source's, in its order.
    ``index``: a shard index giving the counts of the shards ``uris`` names
    (each must be listed in it). Either way opening reads the index, one
    request, and no shard; a shard that turns out to hold another number of
    samples is a ``CorruptDataError`` naming it and the index. Without
    either, a ``shardindex.json`` in the shards' common folder that lists
    them all is used; failing that the shards are read whole to be counted.
    ``write_index``: after counting them, write that ``shardindex.json``
    beside the shards for the next fresh host (off by default: it writes into
    the dataset's folder; an existing file that is not a shard index is never
    replaced, and a store that refuses the write is no error).
    ``gunzip``: ``None`` decides by the name. ``shuffle_window``: samples
    shuffled together when the loader has a seed (more mixes better, and
    keeps more shards open). ``shuffle_spread``: each shard's samples are
    spread over this many consecutive windows, so a window mixes that many
    times the shards (each still read once, front to back; that many times
    the shards open and cached at once; 1 reads shards one after another).
    ``cache``/``cache_dir``/``cache_bytes``: the
    local cache of remote shards and its budget."""
    return shard_set(
        "tar",
        uris,
        gunzip=gunzip,
        shuffle_window=shuffle_window,
        shuffle_spread=shuffle_spread,
        cache=cache,
        cache_dir=cache_dir,
        cache_bytes=cache_bytes,
        index_dir=index_dir,
        index=index,
        write_index=write_index,
    )
