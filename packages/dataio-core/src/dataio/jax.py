"""``run("jax")``: batches of ``jax.Array``, global over a mesh, and the
loader's state in Orbax checkpoints.

The hand-off to JAX is an output adapter on top of the loader, not a part of
the engine: the engine and :class:`~dataio.loader.Loader` make host batches
(numpy views of the engine's buffers) as for ``"numpy"``, and
:class:`JaxLoader` puts them on the devices, on a thread of its own, ahead of
the training step:

* without ``sharding``, each array goes to one device (``devices=``, by
  default JAX's first local device) with ``jax.device_put``; on CPU that is
  the engine's buffer itself (no copy) when JAX can alias it;
* with ``sharding`` (a ``jax.sharding.Sharding`` over the batch axis, e.g.
  ``NamedSharding(mesh, PartitionSpec("data"))``) each batch is the
  **global** batch: ``dataio.batch(n)`` (or ``pack(batch_size=n)``) is the
  global batch size, this process loads only the rows its devices hold
  (a rank of the loader's ``shard``, derived from the sharding: process
  ``jax.process_index()`` of ``jax.process_count()`` on a process-major mesh;
  ``shard=`` overrides it) and ``jax.make_array_from_process_local_data``
  assembles the global array.

JAX is imported only here, only when ``"jax"`` output is asked (and Orbax
only when a checkpoint class is used); without it the error names the extra,
``pip install 'dataio[jax]'``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import queue
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import _native
from .contract import TaggedArray, is_sequence, layout_of
from .errors import CheckpointError, InvalidArgumentError, LoaderUsageError, MissingExtraError
from .loader import Batch, Loader
from .packing import gather_states

if TYPE_CHECKING:
    from .contract import EpochJob, EpochRun, Executor
    from .errors import RowError
    from .pipeline import BoundPipeline, Pipeline

# And CheckpointHandler, CheckpointSave, CheckpointRestore: made on first use
# (module __getattr__), so that they can subclass Orbax's own.
__all__ = ["JaxLoader", "require_jax"]

INSTALL = "pip install 'dataio[jax]'"
# Slots of a packed batch that are per batch, not per row: under a sharding
# they stay on the host (each process's own), as batch.keys does.
PER_BATCH = ("cu_seqlens", "max_seqlen")
_SPECIAL = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
_serial = itertools.count()  # JaxLoaders made by this process (the same order in every process)


def require_jax() -> Any:
    """The ``jax`` module, or :class:`~dataio.errors.MissingExtraError` naming the extra."""
    try:
        import jax
    except ImportError as e:
        err = MissingExtraError(f"output='jax' needs JAX, which is not installed here ({e}): {INSTALL}")
        err.extra = "jax"
        raise err from None
    return jax


def _require_orbax() -> Any:
    try:
        import orbax.checkpoint as ocp  # type: ignore[import-untyped]  # Orbax ships no py.typed
    except ImportError as e:
        err = MissingExtraError(f"dataio.jax's Orbax checkpoints need orbax-checkpoint, which is not installed here ({e}): {INSTALL}")
        err.extra = "jax"
        raise err from None
    return ocp


def _host_array(t: Any) -> np.ndarray:
    """A native tensor (or an executor's numpy array) as a numpy array of its
    real dtype, without a copy: bfloat16 and float8 through ml_dtypes (which
    JAX depends on), so that the device array has that dtype too."""
    if isinstance(t, TaggedArray):
        import ml_dtypes

        return t.array.view(getattr(ml_dtypes, t.dtype_name))
    if isinstance(t, np.ndarray):
        return t
    if t.dtype in _SPECIAL:
        import ml_dtypes

        bits = np.uint16 if t.dtype == "bfloat16" else np.uint8
        return np.frombuffer(t, dtype=bits).reshape(t.shape).view(getattr(ml_dtypes, t.dtype))
    return np.from_dlpack(t)


def _batch_sharding(sharding: Any, ndim: int) -> Any:
    """``sharding`` for an array of ``ndim`` dimensions: a NamedSharding's
    spec cut to them (1-D labels under a ``P("data", "model")`` spec are
    sharded over ``"data"`` alone)."""
    from jax.sharding import NamedSharding, PartitionSpec

    if isinstance(sharding, NamedSharding) and len(sharding.spec) > ndim:
        return NamedSharding(sharding.mesh, PartitionSpec(*sharding.spec[:ndim]))
    return sharding


def _rows_of_process(sharding: Any, n: int) -> tuple[int, int]:
    """(first row, rows) of a global batch of ``n`` rows that this process's
    devices hold under ``sharding``: one contiguous block."""
    try:
        index = _batch_sharding(sharding, 1).addressable_devices_indices_map((n,))
    except ValueError as e:
        raise InvalidArgumentError(f"a global batch of {n} rows does not split over this sharding: {e}") from None
    rows: set[int] = set()
    for idx in index.values():
        rows.update(range(*idx[0].indices(n)))
    if not rows:
        raise InvalidArgumentError("this process holds no device of the sharding")
    first, last = min(rows), max(rows)
    if len(rows) != last - first + 1:
        raise InvalidArgumentError(
            f"this process's devices hold rows {sorted(rows)[:8]}... of the batch, not one contiguous block: "
            "order the mesh's devices process by process (jax.make_mesh does)"
        )
    return first, len(rows)


def _process_hosts(jax: Any) -> tuple[int, int] | None:
    """(hosts, this host) from the processes' host names, exchanged once
    through JAX's distributed key-value store; None when the processes are
    not numbered host by host, evenly."""
    client = _kv_client()
    if client is None:
        return None
    me, world = jax.process_index(), jax.process_count()
    client.key_value_set(f"dataio/hostname/{me}", socket.gethostname(), allow_overwrite=True)
    names = [client.blocking_key_value_get(f"dataio/hostname/{p}", 60_000) for p in range(world)]
    order = list(dict.fromkeys(names))
    per = world // len(order)
    if world % len(order) or any(order.index(h) != p // per for p, h in enumerate(names)):
        return None
    return len(order), order.index(names[me])


def _kv_client() -> Any:
    """JAX's distributed runtime client (the coordination service's key-value
    store, which Orbax uses too), or None outside ``jax.distributed``."""
    try:
        from jax._src.distributed import global_state
    except ImportError:
        return None
    return global_state.client


class _KeyValueBalancer:
    """Equal packed batch counts across JAX processes (the part
    :class:`dataio.packing.Balancer` plays under ``torch.distributed``):
    before each batch every process posts (has a batch, block, a, b) to the
    distributed key-value store and reads everyone's. No device collective,
    so it never races the training step's collectives."""

    def __init__(self, client: Any, tag: str, rank: int, world: int) -> None:
        self._client, self._tag, self._rank, self._world = client, tag, rank, world
        self._round = 0

    def exchange(self, mine: bool, state: tuple[int, int, int]) -> tuple[bool, list[list[int]]]:
        key = f"dataio/balance/{self._tag}/{self._round}"
        self._client.key_value_set(f"{key}/{self._rank}", json.dumps([int(mine), *state]), allow_overwrite=True)
        got = [json.loads(self._client.blocking_key_value_get(f"{key}/{r}", 600_000)) for r in range(self._world)]
        if self._round >= 2:  # every process has read round - 2 (it posted round - 1 after reading it)
            self._client.key_value_delete(f"dataio/balance/{self._tag}/{self._round - 2}/{self._rank}")
        self._round += 1
        return all(g[0] for g in got), [[int(x) for x in g[1:]] for g in got]


def _local_pipeline(pipe: Pipeline, of: int) -> Pipeline:
    """``pipe`` with a shape stage of the global batch size over ``of``
    ranks: what one process loads."""
    shape = pipe.shape
    if of == 1:
        return pipe
    if shape.kind == "batch":
        assert shape.size is not None
        if shape.size % of:
            raise InvalidArgumentError(f"the global batch of {shape.size} rows does not split over {of} processes")
        local = type(shape)("batch", size=shape.size // of, drop_last=shape.drop_last, prefetch=shape.prefetch)
    elif shape.kind == "pack":
        spec = shape.packing
        assert spec is not None
        if spec.batch_size % of:
            raise InvalidArgumentError(f"pack(): the global batch of {spec.batch_size} rows does not split over {of} processes")
        local = type(shape)("pack", size=shape.size, prefetch=shape.prefetch,
                            packing=dataclasses.replace(spec, batch_size=spec.batch_size // of))
    else:
        raise InvalidArgumentError(f"a global batch needs batch() or pack(): {shape.kind}() makes batches of varying sizes")
    return type(pipe)(*pipe.record_maps, *pipe.slots, local, *pipe.batch_transforms, *pipe.batch_maps)


@dataclasses.dataclass
class _Ready:
    batch: Any
    state: dict[str, Any]


@dataclasses.dataclass
class _End:
    state: dict[str, Any]


@dataclasses.dataclass
class _Failed:
    error: BaseException


class _Prefetcher:
    """A thread that takes host batches from the loader and puts them on the
    devices, ``depth`` batches ahead of the consumer. It holds the loader
    weakly: a loader dropped without ``close()`` is still finalized."""

    def __init__(self, loader: JaxLoader, depth: int) -> None:
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self.stopping = threading.Event()
        self.taken = 0  # batches taken from the loader
        self.delivered = 0  # of them, handed to the consumer
        self.thread = threading.Thread(target=self._run, args=(weakref.ref(loader),), name="dataio-jax-prefetch", daemon=True)
        self.thread.start()

    def _run(self, ref: Callable[[], JaxLoader | None]) -> None:
        while not self.stopping.is_set():
            loader = ref()
            if loader is None:
                return
            try:
                item: Any = loader._produce()
                if isinstance(item, _End):
                    loader._start_next_epoch_ahead()
            except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
                item = _Failed(e)
            del loader
            if isinstance(item, _Ready):
                self.taken += 1
            while not self.stopping.is_set():
                try:
                    self.queue.put(item, timeout=0.05)
                    break
                except queue.Full:
                    continue
            if not isinstance(item, _Ready):
                return

    def get(self) -> Any:
        while True:
            try:
                item = self.queue.get(timeout=0.05)
            except queue.Empty:
                if not self.thread.is_alive() and self.queue.empty():
                    raise LoaderUsageError("dataio.jax: the device prefetch thread ended without a batch") from None
                continue
            if isinstance(item, _Ready):
                self.delivered += 1
            return item

    def stop(self) -> None:
        self.stopping.set()
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        if threading.current_thread() is not self.thread:
            self.thread.join()


def _same_job(a: EpochJob, b: EpochJob) -> bool:
    """Whether two jobs run the same epoch: every compared field the same
    object or equal (the records and the pipeline are the loader's own)."""
    return all(
        getattr(a, f.name) is getattr(b, f.name) or getattr(a, f.name) == getattr(b, f.name)
        for f in dataclasses.fields(a) if f.compare
    )


class JaxLoader(Loader):
    """What ``run("jax", sharding=None, devices=None, prefetch_to_device=2)``
    returns: a :class:`~dataio.loader.Loader` whose batches hold
    ``jax.Array`` slots (``batch.keys``, ``batch.indices``, ``batch.errors``
    stay on the host; so do variable-shape slots under a sharding, and a
    packed batch's ``cu_seqlens`` and ``max_seqlen``).

    * ``sharding`` — a ``jax.sharding.Sharding`` over the batch axis: each
      batch is the global batch, of which this process loads its rows (see
      the module). ``batch()`` needs ``drop_last=True`` unless every batch
      splits over the devices, and rows cannot be skipped
      (``on_failure="raise"``).
    * ``devices`` — without ``sharding``: the device (``jax.Device``) the
      arrays go to, or a list of devices to shard the batch axis over
      (a one-axis mesh); default JAX's first local device.
    * ``prefetch_to_device`` — batches put on the devices ahead of the step,
      on a thread; ``0`` puts each one when it is asked for. At an epoch's
      end that thread also starts the next epoch's run (see
      ``_start_next_epoch_ahead``), so that its first batch is no cold start.

    ``state_dict()`` is the state after the last batch handed out (not the
    ones prefetched), with the pipeline's own signature, so a state saved
    with one process count resumes with another (the rules of
    :meth:`~dataio.loader.Loader.load_state_dict`); :func:`CheckpointSave`
    and :func:`CheckpointRestore` save and restore it in an Orbax
    ``CheckpointManager``. ``stats()`` adds ``device_transfer_seconds``
    (putting batches on the devices, on the thread),
    ``device_batches_ready`` and ``prefetch_wait_seconds`` (the thread's
    wait for host batches); ``consumer_wait_seconds`` is the step's wait.
    Batch maps (``dataio.map`` after the shape stage) see the host batch.
    """

    _places_on_devices = True

    def __init__(
        self,
        bound: BoundPipeline,
        output: str = "jax",
        *,
        concurrency: int | str = "auto",
        order: str = "submit",
        on_failure: str = "raise",
        log_errors: bool | Callable[[RowError], Any] = False,
        seed: int | None = None,
        shard: dict[str, Any] | None = None,
        context: Callable[[Any], Any] | None = None,
        device: str | None = None,
        epoch: int = 0,
        prefetch: int | None = None,
        executor: str | Executor | None = None,
        sharding: Any = None,
        devices: Any = None,
        prefetch_to_device: int = 2,
    ) -> None:
        jax = require_jax()
        if output != "jax":
            raise InvalidArgumentError(f"a JaxLoader's output is 'jax', got {output!r}")
        if device is not None:
            raise InvalidArgumentError("device= is torch's CUDA placement; with output='jax' use devices= or sharding=")
        if not isinstance(prefetch_to_device, int) or isinstance(prefetch_to_device, bool) or prefetch_to_device < 0:
            raise InvalidArgumentError(f"prefetch_to_device must be a non-negative integer, got {prefetch_to_device!r}")
        if sharding is not None and devices is not None:
            raise InvalidArgumentError("pass sharding= or devices=, not both")
        self._jax = jax
        self._jax_started = False  # the prefetch thread starts once this __init__ is done
        self._prefetcher: _Prefetcher | None = None
        # The next epoch's run, started by the prefetch thread when an epoch
        # ends, with the job it was started for (see _start_next_epoch_ahead).
        self._ahead: tuple[EpochJob, EpochRun] | None = None
        self._depth = prefetch_to_device
        self._device: Any = None
        self._sharding, self._target = self._placement(jax, sharding, devices)
        self._global_signature = bound.pipeline.signature
        self._of = 1
        if self._sharding is not None:
            shard = self._shard_of_process(jax, bound, shard)
            if on_failure != "raise":
                raise InvalidArgumentError("a global batch needs every row of every process: on_failure must be 'raise' with sharding=")
            self._of = shard["of"]
            bound = type(bound)(_local_pipeline(bound.pipeline, self._of), bound.records)
        self._transfer_seconds = 0.0
        self._consumer_wait = 0.0
        self._consumer = threading.Lock()
        self._delivered_state: dict[str, Any] = {}
        self._serial = next(_serial)
        self._starts = 0
        super().__init__(bound, "jax", concurrency=concurrency, order=order, on_failure=on_failure, log_errors=log_errors,
                         seed=seed, shard=shard, context=context, device=None, epoch=epoch, prefetch=prefetch, executor=executor)
        self._convert = _host_array
        self._check_batches_split()
        self._jax_started = True
        self._start_prefetch()

    # -- placement ------------------------------------------------------------

    @staticmethod
    def _placement(jax: Any, sharding: Any, devices: Any) -> tuple[Any, Any]:
        """(sharding or None, the one device without one)."""
        from jax.sharding import Mesh, NamedSharding, PartitionSpec, Sharding

        if sharding is not None:
            if not isinstance(sharding, Sharding):
                raise InvalidArgumentError(f"sharding must be a jax.sharding.Sharding (e.g. NamedSharding), got {type(sharding).__name__}")
            return sharding, None
        if devices is None:
            return None, jax.local_devices()[0]
        if isinstance(devices, Sequence) and not isinstance(devices, (str, bytes)):
            if not devices:
                raise InvalidArgumentError("devices= is an empty list")
            if len(devices) == 1:
                return None, devices[0]
            return NamedSharding(Mesh(np.asarray(devices), ("batch",)), PartitionSpec("batch")), None
        return None, devices

    def _shard_of_process(self, jax: Any, bound: BoundPipeline, shard: dict[str, Any] | None) -> dict[str, Any]:
        """This process's rank of the global batch, from the rows its devices
        hold; ``pad=True`` (equal batch counts). With several processes over a
        sharded source, the hosts from the processes' host names."""
        shape = bound.pipeline.shape
        n = shape.size if shape.kind == "batch" else (shape.packing.batch_size if shape.packing is not None else None)
        if n is None:
            raise InvalidArgumentError(f"a global batch needs batch() or pack(), not {shape.kind}()")
        first, rows = _rows_of_process(self._sharding, n)
        if shard is not None:
            out = {"pad": True, **shard}
            if out.get("of", 1) * rows != n:
                raise InvalidArgumentError(
                    f"shard={shard} gives {out.get('of', 1)} ranks, but this process's devices hold {rows} of the {n} rows of a batch"
                )
            return out
        out = {"id": first // rows, "of": n // rows, "pad": True}
        if out["of"] > 1 and layout_of(bound.records) is not None and jax.process_count() == out["of"]:
            hosts = _process_hosts(jax)
            if hosts is not None and hosts[0] > 1:
                out["hosts"], out["host"] = hosts
        return out

    def _check_batches_split(self) -> None:
        """Every batch of a sized batch() epoch must split over the sharding:
        said now, not at the epoch's last batch."""
        shape = self._pipe.shape
        if self._sharding is None or shape.kind != "batch" or shape.drop_last or not is_sequence(self._records):
            return
        assert shape.size is not None
        count = _native.shard_count(self._shard["id"], self._shard["of"], self._shard["pad"], self._epoch_len())
        last = count % shape.size
        if last:
            self._fits(last * self._of)

    def _fits(self, rows: int) -> None:
        try:
            _batch_sharding(self._sharding, 1).shard_shape((rows,))
        except ValueError:
            raise InvalidArgumentError(
                f"a global batch of {rows} rows (the epoch's last) does not split over the sharding's devices: "
                "use dataio.batch(n, drop_last=True), or a dataset whose size it divides"
            ) from None

    def _place(self, v: Any, per_row: bool) -> Any:
        jax = self._jax
        if self._sharding is None:
            return jax.device_put(v, self._target)
        if not per_row:
            return v
        rows = v.shape[0] * self._of
        try:
            return jax.make_array_from_process_local_data(_batch_sharding(self._sharding, v.ndim), v, (rows, *v.shape[1:]))
        except ValueError:
            self._fits(rows)  # says why when the rows do not split
            raise

    def _to_device(self, host: Any) -> Any:
        """A host batch (or what a batch map made of it: a Batch or a dict)
        with its arrays on the devices."""
        slots = host.slots if isinstance(host, Batch) else host if isinstance(host, dict) else None
        if slots is None:
            return host
        packed = self._packing is not None
        out: dict[str, Any] = {}
        for name, v in slots.items():
            per_row = not (packed and name in PER_BATCH)
            if isinstance(v, np.ndarray):
                out[name] = self._place(v, per_row)
            elif isinstance(v, list) and self._sharding is None:
                out[name] = [None if x is None else self._place(np.asarray(x), True) for x in v]
            else:
                out[name] = v  # host-side: variable-shape rows under a sharding, ints
        arrays = [a for v in out.values() for a in (v if isinstance(v, list) else [v]) if isinstance(a, self._jax.Array)]
        self._jax.block_until_ready(arrays)
        if isinstance(host, Batch):
            return Batch(out, host.keys, host.indices, host.errors, host.context)
        return out

    # -- the device prefetch --------------------------------------------------

    def _produce(self) -> _Ready | _End:
        """The next host batch, the loader's state after it and the batch on
        the devices (on the prefetch thread, or in ``next()`` without one)."""
        host = Loader._take_batch(self)
        state = Loader.state_dict(self)
        if host is None:
            return _End(state)
        t0 = time.perf_counter()
        batch = self._to_device(host)
        self._transfer_seconds += time.perf_counter() - t0
        return _Ready(batch, state)

    def _start_next_epoch_ahead(self) -> None:
        """At an epoch's end, on the prefetch thread: start the next epoch's
        run now, while the step still works through the batches prefetched,
        so that the next epoch's first batch is not a cold start (a whole
        pipeline's latency: 60-130 ms of a 50 ms step on 2 cores). Only over
        a sized record source (an iterable one is not read before the next
        epoch asks, a sampler may be told its epoch in between). It is used
        only if the next epoch starts as ``_next_epoch`` leaves it (a
        ``set_epoch`` to another epoch or a ``load_state_dict`` between
        makes it a different job: the run is closed, see ``_open_run``)."""
        if self._ahead is not None or self._closed or not is_sequence(self._records):
            return
        job = dataclasses.replace(self._job(), epoch=self._epoch + 1, start=0, global_offset=0, partition_offsets=(), skip_ends=())
        try:
            self._ahead = (job, self._executor.start(job))
        except Exception:  # noqa: BLE001 - the next epoch's own start raises it, in the consumer
            # (or starts then: an executor that runs one epoch at a time,
            # dataio-ray's, refuses a second run while this one is open)
            self._ahead = None

    def _open_run(self, job: EpochJob) -> EpochRun:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            if _same_job(ahead[0], job):
                return ahead[1]
            ahead[1].close()
        return super()._open_run(job)

    def _drop_ahead(self) -> None:
        ahead, self._ahead = getattr(self, "_ahead", None), None
        if ahead is not None:
            ahead[1].close()

    def close(self) -> None:
        self._stop()  # the prefetch thread ends: nothing starts ahead after this
        self._drop_ahead()
        super().close()

    def _start(self) -> None:
        super()._start()
        self._starts += 1
        self._transfer_seconds = 0.0
        self._consumer_wait = 0.0
        if self._packed is not None and self._balancer is None and self._packing is not None and self._packing.balance and self._of > 1:
            client = _kv_client()
            if client is not None and self._jax.process_count() == self._of:
                tag = f"{self._global_signature[:16]}/{self._serial}/{self._starts}"
                self._packed.balancer = cast(Any, _KeyValueBalancer(client, tag, self._shard["id"], self._of))
        if self._jax_started:
            self._start_prefetch()

    def _start_prefetch(self) -> None:
        self._delivered_state = Loader.state_dict(self)
        if self._depth > 0 and self._prefetcher is None:
            self._prefetcher = _Prefetcher(self, self._depth)

    def _stop(self) -> None:
        pf, self._prefetcher = getattr(self, "_prefetcher", None), None
        if pf is None or self._pid != os.getpid():
            super()._stop()
            return
        pf.stop()
        super()._stop()
        if pf.taken > pf.delivered and not self._closed:
            # Batches prefetched but never handed out: the next run starts
            # after the last one handed out.
            Loader.load_state_dict(self, self._delivered_state)

    def _take_batch(self) -> Batch | None:
        self._check_process()
        if not self._consumer.acquire(blocking=False):
            raise LoaderUsageError(
                "this loader is being iterated by another thread at the same time: batches would be split between "
                "them and the checkpoint position lost; make one loader per thread (or hand batches over a queue)"
            )
        try:
            if self._run is None:
                if self._closed:
                    raise InvalidArgumentError("the loader is closed")
                self._start()
            t0 = time.perf_counter()
            pf = self._prefetcher
            try:
                item = self._produce() if pf is None else pf.get()
            finally:
                self._consumer_wait += time.perf_counter() - t0
            if isinstance(item, _Failed):
                self._stop()  # the next iteration starts again at the failed batch
                raise item.error
            self._delivered_state = item.state
            return item.batch if isinstance(item, _Ready) else None
        finally:
            self._consumer.release()

    # -- state and stats --------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        state = dict(self._delivered_state) if self._prefetcher is not None else super().state_dict()
        state["signature"] = self._global_signature
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if isinstance(state, dict) and state.get("signature") == self._global_signature:
            state = {**state, "signature": self._pipe.signature}
        super().load_state_dict(state)

    def _with_wait(self, stats: dict[str, Any]) -> dict[str, Any]:
        stats = super()._with_wait(stats)
        if stats:
            stats["prefetch_wait_seconds"] = stats.get("consumer_wait_seconds", 0.0)
            stats["consumer_wait_seconds"] = self._consumer_wait
            stats["device_transfer_seconds"] = self._transfer_seconds
            pf = getattr(self, "_prefetcher", None)
            stats["device_batches_ready"] = pf.queue.qsize() if pf is not None else 0
        return stats


# -- Orbax -----------------------------------------------------------------

_STATE_FILE = re.compile(r"process_(\d+)-of-(\d+)\.json")


def _state_to_restore(directory: Path, index: int, count: int) -> dict[str, Any]:
    """This process's state in a checkpoint folder: its own file when the
    process count is the one saved; else the saved processes' states, merged
    for an elastic resume (any one for batch(): each holds the global
    position; all of them for pack(): each rank's point)."""
    own = directory / f"process_{index}-of-{count}.json"
    if own.exists():
        return cast(dict[str, Any], json.loads(own.read_text()))
    saved: dict[int, dict[str, Any]] = {}
    counts = set()
    for f in directory.iterdir():
        m = _STATE_FILE.fullmatch(f.name)
        if m:
            saved[int(m.group(1))] = json.loads(f.read_text())
            counts.add(int(m.group(2)))
    if not saved:
        raise CheckpointError(f"no dataio loader state in {directory}")
    if len(counts) != 1 or sorted(saved) != list(range(next(iter(counts)))):
        raise CheckpointError(f"the loader states in {directory} are not one per process of one run: {sorted(f.name for f in directory.iterdir())}")
    states = [saved[i] for i in sorted(saved)]
    return gather_states(states) if "pack" in states[0] else states[0]


def _orbax_classes() -> dict[str, Any]:
    global _ORBAX
    if _ORBAX is not None:
        return _ORBAX
    ocp = _require_orbax()
    jax = require_jax()

    class CheckpointHandler(ocp.CheckpointHandler):  # type: ignore[misc,name-defined]
        """Saves a dataio loader's state in an Orbax checkpoint: one small
        JSON file per process (``process_<i>-of-<n>.json``), as Grain does.
        Restore is exact mid-epoch, and elastic when the process count
        changed (see :meth:`dataio.loader.Loader.load_state_dict`)."""

        def save(self, directory: Any, args: Any = None) -> None:
            state = args.loader.state_dict()
            path = Path(directory) / f"process_{jax.process_index()}-of-{jax.process_count()}.json"
            path.write_text(json.dumps(state))

        def restore(self, directory: Any, args: Any = None) -> Any:
            loader = args.loader
            loader.load_state_dict(_state_to_restore(Path(directory), jax.process_index(), jax.process_count()))
            return loader

        def metadata(self, directory: Any) -> None:
            return None

        def finalize(self, directory: Any) -> None:
            pass

        def close(self) -> None:
            pass

    @ocp.args.register_with_handler(CheckpointHandler, for_save=True)
    @dataclasses.dataclass
    class CheckpointSave(ocp.args.CheckpointArgs):  # type: ignore[misc,name-defined]
        """``args`` of a save: ``ocp.args.Composite(..., loader=dataio.jax.CheckpointSave(loader))``."""

        loader: Any

    @ocp.args.register_with_handler(CheckpointHandler, for_restore=True)
    @dataclasses.dataclass
    class CheckpointRestore(ocp.args.CheckpointArgs):  # type: ignore[misc,name-defined]
        """``args`` of a restore: the loader to restore in place."""

        loader: Any

    for cls in (CheckpointHandler, CheckpointSave, CheckpointRestore):
        cls.__module__ = __name__
    _ORBAX = {"CheckpointHandler": CheckpointHandler, "CheckpointSave": CheckpointSave, "CheckpointRestore": CheckpointRestore}
    return _ORBAX


_ORBAX: dict[str, Any] | None = None


def __getattr__(name: str) -> Any:
    # The Orbax classes subclass Orbax's own: made on first use, so that
    # importing dataio imports neither Orbax nor JAX.
    if name in ("CheckpointHandler", "CheckpointSave", "CheckpointRestore"):
        return _orbax_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
