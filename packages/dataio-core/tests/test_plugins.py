"""The plugin registry: discovery through entry points, lazy loading, name
conflicts, blocking, and the third-party mem:// plugin."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pickle
import textwrap
import tomllib
import uuid
from pathlib import Path

import pytest
from conftest import run_python

import dataio
from dataio._plugins import PluginHost
from dataio.errors import InvalidArgumentError, PluginError
from dataio.plugins import install_hint, list_backends, register_backend
from dataio.testing import BackendConformance


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
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))},
    )
    assert r.returncode == 0, r.stderr
    assert "'broken', 'failed'" in r.stdout and "ModuleNotFoundError" in r.stdout


def test_a_python_backend_missing_methods_is_refused() -> None:
    register_backend("halfbaked", object())
    with pytest.raises(PluginError, match=r"not a dataio backend \(missing head\(\)"):
        dataio.read("halfbaked://x/y")


def _protocol_methods(protocol: type) -> list[str]:
    return [name for name, member in vars(protocol).items() if callable(member) and not name.startswith("_")]


def test_the_required_backend_methods_are_the_protocols() -> None:
    """One source: the registry checks the methods of PythonBackend less the
    optional ones, and the native layer's own check names the same."""
    from dataio.hookspecs import OPTIONAL_BACKEND_METHODS, REQUIRED_BACKEND_METHODS, PythonBackend

    methods = _protocol_methods(PythonBackend)
    assert set(OPTIONAL_BACKEND_METHODS) <= set(methods)
    assert list(REQUIRED_BACKEND_METHODS) == [m for m in methods if m not in OPTIONAL_BACKEND_METHODS]
    assert list(REQUIRED_BACKEND_METHODS) == ["head", "read_range", "list", "exists"]
    native = (Path(__file__).resolve().parents[1] / "rust" / "backends.rs").read_text()
    listed = "for required in [" + ", ".join(f'"{m}"' for m in REQUIRED_BACKEND_METHODS) + "]"
    assert listed in native, f"packages/dataio-core/rust/backends.rs must check the same methods: {listed}"


def test_the_registry_refuses_each_missing_required_method_and_accepts_a_read_only_backend() -> None:
    from dataio.hookspecs import REQUIRED_BACKEND_METHODS

    def method(name: str):
        if name == "head":
            return lambda self, uri: {"size": 1}
        if name == "read_range":
            return lambda self, uri, offset, size: b"x"[offset : offset + size]
        if name == "list":
            return lambda self, prefix, recursive: []
        return lambda self, uri: True

    tag = uuid.uuid4().hex[:8]
    for missing in REQUIRED_BACKEND_METHODS:
        cls = type("Partial", (), {m: method(m) for m in REQUIRED_BACKEND_METHODS if m != missing})
        register_backend(f"partial-{missing.replace('_', '-')}-{tag}", cls())
        with pytest.raises(PluginError, match=rf"missing {missing}\(\)"):
            dataio.exists(f"partial-{missing.replace('_', '-')}-{tag}://b/k")
    read_only = type("ReadOnly", (), {m: method(m) for m in REQUIRED_BACKEND_METHODS})
    register_backend(f"readonly-{tag}", read_only())
    assert dataio.exists(f"readonly-{tag}://b/k")
    assert dataio.read(f"readonly-{tag}://b/k") == b"x"


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


# -- a tiny plugin, installed for one subprocess ------------------------------------

TINY_PLUGIN = """
import dataio


class Executor:
    def __init__(self, tag):
        self.tag = tag

    def start(self, job):
        raise NotImplementedError("a registry test: never started")


class Reader:
    def read_safetensors(self, files, device):
        return {"files": list(files), "device": device}

    def info(self):
        return {"path": "tiny"}


class Api:
    serve = staticmethod(lambda *args, **kwargs: ("tiny serve", args, kwargs))


@dataio.hookimpl
def dataio_register_executors(register):
    register("tiny", lambda: Executor("made by the tiny plugin"), description="an executor for the registry tests")


@dataio.hookimpl
def dataio_register_device_readers(register):
    register("tinydev", Reader(), description="a device reader for the registry tests")


@dataio.hookimpl
def dataio_register_namespaces(register):
    register("rdma", Api, description="stands in for dataio-rdma")
"""


def install_tiny_plugin(root: Path, module: str = "dataio_tiny_plugin", entry_point: str = "tiny", code: str = TINY_PLUGIN) -> dict[str, str]:
    """Writes a plugin module and the dist-info that publishes it under the
    ``dataio`` entry-point group into ``root``; returns the environment that
    puts it on the path of a subprocess (with dataio-rdma blocked: the tiny
    plugin claims its ``rdma`` namespace)."""
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    dist = root / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[dataio]\n{entry_point} = {module}\n")
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        "DATAIO_DISABLE_PLUGINS": "rdma",
    }


def test_a_plugin_registers_an_executor_by_name(tmp_path: Path) -> None:
    r = run_python(
        "import json, dataio\n"
        "from dataio._plugins import host\n"
        "reg = dataio.plugins.list_executors()['tiny']\n"
        "factory = host.executor('tiny')\n"
        "print(json.dumps({'plugin': reg.plugin, 'description': reg.description, 'tag': factory().tag,\n"
        "                  'same': factory is reg.value, 'missing': host.executor('nope')}))\n",
        env=install_tiny_plugin(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == {
        "plugin": "tiny",
        "description": "an executor for the registry tests",
        "tag": "made by the tiny plugin",
        "same": True,
        "missing": None,
    }


def test_executors_follow_the_duplicate_rules_of_backends() -> None:
    h = PluginHost()
    def factory() -> None:
        return None

    h._executor_registrar("ray-one")("ray", factory)
    h._executor_registrar("ray-one")("ray", factory)  # the same plugin again: fine
    with pytest.raises(PluginError) as info:
        h._executor_registrar("ray-two")("ray", factory)
    assert "'ray-one'" in str(info.value) and "'ray-two'" in str(info.value) and "DATAIO_DISABLE_PLUGINS" in str(info.value)
    with pytest.raises(PluginError, match="invalid executor name"):
        h._executor_registrar("p")("not a name", factory)
    with pytest.raises(PluginError, match="not callable"):
        h._executor_registrar("p")("fine", "not a factory")


def test_device_readers_and_namespaces_follow_the_same_rules() -> None:
    class Reader:
        def read_safetensors(self, files, device):
            return {}

        def info(self):
            return {"path": None}

    h = PluginHost()
    h._device_reader_registrar("a")("cuda", Reader())
    with pytest.raises(PluginError, match="'a'.*'b'"):
        h._device_reader_registrar("b")("cuda", Reader())
    with pytest.raises(PluginError, match=r"no read_safetensors\(\) or info\(\)"):
        h._device_reader_registrar("c")("npu", object())
    h._namespace_registrar("a")("rdma", lambda: object())
    with pytest.raises(PluginError, match="'a'.*'b'"):
        h._namespace_registrar("b")("rdma", lambda: object())


def test_a_device_reader_and_a_namespace_come_from_a_plugin(tmp_path: Path) -> None:
    # The tiny plugin stands in for dataio-rdma (blocked here): dataio.rdma
    # forwards to whatever registered the "rdma" namespace, imported by nobody.
    r = run_python(
        "import json, sys, dataio\n"
        "from dataio._plugins import host\n"
        "import dataio.rdma as rdma\n"
        "out = {'serve': rdma.serve(1, x=2), 'reader': host.device_reader('tinydev').read_safetensors(('a',), 'tinydev:0'),\n"
        "       'info': host.device_reader('tinydev').info(), 'readers': {k: v.plugin for k, v in dataio.plugins.list_device_readers().items()},\n"
        "       'rdma_imported': 'dataio_rdma' in sys.modules}\n"
        "print(json.dumps(out))\n",
        env={**install_tiny_plugin(tmp_path), "DATAIO_DISABLE_PLUGINS": "rdma,gds"},
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["serve"] == ["tiny serve", [1], {"x": 2}]
    assert out["reader"] == {"files": ["a"], "device": "tinydev:0"} and out["info"] == {"path": "tiny"}
    assert out["readers"] == {"tinydev": "tiny"}
    assert out["rdma_imported"] is False


@pytest.mark.parametrize("broken", [False, True], ids=["not installed", "failed to load"])
def test_dataio_rdma_without_its_plugin_says_what_to_install(tmp_path: Path, broken: bool) -> None:
    env = {"DATAIO_DISABLE_PLUGINS": "rdma"}
    if broken:  # installed, but its module raises on import: the message names it and why
        env = install_tiny_plugin(tmp_path, "dataio_broken_rdma", "brokenrdma", "raise RuntimeError('half installed')\n")
    r = run_python("import dataio.rdma as rdma\ntry:\n    rdma.serve\nexcept ImportError as e:\n    print('ImportError:', e)\n", env=env)
    assert r.returncode == 0, r.stderr
    hint = install_hint("dataio-rdma")
    assert "pip install --find-links wheelhouse/ dataio-rdma" in hint
    assert f"ImportError: dataio.rdma needs the dataio-rdma plugin; install it with {hint}" in r.stdout
    assert ("brokenrdma (RuntimeError: half installed)" in r.stdout) is broken


# -- install hints: every package of packages/, its extra, its schemes and ops ---------------


def own_packages() -> dict[str, dict]:
    """The pyproject.toml of each package under packages/, by distribution name."""
    tomls = Path(__file__).resolve().parents[2].glob("dataio-*/pyproject.toml")
    return {meta["project"]["name"]: meta for meta in (tomllib.loads(p.read_text()) for p in tomls)}


def test_every_plugin_package_has_an_extra_in_all_and_an_install_hint() -> None:
    packages = own_packages()
    extras = packages.pop("dataio")["project"]["optional-dependencies"]
    by_extra = {extra: req.split("==")[0] for extra, reqs in extras.items() for req in reqs if req.startswith("dataio-")}
    assert sorted(by_extra.values()) == sorted(packages), "every plugin package under packages/ has one extra"
    in_all = set(extras["all"][0].split("[")[1].rstrip("]").split(","))
    assert set(by_extra) <= in_all and in_all <= set(extras), in_all
    for extra, dist in by_extra.items():
        hint = install_hint(dist)
        assert f"`pip install --find-links wheelhouse/ {dist}`" in hint, hint
        assert install_hint(extra) == hint, extra  # the installed core's metadata declares the same extras


def test_the_scheme_and_op_tables_are_what_the_packages_register() -> None:
    from dataio._plugins import SHIPPED_SCHEMES
    from dataio.plugins import list_ops, list_plugins
    from dataio.transforms import PLUGIN_PACKAGE_OPS

    ours = set(own_packages()) - {"dataio"}
    dist_of = {p.name: p.package for p in list_plugins() if p.status == "loaded"}
    installed = ours & set(dist_of.values())
    schemes = {s: dist_of[reg.plugin] for s, reg in list_backends().items() if dist_of.get(reg.plugin) in ours}
    ops = {name: dist_of[spec.plugin] for name, spec in list_ops().items() if dist_of.get(spec.plugin) in ours}
    assert schemes == {s: d for s, d in SHIPPED_SCHEMES.items() if d in installed}
    assert ops == {o: d for o, d in PLUGIN_PACKAGE_OPS.items() if d in installed}
    assert set(SHIPPED_SCHEMES.values()) | set(PLUGIN_PACKAGE_OPS.values()) <= ours
    for name, dist in [*SHIPPED_SCHEMES.items(), *PLUGIN_PACKAGE_OPS.items()]:
        assert install_hint(name) == install_hint(dist), name
    assert install_hint("gs://") == install_hint("dataio-gcs") and install_hint("dataio_s3") == install_hint("dataio-s3")


def test_the_engine_hints_the_same_package_for_each_scheme() -> None:
    """With no plugin loaded, the engine's "unsupported scheme" error for
    each shipped scheme names the package install_hint names."""
    from dataio._plugins import SHIPPED_SCHEMES

    code = (
        "import json, dataio\nout = {}\n"
        f"for s in {[*SHIPPED_SCHEMES, 'bogus']!r}:\n"
        "    try:\n        dataio.read(s + '://bucket/key')\n"
        "    except dataio.errors.UnsupportedSchemeError as e:\n        out[s] = str(e)\n"
        "print(json.dumps(out))\n"
    )
    r = run_python(code, env={"DATAIO_DISABLE_PLUGINS": "all"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for scheme in SHIPPED_SCHEMES:
        assert install_hint(scheme) in out[scheme], (scheme, out[scheme])
    assert "pip install" not in out["bogus"]


@pytest.mark.parametrize("name", ["ftp", "ftp://", "bogus", "dataio-nope", "decode_jpeg2"])
def test_install_hint_names_no_package_that_does_not_exist(name: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        install_hint(name)
    text = str(info.value)
    assert text.startswith(f"install_hint({name!r}): there is nothing to install: "), text
    assert "pip install" not in text and "dataio-s3" in text and "s3:// (dataio-s3)" in text, text


def test_trace_plugins_prints_every_hook_call(tmp_path: Path) -> None:
    # With the tiny plugin, every hook has an implementation to call.
    r = run_python(
        "import dataio\n"
        "dataio.write('mem://b/k', b'v')\n"
        "dataio.capabilities.report()\n",
        env={**install_tiny_plugin(tmp_path), "DATAIO_TRACE_PLUGINS": "1"},
    )
    assert r.returncode == 0, r.stderr
    trace = r.stderr
    for hook in (
        "dataio_register_backends",
        "dataio_register_ops",
        "dataio_register_device_readers",
        "dataio_register_namespaces",
        "dataio_register_executors",
        "dataio_register_capabilities",
    ):
        assert f"{hook} [hook]" in trace, f"{hook} missing from the trace:\n{trace[-3000:]}"
    # Each call names the plugin it was made for, and loading is traced too.
    assert "<backend registrar of plugin 'memfs'>" in trace
    assert "<backend registrar of plugin 'dataio.builtin'>" in trace
    assert "<executor registrar of plugin 'tiny'>" in trace
    assert "loaded memfs" in trace and "disabled rdma" in trace
    assert "finish dataio_register_backends" in trace


def test_without_trace_plugins_nothing_is_printed() -> None:
    r = run_python("import dataio\ndataio.write('mem://b/k', b'v')\ndataio.capabilities.report()\n")
    assert r.returncode == 0, r.stderr
    assert "[hook]" not in r.stderr


def test_scheme_settings_keep_secrets_out_of_reprs_and_pickles() -> None:
    register_backend("kitscheme", object())  # an endpoint is for a scheme some plugin serves
    dataio.configure_credentials("kitscheme", access_key_id="AKIAKIT", secret_access_key="kit-secret-value")
    dataio.configure_endpoint("kitscheme", "http://127.0.0.1:9")
    try:
        settings = dataio.config.get_settings("kitscheme")
        assert settings.method == "explicit" and settings.endpoint == "http://127.0.0.1:9" and settings.plain_http
        assert settings.values["secret_access_key"] == "kit-secret-value"  # the data path gets them
        assert "kit-secret-value" not in repr(settings) and "AKIAKIT" not in str(settings)
        with pytest.raises(TypeError, match="pickled"):
            pickle.dumps(settings)
        error = dataio.config.SchemeSettings("kitscheme", "sas", {}, None).unsupported_method()
        assert isinstance(error, InvalidArgumentError) and str(error) == "kitscheme:// does not support credentials method 'sas'"
    finally:
        dataio.config.reset("kitscheme")
    assert dataio.config.get_settings("kitscheme") == dataio.config.SchemeSettings("kitscheme", "default", {}, None)


@pytest.mark.parametrize("alias, canon", [("s3a", "s3"), ("gcs", "gs"), ("abfs", "az"), ("abfss", "az"), ("azure", "az")])
def test_another_tools_name_for_a_store_is_refused_with_ours(alias: str, canon: str) -> None:
    """``s3a://`` (Hadoop), ``gcs://`` (fsspec), ``abfs://``: no plugin serves
    them; the error and configure_endpoint say the scheme dataio takes."""
    from dataio._plugins import SCHEME_ALIASES, SHIPPED_SCHEMES

    assert SCHEME_ALIASES[alias] == canon and canon in SHIPPED_SCHEMES
    with pytest.raises(dataio.errors.UnsupportedSchemeError) as info:
        dataio.read(f"{alias}://bucket/key")
    assert f"dataio names this store {canon}:// (write {canon}://bucket/key; {SHIPPED_SCHEMES[canon]} serves it)" in str(
        info.value
    ), info.value
    with pytest.raises(InvalidArgumentError, match=f"dataio names this store {canon}://; call configure_endpoint"):
        dataio.configure_endpoint(alias, "http://127.0.0.1:9")
