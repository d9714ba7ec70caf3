"""CSV shards (``.csv``, ``.csv.gz``, ``.tsv`` with ``delimiter="\\t"``) as a
sized, indexed record source: the first row names the columns, every later
row is a record whose fields are its columns. Fields are text unless
``columns`` types them. Rows are found by the native parser (RFC 4180: a
quoted field may hold the delimiter, quotes and newlines), kept in the
index directory like every shard source's table; block shuffle, cache,
rank sharding and resume as in :mod:`dataio.formats.shards`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidArgumentError
from .shards import DEFAULT_SHUFFLE_SPREAD, DEFAULT_SHUFFLE_WINDOW, ShardRecords, shard_set

__all__ = ["csv_records"]

_TYPES: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", bytes: "bytes"}


def csv_records(
    uris: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    columns: Mapping[str, type | str] | None = None,
    delimiter: str = ",",
    compression: str | None = "auto",
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
) -> ShardRecords:
    """Rows of CSV shards (a list, a glob, braces, any backend) as records.

    ``columns`` types some columns: ``{"label": int, "score": float,
    "ok": bool}`` (or the names ``"int"``, ``"float"``, ``"bool"``,
    ``"str"``, ``"bytes"``); an empty field of a typed column is None, a
    field that is not of its type fails its record (``CorruptDataError``
    naming the shard, line and column; ``on_failure="skip"`` skips it).
    Other columns are text (bytes where not UTF-8). ``key`` is the row's
    ``key`` column when it has one, else ``uri#L<line>``. ``delimiter``:
    one ASCII character (``"\\t"`` for TSV). ``compression``: ``"auto"``
    (gzip for ``.gz``), ``"gzip"`` or ``None``. A row with more or fewer
    fields than the header fails as its own record; a header with an empty
    or repeated name fails the shard."""
    if compression not in ("auto", "gzip", None):
        raise InvalidArgumentError(f"compression must be None, 'gzip' or 'auto', got {compression!r}")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or not delimiter.isascii() or delimiter in '"\r\n':
        raise InvalidArgumentError(f"delimiter must be one ASCII character other than a quote or newline, got {delimiter!r}")
    typed: dict[str, str] = {}
    for name, t in dict(columns or {}).items():
        kind = _TYPES.get(t, t if isinstance(t, str) and t in _TYPES.values() else None)
        if kind is None:
            raise InvalidArgumentError(
                f"csv_records: column {name!r}: a type is str, int, float, bool or bytes (or its name), got {t!r}"
            )
        typed[str(name)] = kind
    options: dict[str, Any] = {}
    if delimiter != ",":
        options["delimiter"] = delimiter
    if typed:
        options["columns"] = typed
    fmt = "csv:" + json.dumps(options, sort_keys=True) if options else "csv"
    gunzip = None if compression == "auto" else compression == "gzip"
    return shard_set(
        fmt, uris, gunzip=gunzip, shuffle_window=shuffle_window, shuffle_spread=shuffle_spread, cache=cache,
        cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir,
    )
