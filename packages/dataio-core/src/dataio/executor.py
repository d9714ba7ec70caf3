"""Executors: who runs a bound pipeline's batches.

A loader's epoch is two steps. **Planning** decides which records form each
batch, in submit order: the keyed permutation, shard interleave and resume
point for ``batch()``, the distinct-key groups for ``group_by``/``collate``.
It reads records (only the group key is looked at) but decodes nothing.
**Execution** reads, decodes and transforms the rows of each planned batch
and assembles it. Every random draw is keyed by (seed, epoch, record index,
op) and every batch transform by (seed, epoch, the batch's first position),
so a planned batch executed anywhere — another thread, process or machine —
gives the same output bit for bit.

The default executor runs both steps in this process on the native pools
(:class:`LocalExecutor`). An executor plugin (``dataio-ray``) plans here and
executes on other machines: it registers a factory through the
``dataio_register_executors`` hook and users pick it with
``run(executor="ray")`` or ``run(executor=RayExecutor(...))``.

The contract an executor implements:

* ``start(job: EpochJob) -> EpochRun``, once per epoch;
* ``EpochRun.next_batch()`` returns the next batch (in submit order, or in
  completion order when ``job.order == "completion"``) as a
  :class:`FinishedBatch` (or the native batch), or ``None`` at the end;
* ``EpochRun.position``: the ``end_position`` of the last batch of the
  contiguous prefix of delivered batches (what ``state_dict()`` saves);
* ``EpochRun.stats()``: the engine counters (see ``Loader.stats``), summed
  over whoever executed, optionally with a ``"workers"`` list of per-worker
  dicts; ``EpochRun.close()`` stops all work and releases resources.

Workers execute with :func:`run_planned`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from . import _native
from .errors import InvalidArgumentError, RowError

__all__ = [
    "PlannedBatch",
    "FinishedBatch",
    "EpochJob",
    "EpochRun",
    "Executor",
    "LocalExecutor",
    "run_planned",
    "resolve_executor",
]


@dataclasses.dataclass(frozen=True)
class PlannedBatch:
    """One batch, decided before anything is read.

    ``indices[i]`` is row ``i``'s record index (its place in a sized source,
    or its arrival position in a stream: the key of its random draws),
    ``positions[i]`` its position in this rank's schedule, ``records[i]`` the
    raw record as the source gave it (before record maps).
    ``end_position`` is the resume point after this batch."""

    seq: int
    end_position: int
    indices: list[int]
    positions: list[int]
    records: list[Any]

    def __len__(self) -> int:
        return len(self.indices)

    def as_tuple(self) -> tuple[int, int, list[int], list[int], list[Any]]:
        return (self.seq, self.end_position, self.indices, self.positions, self.records)


@dataclasses.dataclass
class FinishedBatch:
    """A batch executed away from the loader, in a picklable form.

    ``slots`` maps each slot to a numpy array (rows first) or a list of
    arrays / ``None`` (variable shapes, inactive optional slots). It offers
    the same methods as the native batch, so the loader treats both alike.
    ``stats`` is the executing engine's counters for this batch, when known."""

    seq: int
    end_position: int
    keys: list[str]
    indices: list[int]
    slots: dict[str, Any]
    row_errors: list[RowError]
    context: list[Any] | None = None
    stats: dict[str, Any] | None = None

    def take_slots(self) -> dict[str, Any]:
        slots, self.slots = self.slots, {}
        return slots

    def errors(self) -> list[RowError]:
        return list(self.row_errors)

    def contexts(self) -> list[Any]:
        return list(self.context or [])


@dataclasses.dataclass(frozen=True)
class EpochJob:
    """Everything an executor needs to run one epoch of a loader."""

    pipeline: Any  # dataio.Pipeline
    records: Any
    seed: int | None
    epoch: int
    shard: dict[str, Any]
    start: int
    global_offset: int
    concurrency: int
    order: str
    on_failure: str
    context: Callable[[Any], Any] | None
    prefetch: int

    @property
    def sized(self) -> bool:
        from .loader import _is_sequence

        return _is_sequence(self.records)

    def plan(self) -> Iterator[PlannedBatch]:
        """The epoch's batches in submit order, from this job's position on.

        Planning runs the record maps only where the shape stage needs them
        (the ``group_by`` key); raw records are returned either way, and the
        executor runs the maps again where it executes."""
        planner = _native.BatchPlanner(
            self.pipeline.compiled(),
            self.records,
            sized=self.sized,
            prepare=_prepare(self.pipeline),
            seed=self.seed,
            epoch=self.epoch,
            shard_id=self.shard["id"],
            shard_of=self.shard["of"],
            pad=self.shard["pad"],
            start=self.start,
            global_offset=self.global_offset,
        )
        for seq, end, indices, positions, records in planner:
            yield PlannedBatch(seq, end, indices, positions, records)

    def run_options(self) -> dict[str, Any]:
        """The options :func:`run_planned` takes, for shipping to a worker."""
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "on_failure": self.on_failure,
            "concurrency": self.concurrency,
            "context": self.context,
            "prefetch": self.prefetch,
        }


class EpochRun(Protocol):
    """One epoch in progress (see the module docstring)."""

    def next_batch(self) -> Any: ...

    @property
    def position(self) -> int: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Executor(Protocol):
    def start(self, job: EpochJob) -> EpochRun: ...


def _prepare(pipeline: Any) -> Callable[[Any], Any] | None:
    maps = [m.fn for m in pipeline.record_maps]
    if not maps:
        return None

    def prepare(record: Any) -> Any:
        for fn in maps:
            record = fn(record)
        return record

    return prepare


def _plugin_ops(pipeline: Any) -> Callable[..., Any] | None:
    if not pipeline.to_json()["external_ops"]:
        return None
    from ._opcall import call_plugin_op

    return call_plugin_op


class LocalExecutor:
    """Plans and executes in this process, on the native pools (the default)."""

    def start(self, job: EpochJob) -> Any:
        return _native.NativeLoader(
            job.pipeline.compiled(),
            job.records,
            sized=job.sized,
            prepare=_prepare(job.pipeline),
            context=job.context,
            ops=_plugin_ops(job.pipeline),
            concurrency=job.concurrency,
            completion_order=job.order == "completion",
            skip_errors=job.on_failure == "skip",
            seed=job.seed,
            epoch=job.epoch,
            shard_id=job.shard["id"],
            shard_of=job.shard["of"],
            pad=job.shard["pad"],
            start=job.start,
            global_offset=job.global_offset,
            prefetch=job.prefetch,
        )

    def __repr__(self) -> str:
        return "LocalExecutor()"


def _numpy(t: Any) -> Any:
    import numpy as np

    if t.dtype in ("float8_e4m3fn", "float8_e5m2", "bfloat16"):
        raw = np.frombuffer(t, dtype=np.uint16 if t.dtype == "bfloat16" else np.uint8)
        return _Tagged(raw.reshape(t.shape), t.dtype)
    return np.from_dlpack(t)


class _Tagged:
    """A numpy view of a dtype numpy lacks (bfloat16, float8), with its name."""

    __slots__ = ("array", "dtype_name")

    def __init__(self, array: Any, dtype_name: str) -> None:
        self.array = array
        self.dtype_name = dtype_name

    def __reduce__(self) -> Any:
        return (_Tagged, (self.array, self.dtype_name))


def run_planned(
    pipeline: Any,
    planned: Iterable[PlannedBatch],
    *,
    seed: int | None = None,
    epoch: int = 0,
    on_failure: str = "raise",
    concurrency: int = 64,
    context: Callable[[Any], Any] | None = None,
    prefetch: int | None = None,
) -> Iterator[FinishedBatch]:
    """Executes planned batches here and yields them in the same order, each
    as it would come from a local loader over the same records.

    With ``on_failure="raise"`` a failed row raises its :class:`RowError`
    (after the batches before it were yielded)."""
    items = [p.as_tuple() if isinstance(p, PlannedBatch) else tuple(p) for p in planned]
    native = _native.NativeLoader(
        pipeline.compiled(),
        items,
        sized=False,
        planned=True,
        prepare=_prepare(pipeline),
        context=context,
        ops=_plugin_ops(pipeline),
        concurrency=concurrency,
        skip_errors=on_failure == "skip",
        seed=seed,
        epoch=epoch,
        prefetch=prefetch,
    )
    def finished(seq: int, raw: Any, stats: dict[str, Any]) -> FinishedBatch:
        slots = {}
        for name, value in raw.take_slots().items():
            slots[name] = [None if v is None else _numpy(v) for v in value] if isinstance(value, list) else _numpy(value)
        return FinishedBatch(
            seq=seq,
            end_position=raw.end_position,
            keys=list(raw.keys),
            indices=list(raw.indices),
            slots=slots,
            row_errors=raw.errors(),
            context=raw.contexts() if context is not None else None,
            stats=stats,
        )

    # A batch is yielded once the next one (or the end) has come: the last
    # rows of a batch bump the counters just after handing it over, so its
    # share of them is complete only then.
    try:
        before = native.stats()
        pending: tuple[int, Any] | None = None
        for seq, _end, _i, _p, _r in items:
            raw = native.next_batch()
            if raw is None:
                break
            if pending is not None:
                after = native.stats()
                yield finished(*pending, _delta(before, after))
                before = after
            pending = (seq, raw)
        if pending is not None:
            # Every row of every batch is done: the counters are final.
            yield finished(*pending, _delta(before, native.stats()))
    finally:
        native.close()


_COUNTERS = ("records_done", "records_failed", "bytes_read", "fetch_seconds", "decode_seconds", "source_seconds", "batches_built")


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in _COUNTERS}


def resolve_executor(executor: Any) -> Any:
    """``None``/``"local"`` → :class:`LocalExecutor`; a name → the factory a
    plugin registered under it (``dataio_register_executors``); an object
    with ``start(job)`` → itself."""
    if executor is None or executor == "local":
        return LocalExecutor()
    if isinstance(executor, str):
        from ._plugins import host

        factory = host.executor(executor)
        if factory is None:
            hint = " (pip install 'dataio[ray]')" if executor == "ray" else ""
            raise InvalidArgumentError(f"no executor named {executor!r} is registered by an installed plugin{hint}")
        return factory()
    if not callable(getattr(executor, "start", None)):
        raise InvalidArgumentError(f"executor must be a name or an object with start(job), got {executor!r}")
    return executor
