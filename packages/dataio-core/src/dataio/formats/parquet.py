"""Parquet through pyarrow, reading through the IO layer for remote URIs.

``read_parquet`` returns a ``pyarrow.Table``; ``scan_parquet(...).filter(...)
.select(...).collect()`` filters rows — with a ``dataio.cond`` predicate the
filter becomes a pyarrow expression, so row groups whose statistics cannot
match are never read; with a Python callable it runs per row.
``parquet_records`` is a sized record source over one or many files, read by
row group, that hands the loader whole columns per chunk (no Python dict per
row).
"""

from __future__ import annotations

import bisect
import hashlib
import io
import itertools
import json
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import uri as _uri
from ..cond import Pred
from ..errors import CorruptDataError, InvalidArgumentError
from ..io import fetch_into, head
from .shards import DEFAULT_SHUFFLE_SPREAD, DEFAULT_SHUFFLE_WINDOW, cache_root, check_shuffle, expand_shards

__all__ = ["read_parquet", "scan_parquet", "parquet_records", "DataioFile"]


def _pa() -> Any:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise InvalidArgumentError("parquet support needs pyarrow: pip install 'pyarrow>=14'") from None
    return pq


class DataioFile(io.RawIOBase):
    """A seekable, read-only file object over any URI (ranged reads)."""

    def __init__(self, uri: str) -> None:
        super().__init__()
        self.uri = uri
        self.size = head(uri).size
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, b: Any) -> int:
        n = min(len(memoryview(b)), max(0, self.size - self.pos))
        if n == 0:
            return 0
        got = fetch_into(self.uri, b, offset=self.pos, size=n)
        self.pos += got
        return got


def _source(uri: str) -> Any:
    local = _uri.local_path(uri)
    return local if local is not None else DataioFile(uri)


def _wrap(uri: str, fn: Callable[[], Any]) -> Any:
    import pyarrow as pa

    try:
        return fn()
    except (pa.ArrowInvalid, OSError) as e:
        if isinstance(e, (FileNotFoundError, PermissionError)):
            raise
        raise CorruptDataError(f"{uri}: not a readable parquet file: {e}") from None


def _expression(pred: Pred) -> Any:
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    def walk(s: dict[str, Any]) -> Any:
        if "and" in s:
            out = walk(s["and"][0])
            for p in s["and"][1:]:
                out = out & walk(p)
            return out
        if "or" in s:
            out = walk(s["or"][0])
            for p in s["or"][1:]:
                out = out | walk(p)
            return out
        if "not" in s:
            return ~walk(s["not"])
        if "shape" in s:
            raise InvalidArgumentError("parquet filters test columns, not shapes")
        f = pc.field(s["col"])
        cmp, v = s["cmp"], s.get("value")
        return {
            "eq": lambda: f == v,
            "ne": lambda: f != v,
            "lt": lambda: f < v,
            "le": lambda: f <= v,
            "gt": lambda: f > v,
            "ge": lambda: f >= v,
            "is_null": lambda: f.is_null(),
            "is_not_null": lambda: f.is_valid(),
            "is_in": lambda: f.isin(v),
        }[cmp]()

    return walk(pred.to_json())


def read_parquet(uri: str, columns: Sequence[str] | None = None, filter: Pred | None = None) -> Any:  # noqa: A002
    """The file as a ``pyarrow.Table`` (only ``columns``, only rows matching ``filter``)."""
    pq = _pa()
    expr = _expression(filter) if filter is not None else None
    return _wrap(uri, lambda: pq.read_table(_source(uri), columns=list(columns) if columns else None, filters=expr))


class ParquetScan:
    """A lazy scan: ``filter`` and ``select`` compose; ``collect`` reads."""

    def __init__(self, uri: str, columns: tuple[str, ...] | None = None, preds: tuple[Pred, ...] = (), fns: tuple[Callable[[dict], bool], ...] = ()) -> None:
        self.uri, self.columns, self.preds, self.fns = uri, columns, preds, fns

    def filter(self, predicate: Pred | Callable[[dict], bool]) -> ParquetScan:
        if isinstance(predicate, Pred):
            return ParquetScan(self.uri, self.columns, (*self.preds, predicate), self.fns)
        if callable(predicate):
            return ParquetScan(self.uri, self.columns, self.preds, (*self.fns, predicate))
        raise InvalidArgumentError("filter takes a dataio.cond predicate or a callable on row dicts")

    def select(self, *columns: str) -> ParquetScan:
        return ParquetScan(self.uri, tuple(columns), self.preds, self.fns)

    def to_table(self) -> Any:
        pred = None
        for p in self.preds:
            pred = p if pred is None else pred & p
        table = read_parquet(self.uri, columns=None if self.fns else self.columns, filter=pred)
        if self.fns:
            rows = [r for r in table.to_pylist() if all(fn(r) for fn in self.fns)]
            import pyarrow as pa

            table = pa.Table.from_pylist(rows, schema=table.schema)
            if self.columns:
                table = table.select(list(self.columns))
        return table

    def collect(self) -> list[dict[str, Any]]:
        """Matching rows as dicts."""
        return self.to_table().to_pylist()

    def __repr__(self) -> str:
        return f"<scan_parquet {self.uri!r}: {len(self.preds)} predicates, {len(self.fns)} callables>"


def scan_parquet(uri: str) -> ParquetScan:
    return ParquetScan(uri)


class ParquetRecords:
    """A sized record source over the rows of one or many parquet files,
    read lazily by row group (never a whole file): the footers give the row
    counts (kept beside each file's identity, like shard indexes), a bounded
    set of row groups is held at a time, and the loader takes whole chunks
    of rows column by column (``_dataio_take``), so no Python dict is built
    per row. With a seed the order is two-level over row groups (see
    :mod:`dataio.formats.shards`).

    A column of Hugging Face ``Image`` values (structs ``{bytes, path}``)
    hands ``decode_image`` the embedded bytes, or the path resolved against
    the parquet file's folder when no bytes are embedded."""

    def __init__(
        self,
        uris: Any,
        columns: Sequence[str] | None = None,
        key: str | None = None,
        *,
        shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
        shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
        index_dir: Any = None,
        max_open_row_groups: int | None = None,
    ) -> None:
        check_shuffle(shuffle_window, shuffle_spread)
        self.uris = expand_shards(uris)
        self.uri = self.uris[0]
        self.columns = list(columns) if columns else None
        self.key = key
        self.window = shuffle_window
        self.spread = shuffle_spread
        store = Path(index_dir) if index_dir is not None else cache_root() / "index"
        self._groups: list[tuple[int, int]] = []  # (file, row group) per layout unit
        self._counts: list[int] = []
        for f, u in enumerate(self.uris):
            for g, rows in enumerate(_row_groups(u, store)):
                self._groups.append((f, g))
                self._counts.append(rows)
        self._starts = list(itertools.accumulate(self._counts, initial=0))
        self._total = self._starts[-1]
        avg = max(1, self._total // max(1, len(self._counts)))
        self._max_open = max_open_row_groups or max(4, shuffle_spread + 3, -(-shuffle_window * shuffle_spread // avg) + 3)
        self._open: OrderedDict[tuple[int, tuple[str, ...]], Any] = OrderedDict()
        self._files: OrderedDict[int, Any] = OrderedDict()
        self.requests = 0  # row-group reads (each a few ranged requests)

    def __len__(self) -> int:
        return self._total

    def _dataio_layout(self) -> tuple[list[int], int, int]:
        return list(self._counts), self.window, self.spread

    def _dataio_source_stats(self) -> dict[str, Any]:
        return {"parquet_files": len(self.uris), "row_groups": len(self._counts), "row_groups_read": self.requests}

    def _locate(self, i: int) -> tuple[int, int]:
        if not 0 <= i < self._total:
            raise IndexError(f"row {i} is out of range ({self._total} rows)")
        unit = bisect.bisect_right(self._starts, i) - 1
        while self._counts[unit] == 0:
            unit += 1
        return unit, i - self._starts[unit]

    def _file(self, f: int) -> Any:
        pf = self._files.get(f)
        if pf is None:
            uri = self.uris[f]
            pf = _wrap(uri, lambda: _pa().ParquetFile(_source(uri)))
            self._files[f] = pf
            while len(self._files) > self._max_open:
                self._files.popitem(last=False)
        else:
            self._files.move_to_end(f)
        return pf

    def _group(self, unit: int, fields: tuple[str, ...]) -> Any:
        slot = (unit, fields)
        table = self._open.get(slot)
        if table is not None:
            self._open.move_to_end(slot)
            return table
        f, g = self._groups[unit]
        pf = self._file(f)
        names = set(pf.schema_arrow.names)
        wanted = [c for c in fields if c in names and (self.columns is None or c in self.columns or c == self.key)]
        table = _wrap(self.uris[f], lambda: pf.read_row_group(g, columns=wanted))
        self.requests += 1
        self._open[slot] = table
        while len(self._open) > self._max_open:
            self._open.popitem(last=False)
        return table

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += self._total
        unit, row = self._locate(i)
        f, g = self._groups[unit]
        cols = tuple(self.columns) if self.columns else tuple(self._file(f).schema_arrow.names)
        if self.key is not None and self.key not in cols:
            cols = (*cols, self.key)
        out = self._group(unit, cols).slice(row, 1).to_pylist()[0]
        out = {k: _resolve_image(self.uris[f], v) for k, v in out.items()}
        if self.key is not None:
            out.setdefault("key", out.get(self.key))
        return out

    def _dataio_take(self, indices: list[int], fields: list[str]) -> dict[str, list[Any]]:
        import pyarrow as pa

        want = tuple(fields) if self.key is None or self.key in fields else (*fields, self.key)
        located = [self._locate(i) for i in indices]
        out: dict[str, list[Any]] = {}
        # Consecutive rows of one row group are taken together.
        start = 0
        while start < len(located):
            unit = located[start][0]
            end = start
            while end < len(located) and located[end][0] == unit:
                end += 1
            table = self._group(unit, want)
            taken = table.take(pa.array([r for _, r in located[start:end]], type=pa.int64()))
            uri = self.uris[self._groups[unit][0]]
            for name in taken.column_names:
                col = taken.column(name)
                values = col.to_pylist()
                if pa.types.is_struct(col.type):
                    values = [_resolve_image(uri, v) for v in values]
                out.setdefault(name, []).extend(values)
                if name == self.key and "key" in fields and "key" not in taken.column_names:
                    out.setdefault("key", []).extend(values)
            start = end
        return out

    def __repr__(self) -> str:
        return f"<parquet_records: {self._total} rows in {len(self.uris)} files, {len(self._counts)} row groups>"


def _resolve_image(uri: str, v: Any) -> Any:
    """A ``{bytes, path}`` value without bytes gets its path resolved
    against the folder of the parquet file it came from."""
    if isinstance(v, dict) and v.get("bytes") is None and isinstance(v.get("path"), str):
        path = v["path"]
        if "://" not in path and not path.startswith("/"):
            base = uri.rsplit("/", 1)[0] if "/" in uri else "."
            return {"bytes": None, "path": f"{base}/{path}"}
    return v


def _row_groups(uri: str, store: Path) -> list[int]:
    """Rows per row group of ``uri``, from its footer (kept by identity)."""
    meta = head(uri)
    ident = f"size={meta.size};etag={meta.etag};mtime={meta.mtime}"
    name = hashlib.blake2b(f"parquet\0{uri}\0{ident}".encode(), digest_size=16).hexdigest()
    path = store / f"{name}.json"
    try:
        kept = json.loads(path.read_text())
        if kept.get("identity") == ident:
            return [int(n) for n in kept["row_groups"]]
    except (OSError, ValueError, KeyError):
        pass
    md = _wrap(uri, lambda: _pa().ParquetFile(_source(uri)).metadata)
    groups = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
    store.mkdir(mode=0o700, parents=True, exist_ok=True)  # shared with the shard indexes: private
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"uri": uri, "identity": ident, "row_groups": groups}))
    os.replace(tmp, path)
    return groups


def parquet_records(
    uris: Any,
    columns: Sequence[str] | None = None,
    key: str | None = None,
    *,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    index_dir: Any = None,
) -> ParquetRecords:
    """Parquet rows of one or many files (a URI, list, glob or brace range)
    as a sized record source, read by row group (see :class:`ParquetRecords`)."""
    return ParquetRecords(uris, columns, key, shuffle_window=shuffle_window, shuffle_spread=shuffle_spread, index_dir=index_dir)
