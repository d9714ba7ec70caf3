"""The errors dataio-ray adds to the dataio tree (all are ``dataio.DataioError``)."""

from __future__ import annotations

from typing import Any

from dataio.errors import DataioError

__all__ = ["RayExecutorError", "WorkersLostError"]


class RayExecutorError(DataioError):
    """The Ray executor cannot go on (no cluster, a worker error that is not a row's)."""


class WorkersLostError(RayExecutorError):
    """Work could not be finished on the cluster: every worker is gone and
    none could be started in time, or one batch was lost on more workers
    than the retry budget allows. ``batch`` is the sequence number of the
    batch that could not be computed (``None`` when no worker was left at
    all), ``attempts`` how often it was tried, ``workers`` a line per worker
    saying how it ended."""

    batch: int | None = None
    attempts: int = 0
    workers: list[str]

    def __init__(self, message: str, *, batch: int | None = None, attempts: int = 0, workers: list[str] | None = None) -> None:
        super().__init__(message)
        self.batch = batch
        self.attempts = attempts
        self.workers = list(workers or [])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (str(self), self.batch, self.attempts, self.workers))


def _rebuild(message: str, batch: int | None, attempts: int, workers: list[str]) -> WorkersLostError:
    return WorkersLostError(message, batch=batch, attempts=attempts, workers=workers)

