"""The execution contract: what a loader hands an executor, and what comes back.

A leaf: it imports nothing of :mod:`dataio.pipeline`, :mod:`dataio.loader`
or :mod:`dataio.executor` (they import it), so an executor plugin, the loader
and the local executor all depend on these definitions and never on each
other.

A loader's epoch is two steps. **Planning** decides which records form each
batch, in submit order: the keyed permutation, shard interleave and resume
point for ``batch()``, the distinct-key groups for ``group_by``/``collate``.
It reads records (only the group key is looked at) but decodes nothing.
**Execution** reads, decodes and transforms the rows of each planned batch
and assembles it. Every random draw is keyed by (seed, epoch, record index,
op) and every batch transform by (seed, epoch, the batch's first position),
so a planned batch executed anywhere — another thread, process or machine —
gives the same output bit for bit.

The contract an executor implements (:class:`Executor`):

* ``start(job: EpochJob) -> EpochRun``, once per epoch;
* ``EpochRun.next_batch()`` returns the next batch (in submit order, or in
  completion order when ``job.order == "completion"``) as a
  :class:`FinishedBatch` (or the native batch: any :class:`ExecutedBatch`),
  or ``None`` at the end;
* ``EpochRun.position``: the ``end_position`` of the last batch of the
  contiguous prefix of delivered batches (what ``state_dict()`` saves);
  :class:`DeliveryTracker` computes it, for the native loader and for
  executor plugins alike;
* ``EpochRun.stats()``: the engine counters (see ``Loader.stats``), summed
  over whoever executed, optionally with a ``"workers"`` list of per-worker
  dicts; ``EpochRun.close()`` stops all work and releases resources.

``EpochJob.plan()`` gives the planned batches; workers execute them with
:func:`dataio.executor.run_planned`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, TypeGuard

from . import _native
from ._native import DeliveryTracker

if TYPE_CHECKING:
    from .errors import RowError
    from .pipeline import Pipeline

__all__ = [
    "COLLATE_KEY",
    "DeliveryTracker",
    "EpochJob",
    "EpochRun",
    "ExecutedBatch",
    "Executor",
    "FinishedBatch",
    "PlannedBatch",
    "Shard",
    "SizedRecords",
    "TaggedArray",
    "is_sequence",
    "layout_of",
]

#: The group key the loader gives each record of a ``collate()`` source (the
#: index of the item it came from): each item of the source is one batch.
COLLATE_KEY = "__dataio_batch__"


class Shard(TypedDict):
    """This rank's share of the epoch: ``{"id": rank, "of": world_size, "pad": bool}``,
    and for a sharded source read by several hosts ``"hosts"`` (physical
    hosts, the ranks split evenly over them host-major) and
    ``"canonical_hosts"`` (the partitions of the order; see
    ``dataio_engine::order``)."""

    id: int
    of: int
    pad: bool
    hosts: NotRequired[int]
    canonical_hosts: NotRequired[int]


class SizedRecords(Protocol):
    """A sized record source: ``len()`` and indexing by record index."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...


def is_sequence(records: object) -> TypeGuard[SizedRecords]:
    """Whether ``records`` is a sized record source (``len()`` and indexing,
    not a str, bytes or dict): only such a source can be shuffled, padded
    across ranks, resumed by index and planned ahead on another machine.
    Anything else is read once, in order, as a stream."""
    return isinstance(records, Sequence) and not isinstance(records, (str, bytes)) or (
        hasattr(records, "__len__") and hasattr(records, "__getitem__") and not isinstance(records, (dict, str, bytes))
    )


def layout_of(records: object) -> tuple[list[int], int, int] | None:
    """The layout a sharded source declares through ``_dataio_layout()``:
    (samples per shard in storage order, shuffle window, spread), the spread
    1 when the source names none (a ``(counts, window)`` pair); None for a
    source without one."""
    f = getattr(records, "_dataio_layout", None)
    if f is None:
        return None
    counts, window, *rest = f()
    return list(counts), int(window), int(rest[0]) if rest else 1


class TaggedArray:
    """A numpy view of a dtype numpy lacks (``bfloat16``, ``float8_e4m3fn``,
    ``float8_e5m2``): ``array`` holds the raw bits (``uint16``/``uint8``),
    ``dtype_name`` the real dtype. Slots of a :class:`FinishedBatch` carry
    such dtypes this way; the loader turns them into torch tensors of the
    real dtype (or hands ``array`` out for ``output="numpy"``)."""

    __slots__ = ("array", "dtype_name")

    def __init__(self, array: Any, dtype_name: str) -> None:
        self.array = array
        self.dtype_name = dtype_name

    def __reduce__(self) -> tuple[type[TaggedArray], tuple[Any, str]]:
        return (TaggedArray, (self.array, self.dtype_name))

    def __repr__(self) -> str:
        return f"TaggedArray({self.dtype_name}{list(getattr(self.array, 'shape', []))})"


@dataclasses.dataclass(frozen=True)
class PlannedBatch:
    """One batch, decided before anything is read.

    ``seq`` numbers the epoch's batches in submit order from 0 (per plan,
    whatever ``start`` it resumes from). ``indices[i]`` is row ``i``'s record
    index (its place in a sized source, or its arrival position in a stream:
    the key of its random draws), ``positions[i]`` its position in this
    rank's schedule, ``records[i]`` the raw record as the source gave it
    (before record maps). ``end_position`` is the resume point after this
    batch."""

    seq: int
    end_position: int
    indices: list[int]
    positions: list[int]
    records: list[Any]

    def __len__(self) -> int:
        return len(self.indices)

    def as_tuple(self) -> tuple[int, int, list[int], list[int], list[Any]]:
        return (self.seq, self.end_position, self.indices, self.positions, self.records)


class ExecutedBatch(Protocol):
    """What ``EpochRun.next_batch()`` returns: a :class:`FinishedBatch` or the
    native loader's batch. The loader reads these and nothing else."""

    @property
    def keys(self) -> list[str]: ...

    @property
    def indices(self) -> list[int]: ...

    @property
    def end_position(self) -> int: ...

    def take_slots(self) -> dict[str, Any]: ...

    def errors(self) -> list[RowError]: ...

    def contexts(self) -> list[Any]: ...


@dataclasses.dataclass
class FinishedBatch:
    """A batch executed away from the loader, in a picklable form.

    ``slots`` maps each slot to a numpy array (rows first; a
    :class:`TaggedArray` for dtypes numpy lacks) or a list of those /
    ``None`` (variable shapes, inactive optional slots). It offers the same
    methods as the native batch (:class:`ExecutedBatch`), so the loader
    treats both alike. ``stats`` is the executing engine's counters for this
    batch, when known."""

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
    """Everything an executor needs to run one epoch of a loader.

    ``records`` is the loader's record source (a ``collate()`` source already
    flattened, each record tagged with :data:`COLLATE_KEY`); ``start`` and
    ``global_offset`` are the resume point; ``order``, ``on_failure``,
    ``concurrency``, ``context`` and ``prefetch`` are the loader's options of
    the same names, checked and with their defaults filled in."""

    pipeline: Pipeline
    records: Iterable[Any]
    seed: int | None
    epoch: int
    shard: Shard
    start: int
    global_offset: int
    concurrency: int
    order: str  # "submit" or "completion"
    on_failure: str  # "raise" or "skip"
    context: Callable[[Any], Any] | None
    prefetch: int
    #: A host-partitioned order's resume point: per canonical partition, the
    #: samples consumed before this run (empty: none).
    partition_offsets: tuple[int, ...] = ()
    #: The loader's memory of the objects its ranged decoders read (their
    #: sizes and versions, ``_native.ObjectMetas``), shared by its epochs so
    #: that an object is asked about once per loader, not once per epoch; an
    #: executor running in this process passes it on, others may ignore it.
    object_metas: Any = dataclasses.field(default=None, compare=False, repr=False)
    #: ``order="completion"``: end positions of the batches a previous run of
    #: this epoch delivered past ``start``; they are not delivered again. An
    #: executor that cannot skip them refuses a job that has any.
    skip_ends: tuple[int, ...] = ()

    @property
    def sized(self) -> bool:
        """Whether the records are a sized source (:func:`is_sequence`)."""
        return is_sequence(self.records)

    def plan(self) -> Iterator[PlannedBatch]:
        """The epoch's batches in submit order, from this job's position on.

        Planning runs the record maps only where the shape stage needs them
        (the ``group_by`` key); raw records are returned either way, and the
        executor runs the maps again where it executes."""
        planner = _native.BatchPlanner(
            self.pipeline.compiled(),
            self.records,
            sized=self.sized,
            prepare=self.pipeline.record_map_fn(),
            seed=self.seed,
            epoch=self.epoch,
            shard_id=self.shard["id"],
            shard_of=self.shard["of"],
            pad=self.shard["pad"],
            start=self.start,
            global_offset=self.global_offset,
            hosts=self.shard.get("hosts", 1),
            canonical_hosts=self.shard.get("canonical_hosts", 1),
            partition_offsets=list(self.partition_offsets),
        )
        skip = set(self.skip_ends)
        seq = 0
        for _, end, indices, positions, records in planner:
            if end in skip:
                continue  # delivered by the run this one resumes
            yield PlannedBatch(seq, end, indices, positions, records)
            seq += 1

    def run_options(self) -> dict[str, Any]:
        """The options :func:`dataio.executor.run_planned` takes, for shipping to a worker."""
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

    def next_batch(self) -> ExecutedBatch | None: ...

    @property
    def position(self) -> int: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Executor(Protocol):
    """Who runs a loader's epochs: ``run(executor=...)`` takes one (or the
    name a plugin registered one under). ``close()``, when it has one, is
    called when the loader closes."""

    def start(self, job: EpochJob) -> EpochRun: ...
