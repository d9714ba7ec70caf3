"""The plugin's wiring: the executor name, the capability row, lazy imports,
argument checks; and that the test cluster really is confined to loopback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dataio
from dataio.errors import InvalidArgumentError
from dataio.testing import PluginConformance


class TestRayPlugin(PluginConformance):
    entry_point = "ray"
    package = "dataio-ray"


def test_registers_the_ray_executor() -> None:
    from dataio.plugins import list_executors

    mine = {name: reg for name, reg in list_executors().items() if reg.plugin == "ray"}
    assert list(mine) == ["ray"]


def test_the_installed_dataio_is_ours() -> None:
    # The Python registry has an unrelated "dataio"; ours has the executor seam.
    from dataio.executor import EpochJob, run_planned

    assert callable(run_planned) and hasattr(EpochJob, "plan")


def test_executor_name_resolves_without_starting_ray() -> None:
    code = (
        "import sys, dataio.executor as e; ex = e.resolve_executor('ray'); "
        "print(type(ex).__module__, type(ex).__name__, ex.num_workers, 'ray' in sys.modules and __import__('ray').is_initialized())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["dataio_ray.executor", "RayExecutor", "2", "False"]


def test_importing_the_plugin_does_not_import_ray() -> None:
    code = "import sys, dataio_ray, dataio_ray.plugin; print('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_capability_row_names_the_ray_version() -> None:
    import importlib.metadata

    rows = {r["name"]: r for r in dataio.capabilities.report()["plugins"]}
    assert importlib.metadata.version("ray") in rows["dataio-ray"]["detail"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_workers": 0}, "num_workers"),
        ({"num_cpus_per_worker": -1}, "num_cpus_per_worker"),
        ({"max_batch_retries": -1}, "max_batch_retries"),
        ({"window": 0}, "window"),
        ({"task_timeout": 0}, "task_timeout"),
    ],
)
def test_bad_arguments_are_invalid_argument_errors(kwargs: dict[str, Any], match: str) -> None:
    from dataio_ray import RayExecutor

    with pytest.raises(InvalidArgumentError, match=match):
        RayExecutor(**kwargs)


def _listening(path: Path) -> list[str]:
    """Local addresses of the listening TCP sockets in /proc/net/tcp{,6}."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A":  # TCP_LISTEN
            out.append(fields[1].split(":")[0])
    return out


def test_ray_listens_on_loopback_only(ray_cluster: Any) -> None:
    if not ray_cluster.namespace.isolated:
        pytest.skip(f"the cluster runs in {ray_cluster.namespace.description}")
    # This thread is in the cluster's namespace: /proc/thread-self/net is its view.
    v4 = _listening(Path("/proc/thread-self/net/tcp"))
    v6 = _listening(Path("/proc/thread-self/net/tcp6"))
    assert v4 or v6, "Ray listens somewhere"
    assert all(a == "0100007F" for a in v4), v4  # 127.0.0.1
    # IPv4-mapped 127.0.0.1 (::ffff:127.0.0.1) or ::1.
    assert all(a in ("0000000000000000FFFF00000100007F", "00000000000000000000000001000000") for a in v6), v6
    # And the namespace has no other interface than loopback.
    devices = [ln.split(":")[0].strip() for ln in Path("/proc/thread-self/net/dev").read_text().splitlines()[2:]]
    assert devices == ["lo"]
