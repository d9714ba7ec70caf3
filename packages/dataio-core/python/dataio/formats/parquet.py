"""Parquet through pyarrow, reading through the IO layer for remote URIs.

``read_parquet`` returns a ``pyarrow.Table``; ``scan_parquet(...).filter(...)
.select(...).collect()`` filters rows — with a ``dataio.cond`` predicate the
filter becomes a pyarrow expression, so row groups whose statistics cannot
match are never read; with a Python callable it runs per row.
``parquet_records`` is a sized record source for pipelines that hands the
loader whole columns per chunk (no Python dict per row).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

from .. import uri as _uri
from ..cond import Pred
from ..errors import CorruptDataError, InvalidArgumentError
from ..io import fetch_into, head

__all__ = ["read_parquet", "scan_parquet", "parquet_records", "DataioFile"]


def _pa() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidArgumentError("parquet support needs pyarrow: pip install 'dataio[parquet]'") from None
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
    import pyarrow.compute as pc

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
    """A sized record source over parquet rows. The loader asks it for whole
    chunks of rows at once (``_dataio_take``), column by column, so no Python
    dict is built per row."""

    def __init__(self, uri: str, columns: Sequence[str] | None = None, key: str | None = None) -> None:
        self.uri = uri
        self.table = read_parquet(uri, columns=columns)
        self.key = key

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, i: int) -> dict[str, Any]:
        row = self.table.slice(i, 1).to_pylist()[0]
        if self.key is not None:
            row.setdefault("key", row.get(self.key))
        return row

    def _dataio_take(self, indices: list[int], fields: list[str]) -> dict[str, list[Any]]:
        import pyarrow as pa

        taken = self.table.take(pa.array(indices, type=pa.int64()))
        out = {f: taken.column(f).to_pylist() for f in fields if f in taken.column_names}
        if self.key is not None and "key" in fields and "key" not in out:
            out["key"] = taken.column(self.key).to_pylist()
        return out

    def __repr__(self) -> str:
        return f"<parquet_records {self.uri!r}: {len(self)} rows>"


def parquet_records(uri: str, columns: Sequence[str] | None = None, key: str | None = None) -> ParquetRecords:
    """Parquet rows as a pipeline's record source (sized: shuffle and shard by index)."""
    return ParquetRecords(uri, columns, key)
