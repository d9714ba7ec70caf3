"""Per-worker statistics of a Ray epoch: which worker is slowest, and why.

``loader.stats()["workers"]`` has one row per worker: the engine counters of
the batches it finished this epoch (``records_done``, ``fetch_seconds``,
``decode_seconds``, ``source_seconds``, ``bytes_read``, ...) plus what the
trainer measured: ``busy_seconds`` (wall time inside its calls),
``transfer_seconds`` (the trainer fetching its results), ``batches``,
``batches_lost`` and where it runs. :func:`describe_workers` reads those
rows; its result is ``loader.stats()["slowest_worker"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["WORKER_COUNTERS", "describe_workers"]

# The counters every worker row has (zero until the worker finishes a batch).
WORKER_COUNTERS = (
    "batches",
    "calls",
    "batches_lost",
    "busy_seconds",
    "transfer_seconds",
    "records_done",
    "records_failed",
    "bytes_read",
    "fetch_seconds",
    "decode_seconds",
    "source_seconds",
)

# A worker busy less than this share of the epoch is not what limits it: it
# waited for the trainer to hand it batches (the window was full).
BUSY = 0.5


def _f(row: Mapping[str, Any], key: str) -> float:
    v = row.get(key, 0)
    return float(v) if isinstance(v, (int, float)) else 0.0


def waiting_on(row: Mapping[str, Any]) -> tuple[str, str]:
    """What one worker spends its time on: ``("trainer", ...)`` when it is
    mostly idle (the window is full, so the consumer sets the pace), else its
    largest stage: ``"fetch"`` (reading the records' bytes: the store),
    ``"decode"`` (decoding and transforming: its CPUs), ``"source"`` (record
    maps and ``context=`` in Python), or ``"transfer"`` when fetching its
    results to the trainer takes longer than computing them."""
    elapsed = max(_f(row, "elapsed_seconds"), 1e-9)
    busy = _f(row, "busy_seconds")
    share = busy / elapsed
    if share < BUSY:
        return "trainer", f"busy {share:.0%} of the epoch: it waited for batches (the window was full, the consumer sets the pace)"
    stages = {"fetch": _f(row, "fetch_seconds"), "decode": _f(row, "decode_seconds"), "source": _f(row, "source_seconds")}
    transfer = _f(row, "transfer_seconds")
    stage = max(stages, key=lambda k: stages[k])
    if transfer > busy:
        return "transfer", f"the trainer spent {transfer:.2f} s fetching its results against {busy:.2f} s of work"
    total = max(sum(stages.values()), 1e-9)
    what = {"fetch": "reading records (the store)", "decode": "decoding and transforming (its CPUs)", "source": "record maps and context= (Python)"}[stage]
    return stage, f"{stages[stage] / total:.0%} of its stage time {what}"


def describe_workers(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The slowest worker among those that finished a record this epoch —
    the most busy seconds per record — with ``waiting_on`` and a readable
    ``summary``; ``None`` before any worker finished one."""
    working = [r for r in rows if _f(r, "records_done") > 0]
    if not working:
        return None
    slowest = max(working, key=lambda r: _f(r, "busy_seconds") / _f(r, "records_done"))
    per_record_ms = 1e3 * _f(slowest, "busy_seconds") / _f(slowest, "records_done")
    fastest_ms = min(1e3 * _f(r, "busy_seconds") / _f(r, "records_done") for r in working)
    stage, why = waiting_on(slowest)
    where = f" on {slowest.get('node_ip')}" if slowest.get("node_ip") else ""
    summary = (
        f"slowest worker: {slowest['name']}{where}, {per_record_ms:.2f} ms per record "
        f"(fastest {fastest_ms:.2f} ms); waiting on {stage}: {why}"
    )
    return {"name": slowest["name"], "per_record_ms": per_record_ms, "waiting_on": stage, "detail": why, "summary": summary}
