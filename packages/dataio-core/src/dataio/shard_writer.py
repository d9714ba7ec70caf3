"""``dataio.write_shards``: a bound pipeline's samples written as shards
(WebDataset tar, parquet or TFRecord) with their index, resumable after a
crash.

Where it sits: the pipeline runs in the native runtime as for training (the
CPU pool decodes, transforms and encodes: ``encode_image`` is a kernel), and
this module is a sink beside the shape stage. Each finished batch's rows are
appended to the open shard in the epoch's order; a full shard is handed to
an upload thread (``dataio.write``: an atomic object on every backend, a
temporary file renamed on local disks) while the runtime goes on. Uploads
finish in any order, but the manifest beside the shards records them in
order, so what it lists is always a prefix of the output.

**Deterministic output.** Shards are filled to ``samples_per_shard`` (or
``max_shard_bytes``) in the epoch's order: the source's order, or a keyed
shuffle for ``seed=``. Members carry no timestamps or owners, so the same
inputs give the same shards byte for byte, whoever runs them (one host, a
rerun after a crash, a Ray cluster).

**Resume.** The manifest (``<stem>.manifest.json`` beside the shards) holds
the run's fingerprint (pipeline signature, source size and layout, format,
sizes, seed) and per finished shard its name, sample count, size, and where
in the epoch it ended: the start of the batch holding its last sample and
the keys of that batch already written. A rerun checks each listed shard's
size against the store, keeps the verified prefix, restarts the loader at
that batch, drops the rows already written, and continues the numbering.
Another fingerprint is a :class:`~dataio.errors.InvalidArgumentError`
naming what changed (``resume=False`` starts over).
"""

from __future__ import annotations

import hashlib
import io as _io
import json
import os
import posixpath
import re
import struct
import tarfile
import time
import warnings
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._progress import Progress
from .errors import CorruptDataError, InvalidArgumentError, NotFoundError, RowError
from .formats.shards import SHARD_INDEX_NAME, shard_index_doc
from .formats.tfrecord import tfrecord_bytes
from .io import head, read, write, writer

if TYPE_CHECKING:
    from .pipeline import BoundPipeline

FORMATS = {"webdataset": ".tar", "parquet": ".parquet", "tfrecord": ".tfrecord"}
_BY_SUFFIX = {v: k for k, v in FORMATS.items()}
_RANGE = re.compile(r"\{(\d+)\.\.(\d*)\}")
_MANIFEST_KIND = "dataio-write-manifest-v1"
# Slot names whose bytes are text (a parquet string column).
_TEXT = {"txt", "text", "caption", "json", "cls", "label"}
_IMAGE_EXT = {"jpeg": "jpg", "png": "png", "webp": "webp"}
#: Shards uploading at once beside the runtime.
_UPLOADS = 4


@dataclass
class WriteReport:
    """What :func:`write_shards` did. ``failed`` counts the rows skipped by
    reason (the error class); ``errors`` holds the first 100 of them, each
    naming its record, slot, op and URI. ``kept`` is the number of shards a
    resumed run found finished and did not write again."""

    dest: str
    shards: list[str]
    samples: int
    bytes: int
    seconds: float
    failed: dict[str, int] = field(default_factory=dict)
    errors: list[RowError] = field(default_factory=list)
    kept: int = 0
    index: str | None = None

    def __str__(self) -> str:
        rate = self.samples / self.seconds if self.seconds > 0 else 0.0
        failed = ", ".join(f"{n} {k}" for k, n in sorted(self.failed.items())) or "none"
        kept = f" ({self.kept} kept from an earlier run)" if self.kept else ""
        return (
            f"wrote {self.samples} samples in {len(self.shards)} shards{kept}, {self.bytes / 1e6:.1f} MB, "
            f"{self.seconds:.1f} s ({rate:,.0f} samples/s); failed rows: {failed}"
        )


@dataclass(frozen=True)
class _Dest:
    prefix: str
    suffix: str
    width: int
    first: int
    last: int | None

    def name(self, i: int) -> str:
        n = self.first + i
        if self.last is not None and n > self.last:
            raise InvalidArgumentError(
                f"the destination's range ends at {self.last:0{self.width}d}, and shard {n:0{self.width}d} is needed: "
                f"leave the range open ({{{self.first:0{self.width}d}..}}) or raise samples_per_shard"
            )
        return f"{self.prefix}{n:0{self.width}d}{self.suffix}"

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.prefix) if "://" in self.prefix else os.path.dirname(self.prefix)

    def beside(self, name: str) -> str:
        folder = self.folder
        return f"{folder}/{name}" if folder else name

    @property
    def stem(self) -> str:
        base = self.prefix.rsplit("/", 1)[-1].rstrip("-_.")
        return base or "shards"


def _parse_dest(dest: str) -> _Dest:
    found = list(_RANGE.finditer(dest))
    if len(found) != 1:
        raise InvalidArgumentError(
            f"dest must hold one brace range that numbers the shards, such as 'train-{{000000..}}.tar', got {dest!r}"
        )
    m = found[0]
    start, end = m.group(1), m.group(2)
    if end and int(end) < int(start):
        raise InvalidArgumentError(f"dest's range {m.group(0)} ends before it starts")
    prefix, suffix = dest[: m.start()], dest[m.end() :]
    if any(c in prefix + suffix for c in "{}*?["):
        raise InvalidArgumentError(f"dest may hold only the one range, no other braces or wildcards: {dest!r}")
    return _Dest(prefix, suffix, len(start), int(start), int(end) if end else None)


# ---------------------------------------------------------------------------
# Members: a slot's value in one row, as bytes and a name.


@dataclass(frozen=True)
class _Slot:
    name: str
    ext: str  # the member's extension / the column's name
    kind: str  # "image" (encoded file bytes), "bytes" (decode_bytes), "array"


def _slots(pipe: Any) -> list[_Slot]:
    out: list[_Slot] = []
    for s in pipe.slots:
        ops: list[dict[str, Any]] = s.to_json()["ops"]
        last: dict[str, Any] = ops[-1] if ops else {"op": ""}
        if last["op"] == "encode_image":
            fmt = _IMAGE_EXT[last.get("params", {}).get("format", "jpeg")]
            ext = s.name if s.name in _IMAGE_EXT.values() or s.name == "jpeg" else fmt
            out.append(_Slot(s.name, ext, "image"))
        elif len(ops) == 1 and last["op"] == "decode_bytes":
            out.append(_Slot(s.name, s.name, "bytes"))
        else:
            out.append(_Slot(s.name, s.name if s.name.endswith("npy") else f"{s.name}.npy", "array"))
    exts = [s.ext for s in out]
    if len(set(exts)) != len(exts):
        raise InvalidArgumentError(f"two slots would write members with one extension: {exts}; rename a slot")
    return out


def _npy(a: np.ndarray) -> bytes:
    buf = _io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def _value(slot: _Slot, v: Any) -> bytes | int | float | str | None:
    """One row's value: file bytes, a number (a scalar from decode_bytes), or npy bytes."""
    if v is None:
        return None
    a = np.asarray(v)
    if slot.kind == "image":
        return a.tobytes()
    if slot.kind == "bytes":
        if a.ndim == 0:
            x = a.item()
            return x if isinstance(x, (int, float)) else str(x)
        if a.dtype == np.uint8 and a.ndim == 1:
            return a.tobytes()
    return _npy(a)


def _as_member(v: bytes | int | float | str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, bool):
        return b"1" if v else b"0"
    return str(v).encode()


def _safe_key(key: str) -> str:
    """A key as a member name. WebDataset splits a name at the first dot of
    its base name, so a key's own dots become underscores; a key that is a
    URI or an absolute path (``/data/urls.jsonl#L7``, a source's default)
    keeps its last part (``urls_jsonl_L7``); ``..`` parts are dropped."""
    if "://" in key or key.startswith("/"):
        key = key.rsplit("/", 1)[-1]
    parts = [p for p in key.replace("#", "_").replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if not parts:
        return "_"
    parts[-1] = parts[-1].replace(".", "_")
    return "/".join(parts)


# ---------------------------------------------------------------------------
# Shard formats: rows in, the shard's bytes out.

Row = tuple[str, dict[str, Any]]


_USTAR = struct.Struct("100s8s8s8s12s12s8sc100s8s32s32s8s8s155s12s")


def _member_header(name: str, size: int) -> bytes:
    """A tar member's header, as ``tarfile`` writes it for mode 0644, mtime 0
    and no owner: a ustar header for short ASCII names (built here, ~20x
    faster than ``TarInfo.tobuf``, byte for byte the same), PAX otherwise."""
    raw = name.encode("ascii", "surrogateescape") if name.isascii() else b""
    if not raw or len(raw) > 100 or size >= 0o77777777777:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, 0, 0o644
        return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    zero8 = b"0000000\0"
    head = _USTAR.pack(
        raw, b"0000644\0", zero8, zero8, b"%011o\0" % size, b"00000000000\0", b" " * 8, b"0", b"",
        b"ustar\x0000", b"", b"", b"", b"", b"", b"",
    )
    return head[:148] + b"%06o\0" % sum(head) + head[155:]


def _tar(rows: list[Row], slots: list[_Slot]) -> bytes:
    parts: list[bytes] = []
    at = 0
    for key, values in rows:
        k = _safe_key(key)
        for s in slots:
            v = values.get(s.name)
            if v is None:
                continue
            data = _as_member(v)
            pad = -len(data) % 512
            head = _member_header(f"{k}.{s.ext}", len(data))
            parts += (head, data, b"\0" * pad)
            at += len(head) + len(data) + pad
    at += 1024
    # Two zero blocks, then padding to tar's record size (10240 bytes), as tarfile and GNU tar write.
    parts.append(b"\0" * (1024 + -at % tarfile.RECORDSIZE))
    return b"".join(parts)


def _tfrecord(rows: list[Row], slots: list[_Slot]) -> bytes:
    """A tf.train.Example per sample: ``key`` and each slot's value (bytes,
    int64 or float), features in name order."""

    def example(key: str, values: dict[str, Any]) -> dict[str, Any]:
        feats: dict[str, Any] = {"key": key}
        for s in slots:
            v = values.get(s.name)
            if v is not None:
                feats[s.ext] = int(v) if isinstance(v, bool) else v
        return dict(sorted(feats.items()))

    return tfrecord_bytes(example(k, v) for k, v in rows)[0]


def _parquet(rows: list[Row], slots: list[_Slot]) -> bytes:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise InvalidArgumentError("format='parquet' needs pyarrow: pip install 'dataio[parquet]'") from None
    cols: dict[str, Any] = {"key": pa.array([k for k, _ in rows], pa.string())}
    for s in slots:
        vals = [v.get(s.name) for _, v in rows]
        kinds = {type(x) for x in vals if x is not None}
        if kinds <= {int, bool} and kinds:
            cols[s.ext] = pa.array(vals, pa.bool_() if kinds == {bool} else pa.int64())
        elif kinds <= {int, float} and kinds:
            cols[s.ext] = pa.array([None if x is None else float(x) for x in vals], pa.float64())
        elif kinds == {str}:
            cols[s.ext] = pa.array(vals, pa.string())
        elif s.name in ("cls", "label") and kinds == {bytes} and all(x is None or x.strip().lstrip(b"-").isdigit() for x in vals):
            cols[s.ext] = pa.array([None if x is None else int(x) for x in vals], pa.int64())
        elif s.name in _TEXT and kinds == {bytes} and _utf8(vals):
            cols[s.ext] = pa.array([None if x is None else x.decode() for x in vals], pa.string())
        else:
            cols[s.ext] = pa.array([None if x is None else _as_member(x) for x in vals], pa.binary())
    out = _io.BytesIO()
    pq.write_table(pa.table(cols), out, compression="zstd", row_group_size=max(1, len(rows)))
    return out.getvalue()


def _utf8(vals: list[Any]) -> bool:
    try:
        for x in vals:
            if x is not None:
                x.decode()
    except UnicodeDecodeError:
        return False
    return True


_WRITERS = {"webdataset": _tar, "parquet": _parquet, "tfrecord": _tfrecord}


def _size(value: Any) -> int:
    return len(value) if isinstance(value, bytes) else 16


# ---------------------------------------------------------------------------
# The run.


def _fingerprint(bound: BoundPipeline, loader: Any, fmt: str, dest: str, samples_per_shard: int, max_shard_bytes: int | None, seed: int | None) -> dict[str, Any]:
    st = loader.state_dict()
    records = bound.records
    shards = getattr(records, "shards", None)
    source = {
        "size": st.get("dataset_size"),
        "shard_order": st.get("shard_order"),
        "shards": hashlib.sha256(json.dumps(list(shards), default=str).encode()).hexdigest()[:16] if shards else None,
    }
    return {
        "dest": dest,
        "format": fmt,
        "samples_per_shard": samples_per_shard,
        "max_shard_bytes": max_shard_bytes,
        "seed": seed,
        "pipeline": st["signature"],
        "source": source,
    }


def _is_entry(e: Any) -> bool:
    ints = ("samples", "end", "bytes")
    return (
        isinstance(e, dict)
        and isinstance(e.get("name"), str)
        and all(isinstance(e.get(k), int) and not isinstance(e.get(k), bool) and e[k] >= 0 for k in ints)
        and isinstance(e.get("end_keys", []), list)
        and all(isinstance(k, str) for k in e.get("end_keys", []))
        and isinstance(e.get("end_failed", []), list)
        and isinstance(e.get("failed", {}), dict)
        and all(isinstance(k, str) and isinstance(n, int) for k, n in e.get("failed", {}).items())
    )


def parse_manifest(uri: str, data: bytes) -> dict[str, Any]:
    """Checks the bytes of a write manifest read from ``uri``: a
    :class:`~dataio.errors.CorruptDataError` naming it for anything but the
    document :func:`write_shards` writes (a resume must not trust a damaged
    one: rerun with ``resume=False``)."""
    fix = "rerun with resume=False to write the shards again"
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorruptDataError(f"{uri}: the write manifest is not JSON ({type(e).__name__}); {fix}") from None
    if not isinstance(doc, dict) or doc.get("__kind__") != _MANIFEST_KIND:
        raise CorruptDataError(f"{uri}: not a {_MANIFEST_KIND} document; {fix}")
    shards = doc.get("shards")
    if not isinstance(doc.get("fingerprint"), dict) or not isinstance(shards, list):
        raise CorruptDataError(f"{uri}: the write manifest lacks its fingerprint or shard list; {fix}")
    for n, entry in enumerate(shards):
        if not _is_entry(entry):
            raise CorruptDataError(f"{uri}: entry {n} of the write manifest is damaged ({str(entry)[:200]}); {fix}")
    return doc


def _read_manifest(uri: str) -> dict[str, Any] | None:
    try:
        data = read(uri)
    except NotFoundError:
        return None
    return parse_manifest(uri, data)


def _verified(d: _Dest, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prefix of ``entries`` whose shards stand with their recorded size."""
    kept: list[dict[str, Any]] = []
    for i, e in enumerate(entries):
        uri = d.name(i)
        try:
            if e.get("name") != uri.rsplit("/", 1)[-1] or head(uri).size != e["bytes"]:
                break
        except NotFoundError:
            break
        kept.append(e)
    return kept


def write_shards(
    bound: BoundPipeline,
    dest: str,
    *,
    format: str | None = None,  # noqa: A002 - the documented keyword
    samples_per_shard: int = 1000,
    max_shard_bytes: int | None = None,
    index: bool = True,
    on_failure: str = "skip",
    resume: bool = True,
    executor: Any = None,
    seed: int | None = None,
    progress: bool | None = None,
) -> WriteReport:
    """Write ``bound``'s samples (``pipe.bind(records)``) as shards at ``dest``.

    ``dest`` holds one brace range that numbers the shards with its digits:
    ``"s3://bkt/train/train-{000000..}.tar"`` gives ``train-000000.tar``,
    ``train-000001.tar``, ... (a closed range ``{0000..0099}`` caps them).
    ``format`` is ``"webdataset"``, ``"parquet"`` or ``"tfrecord"`` (by
    default the extension's). Each slot is a member named by the slot
    (``<key>.<slot>``; an ``encode_image`` slot takes its format's extension
    unless named like one; arrays are ``.npy``), a parquet column, or a
    TFRecord feature; every sample also carries its ``key``.

    A shard holds ``samples_per_shard`` samples (the last fewer), or fewer
    when the next sample would take it past ``max_shard_bytes``. Samples are
    in the epoch's order: the source's, or a keyed shuffle with ``seed=``.
    Rows that fail are skipped (``on_failure="skip"``) and counted in the
    report by reason. ``index=True`` writes ``shardindex.json``
    (``wids-shard-index-v1``) beside webdataset shards. ``resume=True``
    continues an interrupted run from its manifest. ``executor`` runs the
    pipeline elsewhere (``dataio_ray.RayExecutor(...)``): the shards are the
    same. Returns a :class:`WriteReport`; draws a progress bar on a terminal.
    """
    from .pipeline import BoundPipeline, Pipeline
    from .pipeline import batch as batch_stage

    if not isinstance(bound, BoundPipeline):
        raise InvalidArgumentError(f"write_shards takes pipe.bind(records), got {type(bound).__name__}")
    if not isinstance(dest, str):
        dest = os.fspath(dest)
    d = _parse_dest(dest)
    fmt = format or _BY_SUFFIX.get(d.suffix.lower(), "webdataset")
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {sorted(FORMATS)}, got {fmt!r}")
    if d.suffix and d.suffix.lower() in _BY_SUFFIX and _BY_SUFFIX[d.suffix.lower()] != fmt:
        raise InvalidArgumentError(f"dest ends with {d.suffix!r}, which is not the extension of format={fmt!r}")
    if not (isinstance(samples_per_shard, int) and samples_per_shard >= 1):
        raise InvalidArgumentError(f"samples_per_shard must be a positive integer, got {samples_per_shard!r}")
    if max_shard_bytes is not None and not (isinstance(max_shard_bytes, int) and max_shard_bytes > 0):
        raise InvalidArgumentError(f"max_shard_bytes must be a positive integer or None, got {max_shard_bytes!r}")
    if on_failure not in ("skip", "raise"):
        raise InvalidArgumentError(f"on_failure must be 'skip' or 'raise', got {on_failure!r}")
    pipe = bound.pipeline
    if pipe.shape.kind != "batch" or pipe.batch_maps or any(t.name != "pad_to_longest" for t in pipe.batch_transforms):
        raise InvalidArgumentError(
            "write_shards writes samples: the pipeline's shape stage must be batch() (its size sets how many samples "
            "move through the runtime together), without batch maps or batch transforms"
        )
    # The same plan with drop_last off: every sample is written.
    sink = Pipeline(*pipe.record_maps, *pipe.slots, batch_stage(int(pipe.shape.size or 64)))
    slots = _slots(sink)
    encode = _WRITERS[fmt]
    start = time.perf_counter()

    # Skipped rows come through log_errors, in delivery order, also those of
    # batches not delivered because every row failed.
    skipped: list[RowError] = []
    loader = sink.bind(bound.records).run(
        "numpy", on_failure=on_failure, seed=seed, executor=executor, order="submit", log_errors=skipped.append
    )
    manifest_uri = d.beside(f"{d.stem}{d.suffix}.manifest.json")
    fp = _fingerprint(bound, loader, fmt, dest, samples_per_shard, max_shard_bytes, seed)
    entries: list[dict[str, Any]] = []
    old = _read_manifest(manifest_uri) if resume else None
    if old is not None:
        if old.get("fingerprint") != fp:
            changed = sorted(k for k in fp if old.get("fingerprint", {}).get(k) != fp[k])
            raise InvalidArgumentError(
                f"{dest}: an earlier run wrote these shards with other {', '.join(changed)} (see {manifest_uri}); "
                "rerun it as it was, or pass resume=False to write them again"
            )
        entries = _verified(d, list(old.get("shards", [])))
    kept = len(entries)
    skip_keys: set[str] = set()
    counted: set[str] = set()  # failed rows of the batch a resume restarts at: counted before
    if entries:
        last = entries[-1]
        state = loader.state_dict()
        state["position"] = int(last["end"])
        loader.load_state_dict(state)
        skip_keys = set(last.get("end_keys", []))
        counted = set(last.get("end_failed", []))
        if old is not None and old.get("complete") and kept == len(old.get("shards", [])):
            loader.close()
            return _finish(d, fmt, entries, kept, index, WriteReport(dest, [], 0, 0, 0.0), start, manifest_uri, fp, done=True)

    total = len(bound.records) if hasattr(bound.records, "__len__") else None  # type: ignore[arg-type]
    report = WriteReport(dest, [], 0, 0, 0.0)
    failed: Counter[str] = Counter()  # since the last shard closed
    end_failed: list[str] = []  # keys of the current batch's failed rows
    rows: list[Row] = []
    nbytes = 0
    batch_start = int(loader.state_dict()["position"])
    pending: list[tuple[dict[str, Any], Future[int]]] = []
    pool = ThreadPoolExecutor(_UPLOADS, thread_name_prefix="dataio-write")

    def commit(block: bool) -> None:
        # Record finished uploads in shard order: the manifest lists a prefix.
        while pending and (block or pending[0][1].done()):
            entry, fut = pending.pop(0)
            entry["bytes"] = fut.result()
            entries.append(entry)
            write(manifest_uri, json.dumps({"__kind__": _MANIFEST_KIND, "fingerprint": fp, "shards": entries}).encode())

    def close_shard(end_keys: list[str]) -> None:
        nonlocal rows, nbytes
        i = len(entries) + len(pending)
        uri = d.name(i)
        data = encode(rows, slots)
        entry = {
            "name": uri.rsplit("/", 1)[-1],
            "samples": len(rows),
            "end": batch_start,
            "end_keys": end_keys,
            "end_failed": list(end_failed) if end_keys else [],
            "failed": dict(failed),
        }
        failed.clear()
        pending.append((entry, pool.submit(_put, uri, data)))
        rows, nbytes = [], 0
        while len(pending) >= _UPLOADS:
            pending[0][1].result()
            commit(block=False)

    def take_errors() -> None:
        for e in skipped:
            if e.key in counted:
                continue
            failed[e.cause_kind or "error"] += 1
            if len(report.errors) < 100:
                report.errors.append(e)
        skipped.clear()

    bar = Progress(total, label=f"writing {d.stem}", unit="samples", enabled=progress)
    bar_at = batch_start
    if kept:
        bar.update(sum(int(e["samples"]) for e in entries))
    # Skipped rows are counted in the report; the loader's warning about a batch
    # whose every row failed says nothing more here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="dataio: a batch was not delivered because every row failed")
        try:
            for b in loader:
                batch_start = int(loader._position) - len(b.keys) - len(b.errors)
                take_errors()
                counted = set()
                end_failed = [str(e.key) for e in b.errors]
                keys_here: list[str] = []
                for j, key in enumerate(b.keys):
                    if skip_keys:
                        if key in skip_keys:
                            keys_here.append(key)
                            continue
                    values = {s.name: _value(s, b[s.name][j]) for s in slots}
                    row_bytes = sum(_size(v) for v in values.values() if v is not None) + 512 * (len(slots) + 1)
                    if rows and max_shard_bytes is not None and nbytes + row_bytes > max_shard_bytes:
                        close_shard(list(keys_here))
                    rows.append((key, values))
                    keys_here.append(key)
                    nbytes += row_bytes
                    if len(rows) >= samples_per_shard:
                        close_shard(list(keys_here))
                skip_keys = set()
                bar.update(int(loader._position) - bar_at, extra=f"{len(entries) + len(pending)} shards")
                bar_at = int(loader._position)
                commit(block=False)
            take_errors()
            if rows:
                batch_start = int(loader._position)
                close_shard([])
            commit(block=True)
            if failed and entries:
                # Rows failed after the last shard closed: counted with it.
                entries[-1]["failed"] = dict(Counter(entries[-1]["failed"]) + failed)
                failed.clear()
        finally:
            pool.shutdown(wait=True)
            loader.close()
            bar.close()
    report.failed = dict(failed)  # rows that failed where no shard was written
    return _finish(d, fmt, entries, kept, index, report, start, manifest_uri, fp, done=True)


#: Shards from this size go up as a streaming multipart upload (parts in
#: parallel on object stores, committed at once: still one atomic object).
_MULTIPART_FROM = 64 << 20


def _put(uri: str, data: bytes) -> int:
    if len(data) < _MULTIPART_FROM:
        write(uri, data)
    else:
        view = memoryview(data)
        with writer(uri) as w:
            w.write_chunks(view[i : i + (8 << 20)] for i in range(0, len(data), 8 << 20))
    return len(data)


def _finish(d: _Dest, fmt: str, entries: list[dict[str, Any]], kept: int, index: bool, report: WriteReport,
            start: float, manifest_uri: str, fp: dict[str, Any], *, done: bool) -> WriteReport:
    report.shards = [d.name(i) for i in range(len(entries))]
    report.kept = kept
    report.bytes = sum(int(e["bytes"]) for e in entries[kept:])
    report.samples = sum(int(e["samples"]) for e in entries[kept:])
    total: Counter[str] = Counter(report.failed)
    for e in entries:
        total.update(e.get("failed", {}))
    report.failed = dict(total)
    if index and fmt == "webdataset":
        report.index = d.beside(SHARD_INDEX_NAME)
        doc = shard_index_doc(
            report.index, report.shards, [int(e["samples"]) for e in entries], [int(e["bytes"]) for e in entries],
            name=d.stem,
        )
        write(report.index, json.dumps(doc, indent=1).encode())
    write(manifest_uri, json.dumps({"__kind__": _MANIFEST_KIND, "fingerprint": fp, "shards": entries, "complete": done}).encode())
    report.seconds = time.perf_counter() - start
    return report

