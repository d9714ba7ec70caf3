"""dataio plugin: run a bound pipeline's batches on a Ray cluster.

* ``RayExecutor(num_workers=N, ...)`` — ``pipe.bind(records).run("torch",
  executor=RayExecutor(...))`` (or ``executor="ray"`` with defaults): the
  same ``dataio.Loader``, its batches computed by Ray actors, bit for bit
  those of a local run, resumable with any number of workers, surviving lost
  workers and nodes.
* ``to_dataset(bound, **run_options)`` — a ``ray.data.Dataset`` of the
  pipeline's samples, made by the native engine inside Ray Data's read tasks.

``ray`` is imported when one of these is first used, not at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import RayExecutorError, WorkersLostError

if TYPE_CHECKING:
    from .dataset import to_dataset
    from .executor import RayExecutor

__version__ = "0.1.0"
__all__ = ["RayExecutor", "RayExecutorError", "WorkersLostError", "__version__", "to_dataset"]


def __getattr__(name: str) -> Any:
    # Importing ray takes seconds: only when the executor or the dataset is used.
    if name == "RayExecutor":
        from .executor import RayExecutor

        return RayExecutor
    if name == "to_dataset":
        from .dataset import to_dataset

        return to_dataset
    raise AttributeError(f"module 'dataio_ray' has no attribute {name!r}")
