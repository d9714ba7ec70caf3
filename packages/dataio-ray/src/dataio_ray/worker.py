"""The Ray actor that executes planned batches: one per worker process.

A worker holds no schedule and no random state of its own. It receives
planned batches (which records, with their record indices and positions)
and runs the native engine on them through :func:`dataio.executor.run_planned`;
every random draw is keyed by (seed, epoch, record index, op), so a batch
comes out the same on any worker, and the trainer can hand any batch to any
worker, or to another one when the first is lost.

The epoch's settings (the pipeline with its Python maps, seed, epoch,
``on_failure``, ``context=``) travel once per epoch through Ray's object
store; each call names them by an id and the worker keeps the unpickled
pipeline for the epoch, so a call carries only its batches' records.

This module imports ``ray`` (it defines the actor class); the plugin's entry
point does not import it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray

from dataio.contract import FinishedBatch, PlannedBatch
from dataio.errors import RowError
from dataio.executor import run_planned

if TYPE_CHECKING:
    from dataio.pipeline import Pipeline


@dataclass(frozen=True)
class EpochConfig:
    """What every call of an epoch shares: put into the object store once."""

    pipeline: Pipeline
    options: dict[str, Any]  # run_planned's keyword arguments (EpochJob.run_options())


@dataclass
class FailedBatch:
    """A planned batch whose row failed with ``on_failure="raise"``: the
    trainer raises ``error`` when this batch's turn comes, as a local loader
    raises at the batch holding the bad row."""

    seq: int
    error: RowError


@dataclass
class CallResult:
    """What one call returns: its batches in order (finished or failed) and
    the worker's wall time for the call (from the start of the work to its
    end, queueing at the actor excluded)."""

    batches: list[FinishedBatch | FailedBatch]
    busy_seconds: float


class BatchWorker:
    """The actor body. Decorated with ``ray.remote`` by :func:`actor_class`.

    ``cpu_threads`` sizes the engine's CPU pool to the CPUs Ray reserved for
    this actor: the pool is created on first use in this fresh process, and
    sized by ``DATAIO_CPU_THREADS`` then (the machine's CPU count otherwise,
    which oversubscribes a node shared by several workers)."""

    def __init__(self, cpu_threads: int) -> None:
        os.environ["DATAIO_CPU_THREADS"] = str(max(1, int(cpu_threads)))
        self._configs: dict[str, EpochConfig] = {}
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        """Where this worker runs; answering it also says the actor is up."""
        ctx = ray.get_runtime_context()
        return {"pid": os.getpid(), "node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address()}

    def _config(self, config_id: str, boxed: Sequence[Any]) -> EpochConfig:
        with self._lock:
            config = self._configs.get(config_id)
        if config is None:
            # The reference arrives inside a list so that Ray does not resolve
            # (and unpickle) it for every call; it is fetched once per epoch.
            config = ray.get(boxed[0])
            with self._lock:
                # One epoch at a time per trainer: older settings are dropped.
                self._configs = {config_id: config}
        return config

    def run(self, config_id: str, boxed: Sequence[Any], planned: list[PlannedBatch]) -> CallResult:
        config = self._config(config_id, boxed)
        t0 = time.perf_counter()
        out: list[FinishedBatch | FailedBatch] = []
        try:
            for finished in run_planned(config.pipeline, planned, **config.options):
                _exact_row_counts(finished)
                out.append(finished)
        except RowError as e:
            # on_failure="raise": the engine runs a call's batches at once and
            # may raise before it yielded batches ahead of the bad row's, so
            # the failed batch is the one holding the row, and the good ones
            # before it that are missing are computed again (the error path
            # only; each is the same on any worker).
            failed = _holding(planned, e, default=len(out))
            before = planned[len(out) : failed]
            if before:
                for finished in run_planned(config.pipeline, before, **config.options):
                    _exact_row_counts(finished)
                    out.append(finished)
            out.append(FailedBatch(planned[failed].seq, e))
        return CallResult(out, time.perf_counter() - t0)


def _holding(planned: list[PlannedBatch], e: RowError, *, default: int) -> int:
    """The index in ``planned`` of the batch holding the failed row
    (``default``, the first batch not yielded, when no batch holds it)."""
    if e.index is not None:
        for i, p in enumerate(planned):
            if e.index in p.indices:
                return max(i, default)
    return min(default, len(planned) - 1)


def _exact_row_counts(finished: FinishedBatch) -> None:
    """The engine's counters are read when a batch is handed over, and the
    last rows' increments can land just after: the per-batch deltas of
    ``run_planned`` may miss a few. The rows a batch holds are exact."""
    if finished.stats is not None:
        finished.stats["records_done"] = len(finished.keys)
        finished.stats["records_failed"] = len(finished.row_errors)


def actor_class(max_concurrency: int) -> Any:
    """The remote actor class. Restarts are the trainer's business, not
    Ray's (``max_restarts=0``): a lost worker's batches go to the others at
    once, and a replacement is started under the executor's own budget."""
    # ray's typed overloads of remote() leave out the actor options (max_concurrency)
    return ray.remote(max_restarts=0, max_task_retries=0, max_concurrency=max_concurrency)(BatchWorker)  # type: ignore[call-overload]
