"""Entry-point module of dataio-ray: registers the executor ``"ray"`` and
the plugin's row of the capability report. Imports neither ray nor the
executor: both load when a run names the executor."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping
from typing import Any

from dataio.hookspecs import CapabilityRegistrar, ExecutorRegistrar, hookimpl

from . import __version__


def make_executor() -> Any:
    """``run(executor="ray")``: a :class:`~dataio_ray.RayExecutor` with its
    defaults, on the cluster ``ray.init()`` finds (``RAY_ADDRESS``, a running
    local cluster, or a new local one)."""
    from .executor import RayExecutor

    return RayExecutor()


@hookimpl
def dataio_register_executors(register: ExecutorRegistrar) -> None:
    register("ray", make_executor, description="batches computed by Ray actors on a cluster's CPU workers (dataio-ray)")


def report() -> Mapping[str, Any]:
    if importlib.util.find_spec("ray") is None:
        return {"status": "unavailable", "detail": "ray is not installed (pip install 'ray[data,train]==2.60.0')"}
    ray_version = importlib.metadata.version("ray")
    return {"status": "ok", "detail": f"executor 'ray' and to_dataset() on ray {ray_version} (dataio-ray {__version__})"}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-ray", report)
