"""The plugin registry: discovery through entry points, lazy loading, name
conflicts, blocking, and the third-party mem:// plugin."""

from __future__ import annotations

import importlib.metadata
import json
import uuid

import pytest

import dataio
from dataio._plugins import PluginHost
from dataio.errors import PluginError
from dataio.plugins import list_backends, list_plugins, register_backend
from dataio.testing import BackendConformance

from conftest import run_python


def test_installed_dataio_is_ours() -> None:
    dist = importlib.metadata.distribution("dataio")
    assert dist.version == dataio.__version__
    assert dataio._native.ABI_VERSION == 1


def test_the_core_registers_its_local_backend_through_the_hook() -> None:
    reg = list_backends()["file"]
    assert reg.plugin == "dataio.builtin"
    assert "local filesystem" in reg.description


def test_the_memfs_plugin_is_discovered_by_entry_point() -> None:
    eps = {ep.name for ep in importlib.metadata.entry_points(group="dataio")}
    assert "memfs" in eps, "the test plugin dataio-memfs must be installed for the test run"
    assert list_backends()["mem"].plugin == "memfs"


def test_plugins_load_lazily_not_at_import() -> None:
    r = run_python(
        "import sys, dataio\n"
        "assert 'dataio_memfs' not in sys.modules, 'loaded at import'\n"
        "dataio.write('mem://b/k', b'v')\n"
        "assert 'dataio_memfs' in sys.modules\n"
        "print(dataio.read('mem://b/k').decode())\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "v"


def test_disabled_plugins_are_not_loaded() -> None:
    r = run_python(
        "import sys, dataio\n"
        "try:\n"
        "    dataio.read('mem://b/k')\n"
        "except dataio.errors.UnsupportedSchemeError as e:\n"
        "    print('refused', e)\n"
        "assert 'dataio_memfs' not in sys.modules\n"
        "print([ (p.name, p.status) for p in dataio.plugins.list_plugins() if p.name == 'memfs'])\n",
        env={"DATAIO_DISABLE_PLUGINS": "memfs"},
    )
    assert r.returncode == 0, r.stderr
    assert "refused" in r.stdout
    assert "('memfs', 'disabled')" in r.stdout


def test_two_plugins_claiming_a_scheme_are_named() -> None:
    h = PluginHost()
    h._backend_registrar("first-plugin")("dup", lambda: None)
    with pytest.raises(PluginError) as info:
        h._backend_registrar("second-plugin")("dup", lambda: None)
    assert "first-plugin" in str(info.value) and "second-plugin" in str(info.value)


def test_runtime_registration_cannot_steal_a_plugin_scheme() -> None:
    with pytest.raises(PluginError, match="memfs"):
        register_backend("mem", object())


def test_two_plugins_claiming_an_op_are_named() -> None:
    h = PluginHost()
    h._op_registrar("p1")("my_op", lambda x: x, kind="transform")
    with pytest.raises(PluginError, match="p1.*p2"):
        h._op_registrar("p2")("my_op", lambda x: x, kind="transform")


def test_a_broken_plugin_is_reported_not_fatal(tmp_path) -> None:
    # A plugin whose module fails to import: dataio keeps working and reports why.
    dist = tmp_path / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[dataio]\nbroken = broken_plugin_module_that_does_not_exist\n")
    r = run_python(
        "import dataio\n"
        "dataio.write('mem://b/k', b'ok')\n"
        "print([(p.name, p.status, p.detail) for p in dataio.plugins.list_plugins() if p.name == 'broken'])\n",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    assert "'broken', 'failed'" in r.stdout and "ModuleNotFoundError" in r.stdout


def test_a_python_backend_missing_methods_is_refused() -> None:
    register_backend("halfbaked", object())
    with pytest.raises(PluginError, match=r"not a dataio backend \(missing head\(\)"):
        dataio.read("halfbaked://x/y")


def test_capability_report_lists_every_package() -> None:
    r = run_python("from dataio.__main__ import main; main(['--json'])")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    names = {p["name"] for p in report["plugins"]}
    for pkg in ("dataio", "dataio-s3", "dataio-gcs", "dataio-azure", "dataio-hf", "dataio-rdma", "dataio-gds"):
        assert pkg in names, f"{pkg} missing from the capability report: {sorted(names)}"
    for row in report["plugins"]:
        assert row["status"] in ("ok", "unavailable", "not implemented yet", "error", "disabled"), row
    libs = {lib["name"]: lib for lib in report["libraries"]}
    assert set(libs) >= {"cuda-driver", "nvjpeg", "cufile", "libfabric"}
    for lib in libs.values():
        assert lib["found"] or lib["reason"], "a missing library must say why"
    assert report["pools"]["cpu_threads"] >= 1


def test_capability_report_text() -> None:
    r = run_python("import runpy; runpy.run_module('dataio', run_name='__main__')")
    assert r.returncode == 0, r.stderr
    assert "packages and plugins:" in r.stdout and "native libraries" in r.stdout
    assert "dataio-memfs" in r.stdout


class TestMemfsPlugin(BackendConformance):
    """The pure-Python third-party plugin passes the same suite as the core."""

    @pytest.fixture
    def base_uri(self) -> str:
        return f"mem://bucket/{uuid.uuid4().hex}/"


class TestNativeAbiBackend(BackendConformance):
    """A backend handed over as a v1 C-ABI capsule, like a plugin's native module does."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def registered(cls) -> None:
        if "abimem" not in list_backends():
            register_backend("abimem", dataio._native._abi_memory_backend)

    @pytest.fixture
    def base_uri(self) -> str:
        return f"abimem://bucket/{uuid.uuid4().hex}/"


def test_a_capsule_is_adopted_once() -> None:
    cap = dataio._native._abi_memory_backend()
    dataio._native.register_backend("abionce", cap)
    with pytest.raises(ValueError, match="already"):
        dataio._native.register_backend("abionce2", cap)


def test_a_foreign_capsule_is_refused() -> None:
    import datetime

    capsule = datetime.datetime_CAPI  # a capsule with another name
    with pytest.raises(TypeError, match="dataio.backend.v1"):
        dataio._native.register_backend("foreign", capsule)
