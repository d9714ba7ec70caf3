"""TFRecord files: framing with masked CRC32C checks and ``tf.train.Example``
parsing, both native. Optional gzip. Also a sized, indexed record source for
pipelines over many shards, and a writer (for tests and interop)."""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .. import _native
from ..errors import InvalidArgumentError
from ..io import reader, writer
from .shards import DEFAULT_SHUFFLE_SPREAD, DEFAULT_SHUFFLE_WINDOW, ShardRecords, shard_set

__all__ = ["iter_tfrecord", "tfrecord_records", "write_tfrecord"]

_CHUNK = 512


def _data(uri: str, compression: str | None) -> Any:
    r = reader(uri)
    if compression == "auto":
        compression = "gzip" if uri.endswith((".gz", ".gzip")) else None
    if compression == "gzip":
        return r.gunzip()
    if compression is not None:
        raise InvalidArgumentError(f"compression must be None, 'gzip' or 'auto', got {compression!r}")
    return r


def iter_tfrecord(uri: str, *, raw: bool = False, compression: str | None = "auto", check_crc: bool = True) -> Iterator[Any]:
    """Yields each record of ``uri``: parsed ``tf.train.Example`` dicts
    (feature name -> list of bytes / floats / ints), or raw ``bytes``."""
    data = _data(uri, compression)
    spans = _native.tfrecord_split(uri, data, check_crc)
    view = memoryview(data)
    for start in range(0, len(spans), _CHUNK):
        chunk = spans[start : start + _CHUNK]
        if raw:
            for off, n in chunk:
                yield bytes(view[off : off + n])
        else:
            yield from _native.tfrecord_parse(uri, data, chunk, start)


def tfrecord_records(
    uris: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    compression: str | None = "auto",
    check_crc: bool = True,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
) -> ShardRecords:
    """Examples of TFRecord shards (plain or gzip) as a sized record source
    (see :mod:`dataio.formats.shards`). Single-value features are unwrapped
    so slots read them directly; a list feature arrives as its values'
    little-endian bytes. ``key`` is the example's ``key`` feature, else
    ``uri#n``. ``compression``: ``"auto"`` (by name), ``"gzip"`` or ``None``."""
    if compression not in ("auto", "gzip", None):
        raise InvalidArgumentError(f"compression must be None, 'gzip' or 'auto', got {compression!r}")
    gunzip = None if compression == "auto" else compression == "gzip"
    return shard_set(
        "tfrecord", uris, gunzip=gunzip, check_crc=check_crc, shuffle_window=shuffle_window,
        shuffle_spread=shuffle_spread, cache=cache, cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir,
    )


def _masked_crc(data: bytes) -> int:
    from .. import _native as n

    return n.tfrecord_crc(data)


def _varint(v: int) -> bytes:
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def encode_example(features: dict[str, Any]) -> bytes:
    """Serializes a dict of bytes / float / int (or lists of them) as a tf.train.Example."""
    entries = b""
    for name, value in features.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if all(isinstance(v, (bytes, bytearray, str)) for v in values):
            body = b"".join(_field(1, v.encode() if isinstance(v, str) else bytes(v)) for v in values)
            feat = _field(1, body)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            feat = _field(3, _field(1, b"".join(_varint(v) for v in values)))
        elif all(isinstance(v, (int, float)) for v in values):
            feat = _field(2, _field(1, struct.pack(f"<{len(values)}f", *values)))
        else:
            raise InvalidArgumentError(f"feature {name!r}: values must be all bytes/str, all ints or all floats")
        entries += _field(1, _field(1, name.encode()) + _field(2, feat))
    return _field(1, entries)


def tfrecord_bytes(examples: Iterable[dict[str, Any] | bytes]) -> tuple[bytes, int]:
    """Examples (dicts, or already-serialized bytes) framed as a TFRecord
    file (length, its masked CRC-32C, payload, its masked CRC-32C); and the count."""
    out = bytearray()
    n = 0
    for ex in examples:
        payload = ex if isinstance(ex, (bytes, bytearray)) else encode_example(ex)
        length = struct.pack("<Q", len(payload))
        out += length + struct.pack("<I", _masked_crc(length)) + payload + struct.pack("<I", _masked_crc(bytes(payload)))
        n += 1
    return bytes(out), n


def write_tfrecord(uri: str, examples: Iterable[dict[str, Any] | bytes], *, gzip_compress: bool = False) -> int:
    """Writes examples (dicts, or already-serialized bytes) atomically; returns the count."""
    out, n = tfrecord_bytes(examples)
    data = gzip.compress(out) if gzip_compress else out
    with writer(uri) as w:
        w.write(data)
    return n
