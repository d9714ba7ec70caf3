"""Executors: who runs a bound pipeline's batches.

The contract an executor implements (``start(job) -> EpochRun``, the
planned and finished batches, the resume position) lives in
:mod:`dataio.contract`; this module re-exports its names and holds the two
executions the core offers.

The default executor runs both steps of an epoch, planning and execution, in
this process on the native pools (:class:`LocalExecutor`). An executor plugin
(``dataio-ray``) plans here (``EpochJob.plan()``) and executes on other
machines with :func:`run_planned`: it registers a factory through the
``dataio_register_executors`` hook and users pick it with
``run(executor="ray")`` or ``run(executor=RayExecutor(...))``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from . import _native
from .contract import EpochJob, EpochRun, Executor, FinishedBatch, PlannedBatch, TaggedArray
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .pipeline import Pipeline

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


def _plugin_ops(pipeline: Pipeline) -> Callable[..., Any] | None:
    """The Python side of the plan's plugin ops, with every plugin loaded
    first: a plugin's native ops reach the engine when plugins load, also in
    a fresh process (a Ray worker) that only unpickled the pipeline."""
    if not pipeline.to_json()["external_ops"]:
        return None
    from ._opcall import call_plugin_op
    from ._plugins import host

    host.manager()
    return call_plugin_op


class LocalExecutor:
    """Plans and executes in this process, on the native pools (the default)."""

    def start(self, job: EpochJob) -> EpochRun:
        return _native.NativeLoader(
            job.pipeline.compiled(),
            job.records,
            sized=job.sized,
            prepare=job.pipeline.record_map_fn(),
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
            hosts=job.shard.get("hosts", 1),
            canonical_hosts=job.shard.get("canonical_hosts", 1),
            partition_offsets=list(job.partition_offsets),
            prefetch=job.prefetch,
            metas=job.object_metas,
            skip_ends=list(job.skip_ends),
        )

    def __repr__(self) -> str:
        return "LocalExecutor()"


def _numpy(t: Any) -> Any:
    import numpy as np

    if t.dtype in ("float8_e4m3fn", "float8_e5m2", "bfloat16"):
        raw = np.frombuffer(t, dtype=np.uint16 if t.dtype == "bfloat16" else np.uint8)
        return TaggedArray(raw.reshape(t.shape), t.dtype)
    return np.from_dlpack(t)


def run_planned(
    pipeline: Pipeline,
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
        prepare=pipeline.record_map_fn(),
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


def resolve_executor(executor: str | Executor | None) -> Executor:
    """``None``/``"local"`` → :class:`LocalExecutor`; a name → the factory a
    plugin registered under it (``dataio_register_executors``); an object
    with ``start(job)`` → itself."""
    if executor is None or executor == "local":
        return LocalExecutor()
    if isinstance(executor, str):
        from ._plugins import host
        from .plugins import install_hint

        factory = host.executor(executor)
        if factory is None:
            hint = "; install dataio-ray with " + install_hint("dataio-ray") if executor == "ray" else ""
            raise InvalidArgumentError(f"no executor named {executor!r} is registered by an installed plugin{hint}")
        return factory()
    if not callable(getattr(executor, "start", None)):
        raise InvalidArgumentError(f"executor must be a name or an object with start(job), got {executor!r}")
    return executor
