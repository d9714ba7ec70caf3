"""The workloads of the matrix and what they share.

A workload names its candidates (dataio first), makes its data once in the
parent (``prepared``), and says how outputs are compared. The candidates
themselves live in ``image.py``, ``records.py`` and ``remote.py`` and are
imported only by the child process that runs them.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .harness import Cell, Unavailable

# name -> "module:class", in the order they run.
REGISTRY = {
    "image": "dataio_bench.image:ImageWorkload",
    "bucket": "dataio_bench.bucket:BucketWorkload",
    "bytes": "dataio_bench.records:BytesWorkload",
    "safetensors": "dataio_bench.records:LatentWorkload",
    "parquet": "dataio_bench.records:ParquetWorkload",
    "s3": "dataio_bench.remote:S3Workload",
}

DATAIO_HINT = "dataio is not importable: install it, or add a .pth pointing at packages/dataio-core/src (see docs/benchmark.md)"


class Workload:
    """One row group of the matrix."""

    name = ""
    title = ""
    #: candidates that are yardsticks rather than competitors (decode-only)
    limits: tuple[str, ...] = ()
    #: largest difference of the per-sample digest accepted vs dataio
    #: (absolute when ``relative`` is False, else relative to the value)
    tol = 1e-6
    relative = True

    def candidates(self) -> dict[str, type[Cell]]:
        raise NotImplementedError

    def labels(self) -> dict[str, str]:
        return {name: getattr(cls, "LABEL", name) for name, cls in self.candidates().items()}

    def peers(self) -> list[str]:
        return [c for c in self.candidates() if c != "dataio" and c not in self.limits]

    def unavailable(self) -> str | None:
        """Why the whole workload cannot run here, or None."""
        return None

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        """Settings every candidate of this workload gets (batch size, epochs, ...)."""
        return {"epochs": args.epochs, "batch": 64, "prefetch": args.prefetch, "concurrency": args.concurrency}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        """Makes (or finds) the data; yields what the candidates need to read it."""
        raise NotImplementedError
        yield {}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        """One line: the data and the work, for the report."""
        return self.title


def get_workload(name: str) -> Workload:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(REGISTRY)}") from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()


class DataioCell(Cell):
    """dataio itself: a pipeline bound to records, ``run("torch")``; after the
    timed epochs the loader's own stats say where it was waiting."""

    LABEL = "dataio"
    MODULES = ("torch", "dataio")
    HINT = DATAIO_HINT

    def pipeline(self) -> Any:
        raise NotImplementedError

    def records(self) -> Any:
        raise NotImplementedError

    def run_options(self) -> dict[str, Any]:
        return {}

    def start(self) -> None:
        import dataio

        self.pipe = self.pipeline()
        self.loader = self.pipe.bind(self.records()).run("torch", concurrency=self.cfg["concurrency"], **self.run_options())
        cpu, io_threads, _ = dataio._native.pool_info()
        self.info = {"cpu_pool_threads": cpu, "io_threads": io_threads, "concurrency": self.cfg["concurrency"], "plan": self.pipe.describe()}

    def epoch(self) -> Iterator[Any]:
        yield from self.loader

    def close(self) -> None:
        self.loader.close()

    def finish(self, res: dict[str, Any]) -> None:
        report = self.loader.report()  # the last timed epoch, from its start
        res["dataio_waiting_on"] = report.waiting_on
        res["dataio_report"] = str(report)


def check_installed(module: str, hint: str) -> None:
    """For a workload's ``unavailable``: raises Unavailable when ``module`` cannot be found."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise Unavailable(f"{module} is not installed ({hint})")
