"""The execution contract (``dataio.contract``) is a leaf: the builder
(``pipeline``), the runner (``loader``) and the executors depend on it and it
on none of them; no import among those modules is deferred to dodge a cycle.
And what the contract offers: the re-exports of ``dataio.executor``,
``TaggedArray``, ``is_sequence``, the native ``DeliveryTracker``, and
``BoundPipeline.run``/``epoch_job`` with the loader's own keywords."""

from __future__ import annotations

import ast
import inspect
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dataio
import dataio.contract as contract
import dataio.executor as executor
from dataio.errors import InvalidArgumentError
from dataio.loader import Loader
from dataio.pipeline import BoundPipeline

PACKAGE = Path(contract.__file__).parent
EXECUTION = ("dataio.pipeline", "dataio.loader", "dataio.executor")

# A fresh interpreter with the ``dataio`` package object made bare (its
# ``__init__``, which imports everything public, does not run), so only what
# the imported module itself pulls in gets loaded.
BARE = """
import importlib.util, json, sys, types
spec = importlib.util.find_spec("dataio")
pkg = types.ModuleType("dataio")
pkg.__path__ = list(spec.submodule_search_locations)
sys.modules["dataio"] = pkg
import {module}
print(json.dumps(sorted(m for m in sys.modules if m.startswith("dataio."))))
"""


def _bare_import(module: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", BARE.format(module=module)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_contract_imports_nothing_of_execution() -> None:
    loaded = _bare_import("dataio.contract")
    assert "dataio.contract" in loaded
    assert not [m for m in EXECUTION if m in loaded], loaded


@pytest.mark.parametrize("module", EXECUTION)
def test_each_execution_module_imports_on_its_own(module: str) -> None:
    # With a cycle among them, importing one of them first would fail (or
    # need a deferred import somewhere to get through).
    assert module in _bare_import(module)


@pytest.mark.parametrize("name", ["contract", "pipeline", "loader", "executor"])
def test_no_deferred_import_among_the_execution_modules(name: str) -> None:
    tree = ast.parse((PACKAGE / f"{name}.py").read_text())
    deferred = [
        f"{name}.py:{node.lineno}: from .{node.module} import ..."
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in ("contract", "pipeline", "loader", "executor")
    ]
    assert not deferred


def test_dataio_executor_keeps_exporting_the_contract() -> None:
    for name in ("PlannedBatch", "FinishedBatch", "EpochJob", "EpochRun", "Executor"):
        assert name in executor.__all__ and getattr(executor, name) is getattr(contract, name), name
    for name in ("LocalExecutor", "run_planned", "resolve_executor"):
        assert name in executor.__all__ and callable(getattr(executor, name)), name
    assert set(contract.__all__) <= set(dir(contract))


def test_the_delivery_tracker_is_the_native_one() -> None:
    assert contract.DeliveryTracker is dataio._native.DeliveryTracker
    tracker = contract.DeliveryTracker(7)
    tracker.delivered(1, 20)
    assert (tracker.position, tracker.ahead) == (7, 1)
    tracker.delivered(0, 10)
    assert (tracker.position, tracker.ahead) == (20, 0)


def test_tagged_array_pickles_and_converts_to_its_real_dtype() -> None:
    bits = np.array([[0x3F80, 0x4000]], dtype=np.uint16)  # bfloat16 1.0, 2.0
    tagged = pickle.loads(pickle.dumps(contract.TaggedArray(bits, "bfloat16")))
    assert isinstance(tagged, contract.TaggedArray) and tagged.dtype_name == "bfloat16"
    assert np.array_equal(tagged.array, bits)
    assert "bfloat16" in repr(tagged)


@pytest.mark.parametrize(
    "records, sized",
    [([{"x": 1}], True), (({"x": 1},), True), (range(3), True), (iter([{"x": 1}]), False), ({"x": 1}, False), ("ab", False), (b"ab", False)],
    ids=["list", "tuple", "range", "iterator", "dict", "str", "bytes"],
)
def test_is_sequence(records: Any, sized: bool) -> None:
    assert contract.is_sequence(records) is sized


def _keywords(fn: Any, skip: int) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(fn).parameters.values())[skip:]
    return [(p.name, p.kind, p.default) for p in params]


def test_run_spells_out_the_loaders_keywords() -> None:
    assert _keywords(BoundPipeline.run, 1) == _keywords(Loader.__init__, 2)
    assert inspect.signature(BoundPipeline.run).return_annotation in ("Loader", Loader)
    # epoch_job: no output, executor, or JAX placement (delivery only, output="jax").
    delivery = ("executor", "sharding", "devices", "prefetch_to_device")
    no_output_or_executor = [k for k in _keywords(Loader.__init__, 3) if k[0] not in delivery]
    assert _keywords(BoundPipeline.epoch_job, 1) == no_output_or_executor


class _Capture:
    """An executor that keeps the job the loader starts and runs nothing."""

    def __init__(self) -> None:
        self.jobs: list[contract.EpochJob] = []

    def start(self, job: contract.EpochJob) -> Any:
        self.jobs.append(job)
        return executor.LocalExecutor().start(job)


def test_epoch_job_is_the_job_run_starts_and_starts_nothing() -> None:
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2))
    records = [{"x": i} for i in range(5)]
    options: dict[str, Any] = dict(seed=3, epoch=2, shard={"id": 1, "of": 2}, order="completion", prefetch=1, concurrency=4)
    capture = _Capture()
    pipe.bind(records).run("numpy", executor=capture, **options).close()
    job = pipe.bind(records).epoch_job(**options)
    assert job == capture.jobs[0]
    assert job.shard == {"id": 1, "of": 2, "pad": False, "hosts": 1, "canonical_hosts": 1} and job.start == 0
    # A one-pass source is not touched: the job plans it later.
    stream = iter(records)
    assert pipe.bind(stream).epoch_job().records is stream and next(stream) == {"x": 0}
    with pytest.raises(InvalidArgumentError, match="order"):
        pipe.bind(records).epoch_job(order="random")
