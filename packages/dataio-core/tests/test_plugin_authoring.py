"""What a third-party plugin author runs into, following docs/plugins.md with
two small plugins (a ``kv://`` backend and an ``invert`` op): one plugin's
mistake never disables the others, and every mistake is named.

Each plugin here is a module plus a ``.dist-info`` that publishes it, written
into a temporary folder put on the path of a subprocess (as an installed
distribution would be)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

from conftest import run_python

KV_PLUGIN = """
import dataio


class Store:
    def head(self, uri):
        return {"size": 2}

    def read_range(self, uri, offset, size):
        return b"kv"[offset:offset + size]

    def list(self, prefix, recursive):
        return []

    def exists(self, uri):
        return True


@dataio.hookimpl
def dataio_register_backends(register):
    register("kv", Store, description="a kv store")
    register("{extra}", Store, description="the same store under its own name")
"""


def install(root: Path, module: str, code: str, *, entry_point: str | None = None, group: str = "dataio", dist: str | None = None) -> None:
    """Writes ``module`` and a dist-info publishing it under ``group`` into ``root``."""
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    name = dist or module.replace("_", "-")
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry_point or module} = {module}\n")


def env_with(root: Path, **extra: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])), **extra}


def run_module(env: dict[str, str], *args: str):
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "dataio", *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


# -- 1. a scheme two plugins register ------------------------------------------------


def test_a_scheme_two_plugins_register_disables_neither_plugin_nor_the_others(tmp_path: Path) -> None:
    install(tmp_path, "kv_one", KV_PLUGIN.replace("{extra}", "kvone"), entry_point="kvone", dist="dataio-kv-one")
    install(tmp_path, "kv_two", KV_PLUGIN.replace("{extra}", "kvtwo"), entry_point="kvtwo", dist="dataio-kv-two")
    r = run_python(
        "import json, warnings, dataio\n"
        "from dataio.errors import PluginError\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    dataio.write('mem://b/k', b'v')\n"  # the first call loads plugins: it must work
        "out = {'mem': dataio.read('mem://b/k').decode(), 'backends': sorted(dataio.plugins.list_backends()),\n"
        "       'warnings': [(w.category.__name__, str(w.message)) for w in caught]}\n"
        "for uri in ('kvone://a/b', 'kvtwo://a/b'):\n"
        "    out[uri] = dataio.read(uri).decode()\n"  # each plugin's other scheme still works
        "for attempt in range(2):\n"  # the conflict is reported each time the scheme is used
        "    try:\n"
        "        dataio.read('kv://a/b')\n"
        "    except PluginError as e:\n"
        "        out.setdefault('errors', []).append(str(e))\n"
        "out['problems'] = [(p.kind, p.plugin, p.package) for p in dataio.plugins.list_problems()]\n"
        "print(json.dumps(out))\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["mem"] == "v"
    assert {"file", "mem", "s3", "kvone", "kvtwo"} <= set(out["backends"]) and "kv" not in out["backends"]
    assert out["kvone://a/b"] == out["kvtwo://a/b"] == "kv"
    assert len(out["errors"]) == 2
    for message in out["errors"]:
        assert "scheme 'kv'" in message
        assert "'kvone' (dataio-kv-one 0.1)" in message and "'kvtwo' (dataio-kv-two 0.1)" in message
        assert "DATAIO_DISABLE_PLUGINS=kvtwo" in message
    conflicts = [w for w in out["warnings"] if w[0] == "PluginWarning"]
    assert len(conflicts) == 1 and "scheme 'kv'" in conflicts[0][1], out["warnings"]
    assert ["conflict", "kvtwo", "dataio-kv-two"] in out["problems"]


def test_python_m_dataio_reports_a_conflict_and_does_not_crash(tmp_path: Path) -> None:
    install(tmp_path, "kv_one", KV_PLUGIN.replace("{extra}", "kvone"), entry_point="kvone", dist="dataio-kv-one")
    install(tmp_path, "kv_two", KV_PLUGIN.replace("{extra}", "kvtwo"), entry_point="kvtwo", dist="dataio-kv-two")
    text = run_module(env_with(tmp_path))
    assert text.returncode == 0, text.stderr
    assert "plugin problems" in text.stdout
    assert "scheme 'kv' is registered by two plugins: 'kvone' (dataio-kv-one 0.1) and 'kvtwo' (dataio-kv-two 0.1)" in text.stdout
    assert "s3://" in text.stdout and "mem://" in text.stdout  # the other plugins are there
    as_json = run_module(env_with(tmp_path), "--json")
    assert as_json.returncode == 0, as_json.stderr
    problems = json.loads(as_json.stdout)["plugin_problems"]
    assert any(p["kind"] == "conflict" and "scheme 'kv'" in p["message"] for p in problems)


def test_a_plugin_whose_hook_raises_is_failed_and_the_others_load(tmp_path: Path) -> None:
    install(
        tmp_path,
        "kv_bad",
        """
        import dataio

        @dataio.hookimpl
        def dataio_register_backends(register):
            register("kvbad", lambda: None)
            register("9kv", lambda: None)  # not a scheme: a scheme starts with a letter
        """,
        entry_point="kvbad",
    )
    r = run_python(
        "import dataio, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "dataio.write('mem://b/k', b'v')\n"
        "print(sorted(dataio.plugins.list_backends()))\n"
        "print([(p.name, p.status, p.detail) for p in dataio.plugins.list_plugins() if p.name == 'kvbad'])\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    assert "'mem'" in r.stdout and "'kvbad'" not in r.stdout.splitlines()[0]  # nothing of the failed plugin stays
    assert "('kvbad', 'failed', \"dataio_register_backends raised PluginError" in r.stdout


# -- 2. mistakes that used to fail silently ------------------------------------------------


def test_a_misspelled_hook_is_named_with_the_nearest_hook(tmp_path: Path) -> None:
    install(
        tmp_path,
        "kv_typo",
        """
        import dataio

        @dataio.hookimpl
        def dataio_register_backend(register):
            register("kv", object)
        """,
        entry_point="kvtypo",
    )
    r = run_python(
        "import warnings, dataio\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    try:\n"
        "        dataio.read('kv://a/b')\n"
        "    except dataio.errors.UnsupportedSchemeError as e:\n"
        "        print('ERROR', e)\n"
        "for w in caught:\n"
        "    print('WARNING', w.category.__name__, w.message)\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    warning = next(line for line in r.stdout.splitlines() if line.startswith("WARNING PluginWarning"))
    for part in ("'kvtypo' (kv-typo 0.1)", "kv_typo implements dataio_register_backend", "did you mean dataio_register_backends?"):
        assert part in warning, warning
    error = next(line for line in r.stdout.splitlines() if line.startswith("ERROR"))
    assert "kv://" in error or "'kv'" in error
    assert "dataio_register_backend," in error and "did you mean dataio_register_backends?" in error, error


def test_a_hook_without_hookimpl_and_a_module_without_hooks_are_named(tmp_path: Path) -> None:
    install(
        tmp_path,
        "kv_unmarked",
        """
        def dataio_register_backends(register):
            register("kv", object)
        """,
        entry_point="kvunmarked",
    )
    install(tmp_path, "kv_empty", "def helper():\n    return 1\n", entry_point="kvempty")
    r = run_python(
        "import warnings, dataio\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    dataio.plugins.list_backends()\n"
        "for w in caught:\n"
        "    print('WARNING', w.category.__name__, w.message)\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    unmarked = [line for line in lines if "'kvunmarked'" in line]
    assert any("kv_unmarked defines dataio_register_backends without @dataio.hookimpl" in line for line in unmarked), lines
    empty = [line for line in lines if "'kvempty'" in line]
    assert any("kv_empty, registered under the 'dataio' entry-point group, implements no dataio hook" in line for line in empty), lines
    # The installed plugins, which do everything right, have no warning.
    assert not [line for line in lines if "'memfs'" in line or "'s3'" in line]


def test_an_entry_point_in_the_wrong_group_is_named_by_the_trace_and_the_report(tmp_path: Path) -> None:
    install(tmp_path, "kv_wronggroup", KV_PLUGIN.replace("{extra}", "kvw"), entry_point="kvw", group="dataio.plugins", dist="dataio-kv-wrong")
    env = env_with(tmp_path, DATAIO_TRACE_PLUGINS="1")
    r = run_python("import dataio\ntry:\n    dataio.read('kv://a/b')\nexcept dataio.errors.UnsupportedSchemeError as e:\n    print('ERROR', e)\n", env=env)
    assert r.returncode == 0, r.stderr
    needle = "the entry point kvw = kv_wronggroup is in the group 'dataio.plugins', which dataio does not read"
    assert needle in r.stderr, r.stderr[-3000:]
    assert "dataio-kv-wrong" in r.stderr
    assert needle in r.stdout  # the unknown scheme's error says it too
    report = run_module(env_with(tmp_path))
    assert report.returncode == 0, report.stderr
    assert needle in report.stdout and "[project.entry-points.dataio]" in report.stdout


def test_an_op_two_plugins_register_is_reported_where_it_is_used(tmp_path: Path) -> None:
    op_plugin = "import dataio\n\n@dataio.hookimpl\ndef dataio_register_ops(register):\n    register('invert', lambda arr: 255 - arr, kind='transform')\n"
    install(tmp_path, "inv_one", op_plugin, entry_point="invone")
    install(tmp_path, "inv_two", op_plugin, entry_point="invtwo")
    r = run_python(
        "import dataio, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "s = dataio.slot('x').decode_bytes()\n"
        "for make in (lambda: s.invert(), lambda: s.apply('invert'), lambda: dataio.transforms.op('invert')):\n"
        "    try:\n"
        "        make()\n"
        "    except dataio.errors.PluginError as e:\n"
        "        print('ERROR', e)\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    errors = [line for line in r.stdout.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 3, r.stdout
    for line in errors:
        assert "op 'invert' is registered by two plugins: 'invone' (inv-one 0.1) and 'invtwo' (inv-two 0.1)" in line, line


def test_a_plugin_registering_a_core_name_is_ignored_for_that_name_and_three_claimants_are_named() -> None:
    from dataio._plugins import BUILTIN, PluginHost

    def core() -> None:
        return None

    def other() -> None:
        return None

    h = PluginHost()
    h._collecting = True  # as while plugins load
    h._backend_registrar(BUILTIN)("file", core)
    h._backend_registrar("shadow")("file", other)
    assert h._backends["file"].factory is core
    assert [(p.kind, p.plugin) for p in h._problems] == [("conflict", "shadow")]
    assert "dataio itself provides" in h._problems[0].message
    for plugin in ("a", "b", "c"):
        h._backend_registrar(plugin)("kv", other)
    assert "kv" not in h._backends
    h._collecting = False
    h._pm = object()  # type: ignore[assignment]  # loaded: conflict() does not load again
    message = h.conflict("scheme", "kv")
    assert message is not None and "registered by 3 plugins: 'a', 'b', 'c'" in message
