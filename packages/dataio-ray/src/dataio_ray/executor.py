"""``RayExecutor``: a loader's batches executed by Ray actors.

The trainer plans (``EpochJob.plan()``: which records form each batch, in
submit order; nothing is read or decoded), hands planned batches to worker
actors, and reassembles what comes back. Everything that decides what a batch
contains lives in the dataio core and is keyed by (seed, epoch, record index,
op), so this module only schedules:

* **Dispatch.** Batches go out one call per ``batches_per_task`` planned
  batches (records in chunks, never a call per record; by default about
  :data:`SAMPLES_PER_TASK` samples a call, so that light pipelines do not
  spend the trainer's CPU on Ray calls), to the ready worker
  with the fewest calls in flight. A worker that finishes takes the next
  batch: the cluster balances itself and a slow worker gets less.
* **Window.** At most ``window`` planned batches are between planning and
  delivery (in flight, finished, or waiting for a worker), counted from the
  oldest one not yet delivered. The window is the back-pressure: Ray's object
  store never holds more than that many finished batches for this loader.
* **Reassembly.** Finished batches come back as ``FinishedBatch`` objects
  whose arrays live in the object store; on the trainer's node they are read
  in place (numpy over shared memory), so torch gets them without a copy.
  Submit order delivers the oldest planned batch first; completion order
  delivers whatever is finished. ``position`` is the ``end_position`` of the
  last batch of the contiguous delivered prefix, so a checkpoint never skips
  a batch that a later one overtook.
* **Recovery.** A call that fails because its worker died, its node went
  away, or its result was lost puts its batches back at the front of the
  queue (they are computed again, never skipped), up to ``max_batch_retries``
  times per batch; the dead worker is replaced, up to
  ``max_worker_restarts`` times per executor. With no worker able to run,
  the epoch ends in :class:`~dataio_ray.errors.WorkersLostError` once
  ``worker_start_timeout`` has passed: never a hang.
* **Release.** Closing the epoch mid-way (``loader.close()``, leaving the
  loop) kills the workers; at the end of an epoch they stay for the next one
  until :meth:`RayExecutor.close` or the executor is garbage collected.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any, Self, cast

from dataio.contract import EpochJob, FinishedBatch
from dataio.errors import DataioError, InvalidArgumentError

from .errors import RayExecutorError, WorkersLostError
from .stats import WORKER_COUNTERS, describe_workers
from .window import BatchWindow, RetriesSpent

__all__ = ["RayExecutor"]

logger = logging.getLogger("dataio.ray")

#: Samples per actor call the default ``batches_per_task`` aims at (at most
#: MAX_DEFAULT_BATCHES_PER_TASK batches): every call costs the trainer CPU
#: (submit, pickling, the result's bookkeeping) whatever its size, which a
#: light pipeline notices (benchmarks/ray_scale.py --light: trainer CPU per
#: sample 0.20x a local run's with one batch of 32 per call, 0.08-0.11x with four).
SAMPLES_PER_TASK = 128
MAX_DEFAULT_BATCHES_PER_TASK = 8

# How long one wait for results lasts before the bookkeeping (deadlines of
# starting workers, task timeouts) runs again. Results wake the wait at once.
POLL_SECONDS = 0.5


def _counters() -> dict[str, float]:
    """Seconds and counts by name, missing ones 0 (typeshed types a Counter's values as int)."""
    return cast("dict[str, float]", collections.Counter())


def _positive(name: str, value: Any, *, allow_none: bool = False, real: bool = False) -> Any:
    if value is None and allow_none:
        return None
    kinds = (int, float) if real else (int,)
    if not isinstance(value, kinds) or isinstance(value, bool) or value <= 0:
        raise InvalidArgumentError(f"{name} must be a positive {'number' if real else 'integer'}, got {value!r}")
    return value


@dataclass
class _Worker:
    """One actor, as the trainer sees it."""

    index: int  # stable name: worker-<index>
    handle: Any
    ready_ref: Any  # answers when the actor is up (its info())
    started: float
    state: str = "starting"  # "starting" → "ready" → "dead"
    info: dict[str, Any] = field(default_factory=dict)
    ended: str = ""  # why it is dead

    @property
    def name(self) -> str:
        return f"worker-{self.index}"

    def describe(self) -> str:
        where = f" on node {self.info.get('node_ip', '?')} (pid {self.info['pid']})" if self.info else ""
        return f"{self.name}{where}: {self.state}" + (f" ({self.ended})" if self.ended else "")


@dataclass
class _Call:
    """One call in flight: which worker, which batches, when it was sent."""

    worker: _Worker
    seqs: list[int]
    sent: float
    alone: bool = False  # a retry: the worker takes no other call meanwhile


class RayExecutor:
    """Executes a loader's batches on Ray actors::

        loader = pipe.bind(records).run("torch", seed=0, executor=RayExecutor(num_workers=8))

    The loader is the same ``dataio.Loader`` (order, on_failure, shard, seed,
    checkpoints, epochs, stats); its batches are bit for bit those of a local
    run, whatever the number of workers.

    * ``num_workers`` — actors, each reserving ``num_cpus_per_worker`` CPUs
      (its engine's CPU pool gets as many threads); spread over the nodes.
    * ``address`` — the cluster to connect to when Ray is not initialized
      yet (``None``: ``RAY_ADDRESS`` or a running local cluster, else a new
      local one; ``"auto"``, ``"ray://..."``, ``"local"`` as for ``ray.init``).
      When Ray is already initialized, that connection is used.
    * ``window`` — planned batches between planning and delivery (default:
      two per worker plus the loader's prefetch): the most this loader keeps
      in the object store.
    * ``batches_per_task`` — planned batches per actor call (default: about
      128 samples a call, e.g. 4 batches of 32, 1 batch of 128 or more).
    * ``inflight_per_worker`` — calls a worker runs at once (default 2, so
      that a worker starts its next batch while the last rows of one finish).
    * ``max_batch_retries`` — times a lost batch is computed again (default 3).
    * ``max_worker_restarts`` — replacements for lost workers over the
      executor's life (default: ``num_workers``).
    * ``worker_start_timeout`` — seconds a new worker may take to start, and
      the longest the epoch waits with no worker running (default 120).
    * ``task_timeout`` — seconds after which a call still running counts as
      lost (its worker is killed and its batches retried); ``None``: no limit.
    * ``resources``, ``scheduling_strategy`` — passed to the actors
      (custom resources to pin workers to CPU nodes; default ``"SPREAD"``).
    * ``init_kwargs`` — extra ``ray.init`` arguments when this executor
      starts or connects Ray itself.
    """

    def __init__(
        self,
        num_workers: int = 2,
        num_cpus_per_worker: float = 1,
        address: str | None = None,
        *,
        window: int | None = None,
        batches_per_task: int | None = None,
        inflight_per_worker: int = 2,
        max_batch_retries: int = 3,
        max_worker_restarts: int | None = None,
        worker_start_timeout: float = 120.0,
        task_timeout: float | None = None,
        resources: dict[str, float] | None = None,
        scheduling_strategy: Any = "SPREAD",
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.num_workers = _positive("num_workers", num_workers)
        self.num_cpus_per_worker = _positive("num_cpus_per_worker", num_cpus_per_worker, real=True)
        self.address = address
        self.window = _positive("window", window, allow_none=True)
        self.batches_per_task = _positive("batches_per_task", batches_per_task, allow_none=True)
        self.inflight_per_worker = _positive("inflight_per_worker", inflight_per_worker)
        if not isinstance(max_batch_retries, int) or isinstance(max_batch_retries, bool) or max_batch_retries < 0:
            raise InvalidArgumentError(f"max_batch_retries must be a non-negative integer, got {max_batch_retries!r}")
        self.max_batch_retries = max_batch_retries
        restarts = num_workers if max_worker_restarts is None else max_worker_restarts
        if not isinstance(restarts, int) or isinstance(restarts, bool) or restarts < 0:
            raise InvalidArgumentError(f"max_worker_restarts must be a non-negative integer, got {max_worker_restarts!r}")
        self.max_worker_restarts = restarts
        self.worker_start_timeout = _positive("worker_start_timeout", worker_start_timeout, real=True)
        self.task_timeout = _positive("task_timeout", task_timeout, allow_none=True, real=True)
        self.resources = dict(resources or {})
        self.scheduling_strategy = scheduling_strategy
        self.init_kwargs = dict(init_kwargs or {})
        self._workers: list[_Worker] = []  # every worker this executor started, dead ones too
        self._next_index = itertools.count()
        self._restarts = 0
        self._actor_cls: Any = None
        self._run: weakref.ref[RayEpochRun] | None = None  # weak: the run refers to this executor
        # Actors die with the executor even if close() is never called.
        self._finalizer = weakref.finalize(self, _kill_all, self._workers)

    # -- cluster and workers ---------------------------------------------

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            kwargs = {"log_to_driver": False, "configure_logging": False, **self.init_kwargs}
            ray.init(address=self.address, **kwargs)
        return ray

    def _spawn(self) -> _Worker:
        self._connect()
        if self._actor_cls is None:
            from .worker import actor_class

            self._actor_cls = actor_class(self.inflight_per_worker)
        threads = max(1, int(self.num_cpus_per_worker))
        options: dict[str, Any] = {"num_cpus": self.num_cpus_per_worker}
        if self.resources:
            options["resources"] = dict(self.resources)
        if self.scheduling_strategy is not None:
            options["scheduling_strategy"] = self.scheduling_strategy
        handle = self._actor_cls.options(**options).remote(threads)
        worker = _Worker(next(self._next_index), handle, handle.info.remote(), time.monotonic())
        self._workers.append(worker)
        return worker

    def _live(self) -> list[_Worker]:
        return [w for w in self._workers if w.state != "dead"]

    def _fill_pool(self) -> None:
        for _ in range(self.num_workers - len(self._live())):
            self._spawn()

    def _replace(self, dead: _Worker) -> None:
        """Starts a replacement for a lost worker while the budget lasts."""
        if self._restarts < self.max_worker_restarts and len(self._live()) < self.num_workers:
            self._restarts += 1
            new = self._spawn()
            logger.warning("%s was lost (%s); starting %s in its place", dead.name, dead.ended, new.name)

    def _kill(self, worker: _Worker, why: str) -> None:
        if worker.state == "dead":
            return
        worker.state, worker.ended = "dead", why
        _kill_actor(worker.handle)

    def warm_up(self, timeout: float | None = None) -> int:
        """Starts the workers now rather than at the first epoch and waits
        until they are up (at most ``timeout`` seconds, default
        ``worker_start_timeout``); returns how many are ready."""
        import ray

        self._connect()
        self._fill_pool()
        starting = {w.ready_ref: w for w in self._workers if w.state == "starting"}
        limit = self.worker_start_timeout if timeout is None else timeout
        if starting:
            done, _ = ray.wait(list(starting), num_returns=len(starting), timeout=limit)
            for ref in done:
                worker = starting[ref]
                try:
                    worker.info = ray.get(ref)
                    worker.state = "ready"
                except ray.exceptions.RayError as e:
                    self._kill(worker, f"could not start: {_short(e)}")
        return sum(1 for w in self._workers if w.state == "ready")

    def workers(self) -> list[str]:
        """A line per worker this executor started: where it runs and its state."""
        return [w.describe() for w in self._workers]

    # -- the executor contract ---------------------------------------------

    def start(self, job: EpochJob) -> RayEpochRun:
        running = self._run() if self._run is not None else None
        if running is not None and not running.closed:
            raise InvalidArgumentError("this RayExecutor is running another epoch; give each loader its own executor")
        self._connect()
        self._fill_pool()
        run = RayEpochRun(self, job)
        self._run = weakref.ref(run)
        return run

    def close(self) -> None:
        """Stops the running epoch, if any, and kills every worker."""
        running = self._run() if self._run is not None else None
        if running is not None:
            running.close()
        _kill_all(self._workers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        live = len(self._live())
        return f"RayExecutor(num_workers={self.num_workers}, num_cpus_per_worker={self.num_cpus_per_worker}, live={live})"


def _kill_actor(handle: Any) -> None:
    import ray

    # Nothing to do when the actor is gone already or Ray is shutting down
    # (at interpreter exit the finalizer may run after ray.shutdown()).
    with contextlib.suppress(Exception):
        ray.kill(handle, no_restart=True)


def _kill_all(workers: list[_Worker]) -> None:
    for w in workers:
        if w.state != "dead":
            w.state, w.ended = "dead", "released"
            _kill_actor(w.handle)


class RayEpochRun:
    """One epoch on the cluster (``dataio.contract.EpochRun``). Driven by
    the loader's ``next_batch()`` calls: each tops up the window, sends
    batches to free workers, and waits (GIL released, inside ``ray.wait``)
    until the batch it may deliver is back. Which batches are where, and the
    position, is the :class:`~dataio_ray.window.BatchWindow`'s business;
    this class talks to Ray."""

    def __init__(self, executor: RayExecutor, job: EpochJob) -> None:
        import ray

        self._ray = ray
        self._ex = executor
        self._job = job
        self._batches_per_task = executor.batches_per_task or _default_batches_per_task(job)
        in_flight = executor.num_workers * executor.inflight_per_worker * self._batches_per_task
        size = executor.window or (in_flight + max(0, job.prefetch))
        self._config_id = uuid.uuid4().hex
        from .worker import EpochConfig

        self._config = ray.put(EpochConfig(job.pipeline, job.run_options()))
        self._window = BatchWindow(iter(job.plan()), size=size, start=job.start, completion=job.order == "completion")
        self._calls: dict[Any, _Call] = {}  # ObjectRef → call
        self._no_worker_since: float | None = None
        self._t0 = time.monotonic()
        self._totals = _counters()
        self._per_worker: dict[int, dict[str, float]] = {}
        self._retried = 0
        # stats() may be called from another thread (a progress display)
        # while next_batch() works; the lock is let go while waiting on Ray.
        self._lock = threading.Lock()
        self.closed = False

    # -- EpochRun -------------------------------------------------------------

    @property
    def position(self) -> int:
        return self._window.position

    @property
    def ahead_ends(self) -> list[int]:
        return self._window.ahead_ends

    def next_batch(self) -> FinishedBatch | None:
        with self._lock:
            while not self.closed:
                self._window.top_up()
                self._dispatch()
                item = self._window.take_deliverable()
                if item is not None:
                    return self._deliver(item)
                if self._window.done:
                    return None
                self._wait()
            return None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return self._stats()

    def _stats(self) -> dict[str, Any]:
        in_flight = [s for c in self._calls.values() for s in c.seqs]
        out: dict[str, Any] = dict(self._totals)  # the engine counters, summed over workers
        window = self._window
        out.update(
            records_in_flight=window.rows(in_flight),
            records_admitted=int(self._totals.get("records_done", 0) + self._totals.get("records_failed", 0)) + window.rows(in_flight),
            batches_in_window=window.undelivered - window.ready,
            batches_ready=window.ready,
            batches_delivered=window.delivered,
            elapsed_seconds=time.monotonic() - self._t0,
            window=window.size,
            batches_retried=self._retried,
            # The CPU threads that execute: the workers' pools, not the trainer's.
            cpu_threads=sum(max(1, int(self._ex.num_cpus_per_worker)) for w in self._ex._workers if w.state == "ready"),
        )
        out["workers"] = self._worker_rows()
        out["slowest_worker"] = describe_workers(out["workers"])
        return out

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True  # a next_batch() waiting in another thread ends
        with self._lock:
            self._release()

    def _release(self) -> None:
        self._calls.clear()
        unfinished = self._window.close()
        if unfinished:
            # Mid-epoch: the workers may be busy with batches nobody wants now.
            _kill_all(self._ex._workers)

    # -- dispatch -------------------------------------------------------------

    def _free_workers(self, alone: bool = False) -> list[_Worker]:
        """Ready workers with room for a call, least busy first; ``alone``:
        only idle ones. A worker running a retried batch takes nothing else."""
        busy = collections.Counter(c.worker.index for c in self._calls.values())
        isolated = {c.worker.index for c in self._calls.values() if c.alone}
        limit = 1 if alone else self._ex.inflight_per_worker
        free = [w for w in self._ex._workers if w.state == "ready" and w.index not in isolated and busy[w.index] < limit]
        return sorted(free, key=lambda w: busy[w.index])

    def _dispatch(self) -> None:
        window, max_retries = self._window, self._ex.max_batch_retries
        while window.queued:
            # A batch lost before runs alone on an idle worker: when a worker
            # dies, every batch it held is lost, and only one of them may be
            # what killed it. Alone, the others come through on their retry
            # and only a batch that kills every worker spends its budget.
            retry = window.retry_next
            free = self._free_workers(alone=retry)
            if not free:
                return
            worker = free[0]
            try:
                seqs = window.take(self._batches_per_task, max_retries)
            except RetriesSpent as e:
                raise WorkersLostError(
                    f"batch {e.seq} was lost {e.lost} times (max_batch_retries={max_retries}); "
                    f"workers: {'; '.join(self._ex.workers())}",
                    batch=e.seq,
                    attempts=e.lost,
                    workers=self._ex.workers(),
                ) from None
            ref = worker.handle.run.remote(self._config_id, [self._config], window.batches(seqs))
            self._calls[ref] = _Call(worker, seqs, time.monotonic(), alone=retry)

    # -- results --------------------------------------------------------------

    def _deliver(self, item: Any) -> FinishedBatch:
        from .worker import FailedBatch

        if isinstance(item, FailedBatch):
            raise item.error
        self._window.deliver(item.seq)
        return item

    def _wait(self) -> None:
        ray = self._ray
        starting = {w.ready_ref: w for w in self._ex._workers if w.state == "starting"}
        refs = list(self._calls) + list(starting)
        self._check_workers_left()
        self._lock.release()
        try:
            if refs:
                done, _ = ray.wait(refs, num_returns=1, timeout=POLL_SECONDS)
                if done:
                    done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            else:
                done = []
                time.sleep(POLL_SECONDS)  # nothing to wait on: only the deadline check can move
        finally:
            self._lock.acquire()
        if self.closed:
            return
        if refs:
            for ref in done:
                if ref in starting:
                    self._worker_started(starting[ref], ref)
                else:
                    self._call_done(ref)
        self._check_timeouts()

    def _worker_started(self, worker: _Worker, ref: Any) -> None:
        try:
            worker.info = self._ray.get(ref)
            worker.state = "ready"
        except self._ray.exceptions.RayError as e:
            self._lose_worker(worker, f"could not start: {_short(e)}")

    def _call_done(self, ref: Any) -> None:
        from .worker import CallResult

        call = self._calls.pop(ref, None)
        if call is None:
            return  # its worker was declared lost while handling an earlier result
        t0 = time.perf_counter()
        try:
            result: CallResult = self._ray.get(ref, timeout=max(30.0, self._ex.worker_start_timeout))
        except self._ray.exceptions.RayTaskError as e:
            # The worker's own code raised (not a row: rows come back as
            # FailedBatch). Deterministic, so not retried: raise the cause.
            cause = e.cause if isinstance(getattr(e, "cause", None), BaseException) else None
            if isinstance(cause, DataioError):
                raise cause from None
            raise RayExecutorError(f"{call.worker.name} failed executing batches {call.seqs}: {_short(e)}") from e
        except self._ray.exceptions.RayError as e:
            self._requeue(call)
            if isinstance(e, self._ray.exceptions.RayActorError) or not self._alive(call.worker):
                self._lose_worker(call.worker, _short(e))
            return
        transfer = time.perf_counter() - t0
        row = self._worker_row(call.worker)
        row["busy_seconds"] += result.busy_seconds
        row["transfer_seconds"] += transfer
        row["calls"] += 1
        for item in result.batches:
            if not self._window.arrived(item):
                continue  # a duplicate from a retried call
            for k, v in (getattr(item, "stats", None) or {}).items():
                if isinstance(v, (int, float)):
                    self._totals[k] += v
                    row[k] += v
            if isinstance(item, FinishedBatch):
                row["batches"] += 1
        # Batches of the call that did not come back (after a failed row) are
        # never delivered: the epoch ends at the failed one.

    def _alive(self, worker: _Worker) -> bool:
        if worker.state == "dead":
            return False
        try:
            self._ray.get(worker.handle.info.remote(), timeout=10)
            return True
        except self._ray.exceptions.RayError:
            return False

    def _requeue(self, call: _Call) -> None:
        lost = self._window.requeue(call.seqs)
        if lost:
            self._retried += lost
            self._worker_row(call.worker)["batches_lost"] += lost

    def _lose_worker(self, worker: _Worker, why: str) -> None:
        if worker.state == "dead":
            return
        self._ex._kill(worker, why)
        for ref, call in list(self._calls.items()):
            if call.worker is worker:
                del self._calls[ref]
                self._requeue(call)
        self._ex._replace(worker)

    def _check_timeouts(self) -> None:
        limit = self._ex.task_timeout
        if limit is None:
            return
        now = time.monotonic()
        for call in list(self._calls.values()):
            if now - call.sent > limit:
                self._lose_worker(call.worker, f"a call ran past task_timeout={limit:g}s")

    def _check_workers_left(self) -> None:
        """No worker ready: wait for starting ones up to worker_start_timeout,
        then end the epoch with a typed error instead of waiting forever."""
        if any(w.state == "ready" for w in self._ex._workers):
            self._no_worker_since = None
            return
        now = time.monotonic()
        if self._no_worker_since is None:
            self._no_worker_since = now
        starting = [w for w in self._ex._workers if w.state == "starting"]
        waited = now - self._no_worker_since
        if starting and waited < self._ex.worker_start_timeout:
            return
        lines = self._ex.workers()
        why = (
            f"no worker started within worker_start_timeout={self._ex.worker_start_timeout:g}s "
            f"({self._free_cpus()}; each worker needs {self._ex.num_cpus_per_worker:g}"
            + (f" and {self._ex.resources}" if self._ex.resources else "")
            + ")"
            if starting
            else f"every worker is gone and the restart budget (max_worker_restarts={self._ex.max_worker_restarts}) is spent"
        )
        _kill_all(self._ex._workers)
        raise WorkersLostError(f"the Ray executor has no worker left: {why}; workers: {'; '.join(lines)}", workers=lines)

    def _free_cpus(self) -> str:
        try:
            free = self._ray.available_resources().get("CPU", 0)
            total = self._ray.cluster_resources().get("CPU", 0)
        except self._ray.exceptions.RayError:
            return "the cluster's free CPUs are unknown"
        return f"the cluster has {free:g} of {total:g} CPUs free"

    # -- stats ----------------------------------------------------------------

    def _worker_row(self, worker: _Worker) -> dict[str, float]:
        row = self._per_worker.get(worker.index)
        if row is None:
            row = self._per_worker[worker.index] = _counters()
        return row

    def _worker_rows(self) -> list[dict[str, Any]]:
        elapsed = time.monotonic() - self._t0
        rows = []
        for w in self._ex._workers:
            counters = self._per_worker.get(w.index)
            if counters is None and w.state == "dead":
                continue  # died before this epoch
            counters = counters or _counters()
            row: dict[str, Any] = {
                "name": w.name,
                "state": w.state,
                "node_ip": w.info.get("node_ip"),
                "node_id": w.info.get("node_id"),
                "pid": w.info.get("pid"),
                "ended": w.ended or None,
                "elapsed_seconds": elapsed,
                "calls_in_flight": sum(1 for c in self._calls.values() if c.worker is w),
            }
            row.update({k: 0 for k in WORKER_COUNTERS})
            row.update(counters)
            rows.append(row)
        return rows


def _default_batches_per_task(job: EpochJob) -> int:
    """About SAMPLES_PER_TASK samples a call, for batches of a fixed size;
    one batch a call otherwise (group_by, collate)."""
    shape = job.pipeline.shape
    size = shape.size if shape.kind == "batch" else None
    if not size:
        return 1
    return max(1, min(MAX_DEFAULT_BATCHES_PER_TASK, -(-SAMPLES_PER_TASK // size)))


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]
