"""``to_dataset``: a bound pipeline as a ``ray.data.Dataset``.

The epoch is planned here, on the driver (which records form each batch, in
order; nothing is read), and split into contiguous runs of planned batches.
Each run becomes one Ray Data read task that executes its batches with the
native engine (:func:`dataio.executor.run_planned`) and yields one block per
batch. So the rows are the pipeline's samples, bit for bit those of a local
run with the same seed and epoch; Ray Data streams them, and
``ds.iter_torch_batches()`` or Ray Train's ``get_dataset_shard`` consume
them like any dataset.

A one-pass iterator cannot be planned without reading it all on the driver
and holding it there, and cannot be read again for a second pass over the
dataset: it is refused with ``InvalidArgumentError`` (use a sequence, or
``run(executor=RayExecutor(...))``, which streams it).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.data import Dataset, read_datasource
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from dataio.contract import EpochJob, PlannedBatch, TaggedArray
from dataio.errors import InvalidArgumentError
from dataio.executor import run_planned

if TYPE_CHECKING:
    from dataio.pipeline import BoundPipeline, Pipeline

__all__ = ["INDEX_COLUMN", "KEY_COLUMN", "DataioDatasource", "to_dataset"]

KEY_COLUMN = "__key__"
INDEX_COLUMN = "__index__"


def epoch_job(bound: BoundPipeline, run_options: dict[str, Any]) -> EpochJob:
    """The ``EpochJob`` that ``bound.run(**run_options)`` would execute: the
    loader's own argument checks and defaults make it, so ``to_dataset``
    accepts the options ``run()`` does."""
    if "executor" in run_options:
        raise InvalidArgumentError("to_dataset() executes inside Ray Data's tasks; leave out executor=")
    return bound.epoch_job(**run_options)


def _array(value: Any) -> Any:
    """bfloat16/float8 slots, which numpy lacks, arrive as their raw bits (uint16/uint8)."""
    return np.asarray(value.array if isinstance(value, TaggedArray) else value)


def _column(values: Any) -> Any:
    """A slot's rows as Ray Data takes them: the array itself (rows first),
    or for variable shapes a list of arrays."""
    if isinstance(values, list):
        return [None if v is None else _array(v) for v in values]
    return _array(values)


def _read(pipeline: Pipeline, planned: list[PlannedBatch], options: dict[str, Any], with_keys: bool) -> Iterator[Any]:
    # A Ray task reserves its CPUs (one by default); the engine's pool in this
    # worker process is sized to them unless the user sized it.
    if "DATAIO_CPU_THREADS" not in os.environ:
        import ray

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
        os.environ["DATAIO_CPU_THREADS"] = str(max(1, int(cpus)))
    for finished in run_planned(pipeline, planned, **options):
        columns = {name: _column(v) for name, v in finished.slots.items()}
        if with_keys:
            columns[KEY_COLUMN] = list(finished.keys)
            columns[INDEX_COLUMN] = np.asarray(finished.indices, dtype=np.int64)
        yield BlockAccessor.batch_to_block(columns)


class DataioDatasource(Datasource):
    """A Ray Data datasource over one epoch of a bound pipeline."""

    def __init__(self, job: EpochJob, *, with_keys: bool = False, batches_per_task: int = 8) -> None:
        super().__init__()
        if not isinstance(batches_per_task, int) or isinstance(batches_per_task, bool) or batches_per_task < 1:
            raise InvalidArgumentError(f"batches_per_task must be a positive integer, got {batches_per_task!r}")
        if not job.sized:
            raise InvalidArgumentError(
                "to_dataset() needs a sized record source (a list, or any object with len() and indexing): "
                "a one-pass iterator cannot be planned on the driver nor read again for a second pass; "
                "use run(executor=dataio_ray.RayExecutor(...)), which streams it to the workers"
            )
        if job.context is not None:
            raise InvalidArgumentError("to_dataset() rows carry slots only; context= has no column to go to (leave it out)")
        self._pipeline = job.pipeline
        self._options = job.run_options()
        self._planned = list(job.plan())
        self._with_keys = with_keys
        self._batches_per_task = batches_per_task

    def get_name(self) -> str:
        return "dataio"

    def estimate_inmemory_data_size(self) -> int | None:
        return None  # known only once decoded

    def num_rows(self) -> int:
        return sum(len(p) for p in self._planned)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None) -> list[ReadTask]:
        planned = self._planned
        if not planned:
            return []
        # Ray Data asks for many small tasks by default; each task starts an
        # engine, so a task takes batches_per_task batches at least.
        n = max(1, min(int(parallelism), -(-len(planned) // self._batches_per_task)))
        # Contiguous runs of batches, in plan order: with Ray Data's
        # preserve_order the rows come out in the local loader's order.
        bounds = [round(i * len(planned) / n) for i in range(n + 1)]
        tasks = []
        for lo, hi in itertools.pairwise(bounds):
            part = planned[lo:hi]
            meta = BlockMetadata(num_rows=sum(len(p) for p in part), size_bytes=None, input_files=None, exec_stats=None)
            read = functools.partial(_read, self._pipeline, part, self._options, self._with_keys)
            tasks.append(ReadTask(read, meta, per_task_row_limit=per_task_row_limit))
        return tasks


def to_dataset(
    bound: BoundPipeline,
    *,
    with_keys: bool = False,
    batches_per_task: int = 8,
    num_cpus: float = 1,
    override_num_blocks: int | None = None,
    task_concurrency: int | None = None,
    **run_options: Any,
) -> Dataset:
    """One epoch of ``bound`` (``pipe.bind(records)``) as a ``ray.data.Dataset``.

    ``run_options`` are those of ``run()`` that decide the samples:
    ``seed``, ``epoch``, ``shard``, ``on_failure`` (and ``concurrency``,
    the records each task keeps in flight). Rows are
    samples: one column per slot (numpy arrays; variable-shape slots as
    variable-shaped tensors), and with ``with_keys=True`` also ``__key__``
    and ``__index__``. Rows skipped with ``on_failure="skip"`` are left out.

    Each read task runs the native engine over a contiguous run of at least
    ``batches_per_task`` of the epoch's batches on ``num_cpus`` CPUs (its
    engine pool gets as many threads); ``override_num_blocks`` caps the
    number of tasks and ``task_concurrency`` the tasks running at once.
    Set ``DataContext.get_current().execution_options.preserve_order = True``
    for the local loader's order. For another epoch, call again with
    ``epoch=``.
    """
    job = epoch_job(bound, run_options)
    return read_datasource(
        DataioDatasource(job, with_keys=with_keys, batches_per_task=batches_per_task),
        num_cpus=num_cpus,
        override_num_blocks=override_num_blocks,
        concurrency=task_concurrency,
    )
