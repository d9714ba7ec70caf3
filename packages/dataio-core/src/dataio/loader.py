"""The loader: what ``pipe.bind(records).run(...)`` returns.

A context manager and an iterator of :class:`Batch`. Iterating it again
starts the next epoch (or the epoch ``set_epoch`` chose). ``state_dict()``
and ``load_state_dict()`` checkpoint and resume it exactly.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from . import _native
from ._plugins import host as _plugin_host
from ._stats import StatsReport, cache_short_note, describe_stats
from .contract import (
    COLLATE_KEY,
    EpochJob,
    EpochRun,
    ExecutedBatch,
    Executor,
    Shard,
    SizedRecords,
    TaggedArray,
    is_sequence,
    layout_of,
)
from .errors import CheckpointError, InvalidArgumentError, LoaderUsageError, RowError
from .executor import resolve_executor
from .packing import Balancer, ElasticRuns, PackedRun, elastic_units, resolve_tokens

if TYPE_CHECKING:
    from .pipeline import BatchStage, BoundPipeline

__all__ = ["Loader", "Batch", "StatsReport", "describe_stats", "epoch_job", "release_memory"]

row_logger = logging.getLogger("dataio.rows")

_F8 = {"float8_e4m3fn", "float8_e5m2"}


class Batch:
    """One batch: slot name → tensor (``batch["image"]``), plus the rows' identity.

    * ``keys`` — record keys (the ``key`` field, or the record index), one per row;
    * ``indices`` — each row's index in the record source;
    * ``errors`` — :class:`dataio.errors.RowError` for every row skipped
      (``on_failure="skip"``), each naming key, slot, op and URI;
    * ``context`` — what ``run(context=fn)`` computed per row, aligned with ``keys``.

    The slots read like a mapping (``batch["image"]``, ``"image" in batch``,
    iteration over the slot names, ``items()``); ``to_dict()`` gives them as
    a plain ``dict`` (``keys`` is the rows' record keys, not the slot names).

    Fixed-shape slots are one tensor with the rows first; variable-shape
    slots are a list with one entry per row (``None`` where an optional slot
    was inactive).
    """

    __slots__ = ("_slots", "keys", "indices", "errors", "context")

    def __init__(self, slots: dict[str, Any], keys: list[str], indices: list[int], errors: list[RowError], context: list[Any] | None = None) -> None:
        self._slots = slots
        self.keys = keys
        self.indices = indices
        self.errors = errors
        self.context = context

    def __getitem__(self, name: str) -> Any:
        try:
            return self._slots[name]
        except KeyError:
            raise KeyError(f"no slot {name!r} in this batch (slots: {', '.join(self._slots)})") from None

    def __setitem__(self, name: str, value: Any) -> None:
        self._slots[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._slots

    def __iter__(self) -> Iterator[str]:
        return iter(self._slots)

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, name: str, default: Any = None) -> Any:
        return self._slots.get(name, default)

    def items(self) -> Iterable[tuple[str, Any]]:
        return self._slots.items()

    def to_dict(self) -> dict[str, Any]:
        """The slots as a new plain ``dict``, slot name -> value (the same
        tensors and lists, not copies). ``dict(batch)`` does not give it:
        ``batch.keys`` is the list of record keys, not a mapping's keys."""
        return dict(self._slots)

    @property
    def slots(self) -> dict[str, Any]:
        return self._slots

    def __repr__(self) -> str:
        def desc(v: Any) -> str:
            shape = getattr(v, "shape", None)
            if shape is not None:
                return f"{getattr(v, 'dtype', '?')}{list(shape)}"
            if isinstance(v, list):
                return f"list[{len(v)}]"
            return type(v).__name__

        body = ", ".join(f"{k}: {desc(v)}" for k, v in self._slots.items())
        errs = f", {len(self.errors)} skipped" if self.errors else ""
        return f"<dataio.Batch of {len(self)}: {body}{errs}>"


def _converter(output: str) -> Callable[[Any], Any]:
    """Native tensors (and the numpy arrays of batches executed elsewhere,
    see :mod:`dataio.contract`) to the requested output, without copies."""
    if output == "torch":
        import numpy as np
        import torch

        special = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "bfloat16": torch.bfloat16}

        def from_numpy(a: Any) -> Any:
            if a.flags.writeable:
                return torch.from_numpy(a)
            # Arrays that arrive read-only (another process's shared memory)
            # are lent to torch as they are; torch warns that it cannot
            # enforce read-only, and the batch is ours alone.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return torch.from_numpy(a)

        def to_torch(t: Any) -> Any:
            if isinstance(t, TaggedArray):
                return from_numpy(t.array).view(special[t.dtype_name])
            if isinstance(t, np.ndarray):
                return from_numpy(t)
            out = torch.from_dlpack(t)
            if t.dtype in _F8:
                out = out.view(special[t.dtype])
            return out

        return to_torch
    if output in ("numpy", "jax"):
        # "jax": host arrays, which dataio.jax.JaxLoader puts on the devices.
        import numpy as np

        def to_numpy(t: Any) -> Any:
            if isinstance(t, TaggedArray):
                return t.array
            if isinstance(t, np.ndarray):
                return t
            if t.dtype in _F8 or t.dtype == "bfloat16":
                return np.frombuffer(t, dtype=np.uint8 if t.dtype in _F8 else np.uint16).reshape(t.shape)
            return np.from_dlpack(t)

        return to_numpy
    if output == "native":
        return lambda t: t
    raise InvalidArgumentError(f"output must be 'torch', 'numpy', 'jax' or 'native', got {output!r}")


# Every loader of this process that may hold a running epoch. They are
# closed at exit, before the interpreter finalizes: a coordinator thread
# that pulls records from Python needs the GIL, which finalization never
# gives back, so a loader left to its finalizer then could hang the exit.
_LIVE: weakref.WeakSet[Loader] = weakref.WeakSet()


def release_memory() -> int:
    """Give the memory dataio keeps for reuse back to the system: the engine's
    pooled batch and clip buffers (up to 1 GiB) and what the allocator holds
    of freed memory. Batches you still hold are untouched. Called by itself
    when the last open loader closes; call it after a sweep of loaders.
    Returns the pooled bytes freed."""
    return int(_native.release_memory())


@atexit.register
def _close_at_exit() -> None:
    for loader in list(_LIVE):
        try:
            loader.close()
        except Exception:  # noqa: BLE001 - exiting: nothing is left to report to
            pass


def _auto_concurrency(shape: BatchStage) -> int:
    """Records in flight for ``concurrency="auto"``: 4 per CPU thread, and at
    least a whole batch (64 for group_by/collate), at most 1024. Cheap records
    (parquet rows, small files) need many in flight to hide the hand-off
    between the source, the pools and the batcher: with 8 in flight a
    3-column parquet pipeline ran at 125k rows/s, with 512 at 270k."""
    cpu, _, _ = _native.pool_info()
    per_batch = shape.size if shape.kind in ("batch", "pack") and shape.size is not None else 64
    return max(8, min(1024, max(4 * cpu, per_batch)))


class _Collated:
    """Flattens a source whose items are lists of records (collate())."""

    def __init__(self, source: Iterable[Any]) -> None:
        self.source = source

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i, group in enumerate(self.source):
            for rec in group:
                row = dict(rec)
                row[COLLATE_KEY] = i
                yield row



def _hosts_of(shard: dict[str, Any], rank: int, world: int) -> tuple[int, int | None]:
    """(hosts, host or None) of a shard dict, or of torchrun's environment
    (``LOCAL_WORLD_SIZE``, ``GROUP_RANK``) when the dict names none and the
    environment's world is this one; one host otherwise."""
    hosts, host = shard.get("hosts"), shard.get("host")
    if hosts is None:
        local = os.environ.get("LOCAL_WORLD_SIZE", "")
        env_world = os.environ.get("WORLD_SIZE", "")
        if local.isdigit() and env_world.isdigit() and int(env_world) == world and int(local) > 0 and world % int(local) == 0:
            hosts = world // int(local)
            group = os.environ.get("GROUP_RANK", "")
            if host is None and group.isdigit():
                host = int(group)
        else:
            hosts = 1
    for name, v in (("hosts", hosts), ("host", host)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise InvalidArgumentError(f"shard {name} must be a non-negative integer, got {v!r}")
    if hosts < 1 or world % hosts:
        raise InvalidArgumentError(
            f"shard: a world of {world} ranks does not split evenly over {hosts} hosts (each host must run the same number of ranks)"
        )
    if host is not None and host >= hosts:
        raise InvalidArgumentError(f"shard: host {host} is out of range for {hosts} hosts")
    return hosts, host

class Loader:
    """Iterates batches of a bound pipeline. Options:

    * ``concurrency`` — records in flight (``"auto"``: 4 per CPU thread and at
      least one batch, 8..1024); raise it for remote or high-latency sources.
    * ``order`` — ``"submit"`` (batches in schedule order) or ``"completion"``.
    * ``on_failure`` — ``"raise"`` (a typed :class:`~dataio.errors.RowError` at
      the batch holding the bad row) or ``"skip"`` (the row lands on
      ``batch.errors`` and the run goes on).
    * ``log_errors`` — ``True`` logs skipped rows on the ``dataio.rows``
      logger; a callable receives each :class:`~dataio.errors.RowError`.
    * ``seed`` — shuffles each epoch with a keyed permutation and keys the
      random ops; ``None`` keeps the source order.
    * ``shard`` — ``{"id": rank, "of": world_size, "pad": bool}``.
    * ``context`` — ``fn(record)`` per record, surfaced as ``batch.context``.
    * ``epoch`` — the first epoch (default 0).
    * ``prefetch`` — batches kept ready ahead of the consumer, overriding the
      shape stage's ``prefetch`` for this loader (``0`` or more).
    * ``executor`` — who executes the batches: ``None`` (this process, the
      native pools), the name of an executor a plugin registered
      (``"ray"``), or an executor object (see :mod:`dataio.contract`). The
      batches are the same whoever executes them.
    * ``sharding``, ``devices``, ``prefetch_to_device`` — for ``output="jax"``
      only (see :class:`dataio.jax.JaxLoader`, what ``run("jax")`` returns).
    """

    #: Whether this class turns host batches into device arrays (output="jax").
    _places_on_devices = False

    def __init__(
        self,
        bound: BoundPipeline,
        output: str = "torch",
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
        if output == "jax" and not self._places_on_devices:
            raise InvalidArgumentError("output='jax' is made by run('jax') (a dataio.jax.JaxLoader)")
        if output != "jax" and (sharding is not None or devices is not None):
            raise InvalidArgumentError(f"sharding= and devices= place batches on JAX devices: they need output='jax', not {output!r}")
        self._pipe = bound.pipeline
        self._records: Iterable[Any] = bound.records
        if self._pipe.shape.kind == "collate":
            self._records = _Collated(self._records)
        self._convert = _converter(output)
        self._output = output
        if concurrency == "auto":
            concurrency = _auto_concurrency(self._pipe.shape)
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise InvalidArgumentError(f"concurrency must be a positive integer or 'auto', got {concurrency!r}")
        if order not in ("submit", "completion"):
            raise InvalidArgumentError(f"order must be 'submit' or 'completion', got {order!r}")
        if on_failure not in ("raise", "skip"):
            raise InvalidArgumentError(f"on_failure must be 'raise' or 'skip', got {on_failure!r}")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise InvalidArgumentError(f"seed must be a non-negative integer or None, got {seed!r}")
        if log_errors is not True and log_errors is not False and not callable(log_errors):
            raise InvalidArgumentError("log_errors must be True, False or a callable")
        if context is not None and not callable(context):
            raise InvalidArgumentError("context must be a callable taking a record")
        if prefetch is not None and (not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0):
            raise InvalidArgumentError(f"prefetch must be a non-negative integer (batches ready ahead), got {prefetch!r}")
        check_fields = getattr(self._records, "_dataio_check_fields", None)
        if callable(check_fields) and not self._pipe.record_maps:
            check_fields(sorted({sl.field for sl in self._pipe.slots if not sl.optional}))
        self._executor = resolve_executor(executor)
        self._prefetch = self._pipe.shape.prefetch if prefetch is None else prefetch
        self._shard = self._check_shard(shard)
        self._device = self._check_device(device)
        self._concurrency = concurrency
        self._order = order
        self._skip = on_failure == "skip"
        self._warned_dropped = False  # a batch whose every row failed was dropped (warned once)
        self._warned_short_cache = False  # the shard cache was below the working set (warned once)
        self._log = log_errors
        self._seed = seed
        self._context = context
        self._object_metas = _native.ObjectMetas()
        self._epoch = int(epoch)
        self._position = 0
        self._global_offset = 0
        self._partition_offsets: list[int] = []  # a host-partitioned order's resume point
        # order="completion": end positions of batches delivered past
        # self._position by the run this epoch resumes (not delivered again).
        self._skip_ends: list[int] = []
        self._run: EpochRun | None = None  # the running epoch
        # pack(): the end and padding tokens, the packer of the running
        # epoch, and what of the block at self._position was delivered.
        self._packing = self._pipe.shape.packing
        self._pack_skip: tuple[int, int] = (0, 0)
        self._packed: PackedRun | None = None
        # An elastic epoch: the old world's size and every old rank's
        # frontier ([position, a, b]); this rank packs its units of them.
        self._pack_elastic: dict[str, Any] | None = None
        if self._packing is not None:
            if order != "submit":
                raise InvalidArgumentError("pack() delivers documents in schedule order: order must be 'submit'")
            self._pack_tokens = resolve_tokens(self._packing, self._pipe.slots[0])
            # A collective group, made now, when every rank makes its loader.
            self._balancer = Balancer() if Balancer.wanted(self._packing, self._shard) else None
        self._last_stats: dict[str, Any] = {}
        # What plugins had counted when the loader started (dataio_register_stats).
        self._plugin_counters_at_start = _plugin_host.stats_counters()
        self._closed = False
        self._iterating = False
        # One consumer at a time (see _enter); the process that owns the threads.
        self._busy = threading.Lock()
        self._pid = os.getpid()
        _LIVE.add(self)
        self._start()

    # -- arguments ----------------------------------------------------------

    @staticmethod
    def _check_shard(shard: dict[str, Any] | None) -> Shard:
        """The rank's share, with its hosts: ``shard["hosts"]`` (and
        ``"host"``, checked) or, under torchrun, ``LOCAL_WORLD_SIZE`` and
        ``GROUP_RANK``; ``"canonical_hosts"`` defaults to the host count (a
        checkpoint's count wins on resume)."""
        if shard is None:
            return {"id": 0, "of": 1, "pad": False, "hosts": 1, "canonical_hosts": 1}
        if not isinstance(shard, dict):
            raise InvalidArgumentError("shard must be a dict like {'id': rank, 'of': world_size, 'pad': True}")
        unknown = set(shard) - {"id", "of", "pad", "hosts", "host", "canonical_hosts"}
        if unknown:
            raise InvalidArgumentError(
                f"shard has unknown keys {sorted(unknown)}; use 'id', 'of', 'pad', 'hosts', 'host', 'canonical_hosts'"
            )
        sid, of = shard.get("id", 0), shard.get("of", 1)
        for name, v in (("id", sid), ("of", of)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise InvalidArgumentError(f"shard {name} must be an integer, got {v!r}")
        _native.shard_check(sid, of)  # the engine's range rule (Rank::check)
        hosts, host = _hosts_of(shard, sid, of)
        canonical = shard.get("canonical_hosts", hosts)
        if not isinstance(canonical, int) or isinstance(canonical, bool) or canonical < 1:
            raise InvalidArgumentError(f"shard canonical_hosts must be a positive integer, got {canonical!r}")
        local = of // hosts
        if host is not None and host != sid // local:
            raise InvalidArgumentError(
                f"shard: rank {sid} of {of} over {hosts} hosts ({local} ranks each) is on host {sid // local}, "
                f"not host {host}: ranks must be numbered host by host (as torchrun numbers them)"
            )
        return {"id": sid, "of": of, "pad": bool(shard.get("pad", False)), "hosts": hosts, "canonical_hosts": canonical}

    @staticmethod
    def _check_device(device: str | None) -> str | None:
        if device is None or device == "cpu":
            return None
        from .gds import require_cuda

        return require_cuda(device)

    # -- lifecycle ----------------------------------------------------------

    def _job(self) -> EpochJob:
        return EpochJob(
            pipeline=self._pipe,
            records=self._records,
            seed=self._seed,
            epoch=self._epoch,
            shard=self._shard.copy(),
            start=self._position,
            global_offset=self._global_offset,
            partition_offsets=tuple(self._partition_offsets),
            concurrency=self._concurrency,
            order=self._order,
            on_failure="skip" if self._skip else "raise",
            context=self._context,
            prefetch=self._prefetch,
            object_metas=self._object_metas,
            skip_ends=tuple(self._skip_ends),
        )

    def _start(self) -> None:
        self._run = self._elastic_runs() if self._pack_elastic is not None else self._open_run(self._job())
        self._wait_seconds = 0.0  # time the consumer spent in next(), this epoch
        if self._packing is not None:
            eos, pad = self._pack_tokens
            mixed = getattr(self._records, "sources_of", None) if hasattr(self._records, "_dataio_mix") else None
            self._packed = PackedRun(self._packing, eos, pad, self._seed, self._epoch, self._position, self._pack_skip, mixed)
            self._packed.balancer = self._balancer

    def _open_run(self, job: EpochJob) -> EpochRun:
        """The executor's run of ``job`` (``dataio.jax.JaxLoader`` hands the
        one it started ahead, at the end of the epoch before, when it is
        this job)."""
        return self._executor.start(job)

    def _elastic_runs(self) -> EpochRun:
        """The units of an elastic packed epoch this rank packs, each one
        block of an old rank's schedule run on its own."""
        el = self._pack_elastic
        assert el is not None and self._packing is not None
        world, pad, window = int(el["world"]), bool(self._shard["pad"]), self._packing.window
        n = self._epoch_len()
        counts = [_native.shard_count(r, world, pad, n) for r in range(world)]
        base = self._job()

        def start(r: int, k: int) -> EpochRun:
            shard = cast(Shard, {**self._shard, "id": r, "of": world})
            return self._executor.start(dataclasses.replace(base, shard=shard, start=k, global_offset=0, partition_offsets=()))

        units = elastic_units(el["frontiers"], counts, window, self._shard["id"], self._shard["of"])
        return cast(EpochRun, ElasticRuns(start, units, window, self._position // window))

    def _stop(self) -> None:
        if self._pid != os.getpid():
            # A forked child: the epoch's threads live in the parent. Let go
            # of it without waiting for them (the native side does the same).
            self._run = None
            return
        if self._run is not None:
            self._last_stats = self._with_plugins(self._with_pack(self._with_wait(self._run.stats())))
            self._run.close()
            self._run = None

    def close(self) -> None:
        """Stop all work now and free every buffer the loader holds (and the
        executor's workers, when it has any). Closing twice, or in a process
        forked from the one that made the loader, does nothing more."""
        self._stop()
        was_open = self in _LIVE
        self._closed = True
        _LIVE.discard(self)
        if self._pid != os.getpid():
            return
        close = getattr(self._executor, "close", None)
        if callable(close):
            close()
        if was_open and not _LIVE:
            release_memory()  # the last loader: nothing will reuse the pool soon

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._stop()
        except Exception:  # noqa: BLE001 - a finalizer must not raise (the interpreter may be exiting)
            pass

    # -- iteration ----------------------------------------------------------

    def _check_process(self) -> None:
        if self._pid != os.getpid():
            raise LoaderUsageError(
                f"this loader was made in process {self._pid} and is used in process {os.getpid()}, forked from it: "
                "its worker threads do not exist here. Create the loader in the process that iterates it "
                "(for a torch DataLoader worker: inside IterableDataset.__iter__, or in worker_init_fn)"
            )

    def __iter__(self) -> Iterator[Batch]:
        self._check_process()
        if self._closed:
            raise InvalidArgumentError("the loader is closed")
        if self._iterating:
            raise LoaderUsageError(
                "this loader is already being iterated (another iter(loader) is open, maybe on another thread): "
                "one iteration at a time; finish or drop the first, or make one loader per consumer"
            )
        if self._run is None:
            self._start()
        return self._epoch_iter()

    def _epoch_iter(self) -> Iterator[Batch]:
        if self._iterating:
            raise LoaderUsageError(
                "this loader is already being iterated (another iter(loader) is open, maybe on another thread): "
                "one iteration at a time; finish or drop the first, or make one loader per consumer"
            )
        self._iterating = True
        try:
            while True:
                b = self._take_batch()
                if b is None:
                    break
                yield b
            # The epoch ended: the next iteration is the next epoch.
            self._next_epoch()
        finally:
            self._iterating = False

    def __next__(self) -> Batch:
        self._check_process()
        if self._closed:
            raise StopIteration
        if self._iterating:
            raise LoaderUsageError("next(loader) while an iter(loader) is open: use one of them at a time")
        if self._run is None:
            self._start()
        b = self._take_batch()
        if b is None:
            self._next_epoch()
            raise StopIteration
        return b

    def _take_batch(self) -> Batch | None:
        """The next batch for the one consumer; a second thread in here at
        the same time is refused (it would split batches between them and
        leave the position wrong)."""
        self._check_process()
        if not self._busy.acquire(blocking=False):
            raise LoaderUsageError(
                "this loader is being iterated by another thread at the same time: batches would be split between "
                "them and the checkpoint position lost; make one loader per thread (or hand batches over a queue)"
            )
        try:
            if self._run is None:
                if self._closed:
                    raise InvalidArgumentError("the loader is closed")
                self._start()
            return self._next_batch()
        finally:
            self._busy.release()

    def _next_batch(self) -> Batch | None:
        assert self._run is not None
        if self._packed is not None:
            return self._next_packed(self._packed)
        while True:
            t0 = time.perf_counter()
            try:
                raw = self._run.next_batch()
            except RowError as e:
                # on_failure="raise": the error still goes to the log first.
                self._report(e)
                raise
            finally:
                self._wait_seconds += time.perf_counter() - t0
            if raw is None:
                self._warn_short_cache()
                return None
            # The native position: after the contiguous prefix of delivered
            # batches. With order="completion" this batch may have overtaken an
            # earlier one, and its own end would skip that one on resume.
            self._position = self._run.position
            if raw.keys:
                return self._wrap(raw)
            self._drop_failed(raw)

    def _warn_short_cache(self) -> None:
        """At an epoch's end, once per loader: a shard cache below the
        working set served some shards from memory instead of failing; say
        so, with the budget that would have held them."""
        if self._warned_short_cache:
            return
        stats = getattr(self._records, "_dataio_source_stats", None)
        if not callable(stats):
            return
        note = cache_short_note(stats())
        if note:
            self._warned_short_cache = True
            warnings.warn(f"dataio: {note}", RuntimeWarning, stacklevel=4)

    def _drop_failed(self, raw: ExecutedBatch) -> None:
        """A batch whose every row failed (``on_failure="skip"``) is not
        delivered: its slots would be empty lists, not tensors. Its errors
        still go to ``log_errors``, and the first such batch of the loader
        is warned about, naming its first error."""
        errors = raw.errors()
        for e in errors:
            self._report(e)
        if errors and not self._warned_dropped:
            self._warned_dropped = True
            warnings.warn(
                f"dataio: a batch was not delivered because every row failed ({len(errors)} skipped, on_failure='skip'); "
                f"the first: {errors[0]}. Later such batches are dropped without a warning "
                "(run(log_errors=True) logs every skipped row)",
                RuntimeWarning,
                stacklevel=5,
            )

    def _next_packed(self, packed: PackedRun) -> Batch | None:
        assert self._run is not None
        t0 = time.perf_counter()
        try:
            got = packed.next(self._run)
        except RowError as e:
            self._report(e)
            raise
        finally:
            self._wait_seconds += time.perf_counter() - t0
        if got is None:
            # Documents that failed after the last packed batch: no batch
            # carries them, but log_errors still gets them.
            left, packed.errors = packed.errors, []
            for err in left:
                self._report(err)
            return None
        out, errors = got
        self._position, self._pack_skip = packed.state()
        convert = self._convert
        slots = {k: v if k == "max_seqlen" else convert(v) for k, v in out.items()}
        if self._device is not None:
            from .gds import to_device

            slots = to_device(slots, self._device)
        for err in errors:
            self._report(err)
        batch: Any = Batch(slots, [], [], errors)
        for m in self._pipe.batch_maps:
            batch = m.fn(batch)
        return batch

    def _wrap(self, raw: ExecutedBatch) -> Batch:
        convert = self._convert
        slots: dict[str, Any] = {}
        for name, value in raw.take_slots().items():
            if isinstance(value, list):
                slots[name] = [None if v is None else convert(v) for v in value]
            else:
                slots[name] = convert(value)
        if self._device is not None:
            from .gds import to_device

            slots = to_device(slots, self._device)
        errors = raw.errors()
        for e in errors:
            self._report(e)
        context = raw.contexts() if self._context is not None else None
        batch: Any = Batch(slots, raw.keys, raw.indices, errors, context)
        for m in self._pipe.batch_maps:
            batch = m.fn(batch)
        return batch

    def _report(self, e: RowError) -> None:
        if not self._log:
            return
        if callable(self._log) and self._log is not True:
            self._log(e)
        else:
            row_logger.warning("%s %s", "skipped" if self._skip else "failed", e)

    # -- epochs and checkpoints ---------------------------------------------

    def _next_epoch(self) -> None:
        self._stop()
        self._epoch += 1
        self._position = 0
        self._skip_ends = []
        self._pack_skip = (0, 0)
        self._pack_elastic = None
        self._global_offset = 0
        self._partition_offsets = []

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` from its beginning at the next iteration."""
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise InvalidArgumentError(f"epoch must be a non-negative integer, got {epoch!r}")
        self._stop()
        self._epoch = epoch
        self._position = 0
        self._skip_ends = []
        self._pack_skip = (0, 0)
        self._pack_elastic = None
        self._global_offset = 0
        self._partition_offsets = []

    def __len__(self) -> int:
        """Batches this rank gets in an epoch (sized sources with batch()).

        The batches planned: with ``on_failure="skip"`` a batch whose every
        row failed is not delivered, so an epoch may yield fewer."""
        if self._packing is not None:
            raise TypeError(
                "len() of a pack() loader is not known before the epoch is packed: the number of packed batches "
                "depends on the documents' token lengths (loader.stats()['pack'] counts the sequences packed so far)"
            )
        if not is_sequence(self._records) or self._pipe.shape.kind != "batch":
            raise TypeError("the number of batches is known only for sized record sources with batch()")
        hosted = self._host_order(0)
        if hosted is not None:
            count = hosted[0]
        else:
            n = self._epoch_len() - self._global_offset
            count = _native.shard_count(self._shard["id"], self._shard["of"], self._shard["pad"], max(0, n))  # Rank::count
        size = self._pipe.shape.size
        assert size is not None, "batch() always has a size"
        return count // size if self._pipe.shape.drop_last else -(-count // size)

    def _epoch_len(self) -> int:
        """Records in this epoch's global order (a mix's draws, else the source's length)."""
        epoch_len = getattr(self._records, "epoch_len", None)
        if callable(epoch_len) and hasattr(self._records, "_dataio_mix"):
            return int(epoch_len(self._seed, self._epoch))
        return len(cast(SizedRecords, self._records))  # a sized source: the callers checked

    def _hosted(self) -> bool:
        """Whether the order is partitioned by host: a sharded source (not
        in a mix) read by several hosts, or resumed from partition offsets."""
        if not hasattr(self._records, "_dataio_layout") or hasattr(self._records, "_dataio_mix"):
            return False
        return self._shard.get("hosts", 1) > 1 or self._shard.get("canonical_hosts", 1) > 1 or bool(self._partition_offsets)

    def _host_order(self, position: int) -> tuple[int, list[int]] | None:
        """(records of this rank, per-partition progress at ``position``) of a host-partitioned order."""
        if not self._hosted():
            return None
        counts, window, spread = layout_of(self._records) or ([], 1, 1)
        return _native.host_order(
            counts, window, spread, self._seed, self._epoch, self._shard["id"], self._shard["of"], self._shard["pad"],
            self._shard.get("hosts", 1), self._shard.get("canonical_hosts", 1), list(self._partition_offsets), position,
        )

    def _mix_progress(self) -> list[dict[str, int]] | None:
        progress = getattr(self._records, "progress", None)
        if not (callable(progress) and hasattr(self._records, "_dataio_mix")):
            return None
        done = min(self._epoch_len(), self._global_offset + self._position * self._shard["of"])
        return progress(self._seed, self._epoch, done)

    def state_dict(self) -> dict[str, Any]:
        """A small, JSON-serializable checkpoint: where this rank is in the
        epoch's global order. Its size does not depend on the dataset."""
        return {
            "version": 1,
            "signature": self._pipe.signature,
            "seed": self._seed,
            "epoch": self._epoch,
            "position": self._position,
            "global_offset": self._global_offset,
            # Records of the epoch's global order consumed by all ranks
            # together, if every rank checkpoints at the same step.
            "global_position": self._global_offset + self._position * self._shard["of"],
            "shard": dict(self._shard),
            "dataset_size": len(self._records) if is_sequence(self._records) else None,
            # A host-partitioned order: per canonical partition, the samples
            # consumed when this run started and once every rank is here.
            **(
                {"partition_offsets": list(self._partition_offsets), "partition_progress": hosted[1]}
                if (hosted := self._host_order(self._position)) is not None
                else {}
            ),
            # A mix: each source's draws this epoch and its own epoch, at the
            # global position (derived from it: resuming needs only the position).
            **({"sources": m} if (m := self._mix_progress()) is not None else {}),
            # What fixes a sharded source's order besides the seed: its
            # shuffle window and spread (per mixed source).
            **({"shard_order": o} if (o := self._shard_order()) is not None else {}),
            # pack(): "position" is the start of the packer's block; "skip"
            # what of it was delivered (sequences, or a document and token).
            # With every rank's point ("ranks", from the balancer or
            # packing.gather_states) another world size resumes exactly;
            # "elastic": this epoch is such a resume (old world, frontiers).
            **({"pack": self._pack_state()} if self._packing is not None else {}),
            # order="completion": batches delivered past "position" (their
            # end positions), which a resume skips: nothing comes twice.
            **({"delivered_ahead": ahead} if (ahead := self._delivered_ahead()) else {}),
        }

    def _delivered_ahead(self) -> list[int]:
        """End positions of the batches delivered past ``self._position``:
        the running epoch's, and those of the run it resumed not yet passed."""
        ends = {e for e in self._skip_ends if e > self._position}
        if self._run is not None:
            ends.update(int(e) for e in getattr(self._run, "ahead_ends", ()))
        return sorted(ends)

    def _pack_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"skip": list(self._pack_skip)}
        ranks = self._packed.ranks if self._packed is not None else None
        if ranks is not None:
            out["ranks"] = ranks
        if self._pack_elastic is not None:
            out["elastic"] = self._pack_elastic
        return out

    def _shard_order(self) -> list[dict[str, int] | None] | None:
        """[{"window", "spread"}] of the source's layout (one per source of a
        mix, None for one without), or None when no source declares one."""
        parts = getattr(self._records, "sources", None) if hasattr(self._records, "_dataio_mix") else [self._records]
        layouts = [layout_of(p) for p in parts or []]
        if not any(layouts):
            return None
        return [None if lay is None else {"window": lay[1], "spread": lay[2]} for lay in layouts]

    def _check_shard_order(self, state: dict[str, Any]) -> None:
        mine = self._shard_order()
        if mine is None:
            return
        # A state without the field comes from before shuffle_spread: its
        # orders read shards one after another (spread 1).
        saved = state.get("shard_order", [None if o is None else {**o, "spread": 1} for o in mine])
        if saved != mine:
            hint = (
                "; it was saved before shuffle_spread existed (shards read one after another): "
                "open the source with shuffle_spread=1 to resume it exactly"
                if "shard_order" not in state
                else ""
            )
            raise CheckpointError(
                f"this state was saved over shards ordered with {saved}, this loader's source has {mine}: "
                f"the rest of the epoch would be another order, losing and repeating samples{hint}"
            )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume where ``state`` was taken: the next batch is the one that
        would have come next, bit for bit.

        A state taken with another world size resumes elastically: the ranks
        of the new world interleave over the part of the epoch's global order
        that was not consumed yet. That is exact when every old rank saved its
        state at the same step (the normal case with ``pad=True``): no record
        is repeated or lost."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise CheckpointError("not a dataio loader state (expected version 1)")
        if state.get("signature") != self._pipe.signature:
            raise CheckpointError(
                f"this state was saved by another pipeline (signature {str(state.get('signature'))[:12]}…, "
                f"this one is {self._pipe.signature[:12]}…); the ops, their order or the maps differ"
            )
        if state.get("seed") != self._seed:
            raise CheckpointError(f"this state was saved with seed={state.get('seed')!r}, this loader has seed={self._seed!r}")
        size = len(self._records) if is_sequence(self._records) else None
        if state.get("dataset_size") != size:
            raise CheckpointError(f"this state was saved over {state.get('dataset_size')} records, this loader has {size}")
        self._check_shard_order(state)
        saved = state.get("shard") or {}
        if saved.get("pad") != self._shard["pad"]:
            raise CheckpointError(f"this state was saved with pad={saved.get('pad')}, this loader has pad={self._shard['pad']}")
        self._stop()
        self._epoch = int(state["epoch"])
        # The canonical host count is the checkpoint's: it fixes the order.
        self._shard["canonical_hosts"] = int(saved.get("canonical_hosts", 1))
        self._partition_offsets = []
        self._global_offset = 0
        same = all(saved.get(k, d) == self._shard.get(k, d) for k, d in (("id", 0), ("of", 1), ("hosts", 1)))
        if self._packing is not None:
            self._load_pack_state(state, same, size)
            return
        ahead = [int(e) for e in state.get("delivered_ahead", [])]
        if ahead and not same:
            raise CheckpointError(
                "this state was taken with order='completion' while batches past its position were delivered; "
                "it resumes only with the same ranks"
            )
        self._skip_ends = ahead
        if same:
            self._position = int(state["position"])
            self._global_offset = int(state.get("global_offset", 0))
            self._partition_offsets = [int(x) for x in state.get("partition_offsets", [])]
        else:
            if size is None or self._pipe.shape.kind != "batch":
                raise CheckpointError("resuming with another world size needs a sized record source and batch()")
            self._position = 0
            if "partition_progress" in state:
                self._partition_offsets = [int(x) for x in state["partition_progress"]]
            elif self._hosted():
                # A one-host order's progress is its global position.
                self._partition_offsets = [int(state["global_position"])]
            else:
                self._global_offset = int(state["global_position"])

    def _load_pack_state(self, state: dict[str, Any], same: bool, size: int | None) -> None:
        """A packed loader's resume: its own point (same world), or, with
        every old rank's point, an elastic epoch over the old ranks' rest."""
        pack = state.get("pack") or {}
        skip = pack.get("skip")
        if not (isinstance(skip, list) and len(skip) == 2 and all(isinstance(x, int) and x >= 0 for x in skip)):
            raise CheckpointError("this state has no pack() resume point (state['pack']['skip'])")
        saved = state.get("shard") or {}
        elastic = pack.get("elastic")
        if same:
            self._position = int(state["position"])
            self._pack_skip = (skip[0], skip[1])
            self._pack_elastic = elastic
            return
        if elastic is not None:
            raise CheckpointError(
                "this state is of an epoch already resumed with another world size; resume it with the world it was "
                "saved with, and change the world size at an epoch's start"
            )
        ranks = pack.get("ranks")
        if ranks is None:
            raise CheckpointError(
                "a pack() loader resumes with another world size only from every rank's point: save under "
                "torch.distributed (the balancer shares them), or merge the ranks' states with "
                "dataio.packing.gather_states"
            )
        if size is None:
            raise CheckpointError("resuming with another world size needs a sized record source")
        if saved.get("hosts", 1) != 1 or self._shard.get("hosts", 1) != 1:
            raise CheckpointError("a pack() loader resumes with another world size only without host partitioning")
        if len(ranks) != saved.get("of") or not all(isinstance(f, list) and len(f) == 3 for f in ranks):
            raise CheckpointError(f"this state's pack ranks do not match its world of {saved.get('of')}")
        self._position = 0
        self._pack_skip = (0, 0)
        self._pack_elastic = {"world": int(saved["of"]), "frontiers": [[int(x) for x in f] for f in ranks]}

    def stats(self) -> dict[str, Any]:
        """Counters and queue depths of the running (or last finished) epoch; cheap.

        ``records_admitted`` / ``records_done`` / ``records_failed``,
        ``bytes_read``, the seconds spent per stage summed over tasks
        (``source_seconds``, ``fetch_seconds``, ``decode_seconds``),
        ``consumer_wait_seconds`` (time the consumer spent waiting in
        ``next()``), ``batches_built`` / ``batches_delivered``, the queues now
        (``records_in_flight``, ``batches_in_window``, ``batches_ready``) and
        ``elapsed_seconds`` since the epoch started. A shard source adds
        ``"source"``: its shards, shards opened and its cache's
        ``cache_hits`` / ``cache_misses`` / ``cache_bytes_fetched`` /
        ``cache_evictions`` (counted since the source was opened). A mix
        (``dataio.mix``) adds ``"sources"`` (per source: drawn this epoch up
        to the global position, and its own epoch) and ``"source_reads"``
        (per source: records read and their read seconds, this epoch). A
        ``pack()`` pipeline adds ``"pack"``: documents, tokens,
        ``padding_tokens``, ``padding_fraction``, sequences, batches,
        ``split_documents`` and, over a mix, ``source_tokens`` and
        ``source_token_shares`` (per source number).
        :meth:`report` turns snapshots into rates and a verdict."""
        out = self._with_pack(self._with_wait(self._run.stats())) if self._run is not None else dict(self._last_stats)
        source_stats = getattr(self._records, "_dataio_source_stats", None)
        if callable(source_stats):
            out["source"] = self._with_host_traffic(source_stats())
        mixed = self._mix_progress()
        if mixed is not None:
            out["sources"] = mixed
        return out

    def _with_host_traffic(self, source: dict[str, Any]) -> dict[str, Any]:
        """Adds what this rank's host fetched against what its ranks
        delivered (``host_fetch_to_delivery``: about 1 when each shard the
        host reads is fetched once), both from counters its cache keeps for
        every process of the host, since the source opened."""
        added, delivered = source.get("host_cache_bytes_added"), source.get("host_bytes_delivered")
        if added is None or not delivered:
            return source
        local = self._shard["of"] // self._shard.get("hosts", 1)
        source["host"] = self._shard["id"] // local
        source["host_fetch_to_delivery"] = added / delivered
        return source

    def _with_pack(self, stats: dict[str, Any]) -> dict[str, Any]:
        if self._packed is not None:
            stats["pack"] = self._packed.stats()
        return stats

    def _with_plugins(self, stats: dict[str, Any]) -> dict[str, Any]:
        """Adds each plugin's stats section: its counters' growth since the
        loader started (a plugin that loaded later counts from zero)."""
        for section, now in _plugin_host.stats_counters().items():
            if section not in stats:
                start = self._plugin_counters_at_start.get(section, {})
                stats[section] = {k: v - start.get(k, 0) for k, v in now.items()}
        return stats

    def _with_wait(self, stats: dict[str, Any]) -> dict[str, Any]:
        # The native counter adds only the last poll slice of a long wait;
        # the wait measured around the native call here is the whole of it.
        if stats:
            stats["consumer_wait_seconds"] = max(float(stats.get("consumer_wait_seconds", 0.0)), self._wait_seconds)
        return stats

    def report(self, since: dict[str, Any] | None = None) -> StatsReport:
        """Per-stage rates and where the pipeline is waiting, since ``since``
        (an earlier ``stats()`` of the same epoch) or since the epoch started.
        ``print(loader.report())`` for a readable summary."""
        cpu_threads = _native.pool_info()[0]
        return describe_stats(self.stats(), since, concurrency=self._concurrency, prefetch=self._prefetch, cpu_threads=cpu_threads,
                              ops=self._pipe.op_names())

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"epoch {self._epoch}, position {self._position}"
        return f"<dataio.Loader {self._output} ({state})>"


def epoch_job(bound: BoundPipeline, **options: Any) -> EpochJob:
    """The :class:`~dataio.contract.EpochJob` of the first epoch that
    ``Loader(bound, **options)`` would start, without starting anything
    (``BoundPipeline.epoch_job`` spells the options out)."""
    return _Unstarted(bound, "numpy", **options)._job()


class _Unstarted(Loader):
    """A loader whose epochs never start: its options checked and its
    defaults filled in as any loader's, for :func:`epoch_job`."""

    def _start(self) -> None:
        pass


def from_sampler(batch_sampler: Iterable[Iterable[Any]], record_fn: Callable[[Any], Any] | None = None) -> Iterable[dict[str, Any]]:
    """Adapt a PyTorch-style BatchSampler (or any iterable of lists of rows)
    into records for ``group_by("batch_id")``: every row of the i-th list
    gets ``batch_id = i``. ``record_fn(row)`` maps a row to a record dict."""
    return _SamplerRecords(batch_sampler, record_fn)


class _SamplerRecords:
    def __init__(self, sampler: Iterable[Iterable[Any]], record_fn: Callable[[Any], Any] | None) -> None:
        self.sampler = sampler
        self.record_fn = record_fn

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch_id, rows in enumerate(self.sampler):
            for row in rows:
                rec = self.record_fn(row) if self.record_fn is not None else row
                if not isinstance(rec, dict):
                    raise InvalidArgumentError(f"from_sampler: records must be dicts, got {type(rec).__name__} (pass record_fn=)")
                rec = dict(rec)
                rec["batch_id"] = batch_id
                yield rec

    def __repr__(self) -> str:
        return f"<dataio.from_sampler over {type(self.sampler).__name__}>"

