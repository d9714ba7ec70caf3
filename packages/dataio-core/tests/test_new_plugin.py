"""``python -m dataio new-plugin``: a standalone plugin, written outside the
repository, builds, installs into this environment, runs in a pipeline and
passes the conformance suites (its own generated tests: OpConformance on a
decoder and on a transform that declares no parameters, PluginConformance,
a pipeline end to end), and its sdist is portable. Then it is removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import dataio
from dataio import _native
from dataio.errors import InvalidArgumentError
from dataio.new_plugin import write

REPO = Path(__file__).resolve().parents[3]


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is not on PATH: the test environment installs with it (noxfile.py)")
    return found


@pytest.fixture
def installed() -> Iterator[list[str]]:
    """Distributions to uninstall after the test, whatever happens."""
    dists: list[str] = []
    yield dists
    for dist in dists:
        subprocess.run([uv(), "pip", "uninstall", "-q", "--python", sys.executable, dist], check=False)


def run_generated_tests(pkg: Path) -> str:
    # A fresh process: the plugin registry of this one was filled before the install.
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests")],
        capture_output=True, text=True, cwd=pkg, timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


def test_a_native_plugin_written_outside_the_repo_builds_installs_and_conforms(
    tmp_path_factory: pytest.TempPathFactory, installed: list[str]
) -> None:
    pkg = tmp_path_factory.mktemp("outside") / "dataio-pcdgen"
    assert not pkg.resolve().is_relative_to(REPO)
    out = subprocess.run(
        [sys.executable, "-m", "dataio", "new-plugin", "pcdgen", "--native", str(pkg)],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "dataio-pcdgen" in out
    # The package tree docs/plugins.md shows, with the op ABI vendored.
    for rel in ("pyproject.toml", "Cargo.toml", "README.md", "LICENSE", "rust/lib.rs", "src/dataio_pcdgen/plugin.py",
                "tests/test_pcdgen_conformance.py", "vendor/dataio-abi/src/ops/v2.rs"):
        assert (pkg / rel).is_file(), rel
    manifest = tomllib.loads((pkg / "Cargo.toml").read_text())
    assert manifest["dependencies"]["dataio-abi"] == {"path": "vendor/dataio-abi"}
    assert "workspace" in manifest  # standalone, whatever directory it is in
    project = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == [f"dataio=={dataio.__version__}"]  # pinned: never the registry's other 'dataio'
    # Small enough to read whole (docs/plugins.md counts it): Rust + Python, tests aside.
    code = [pkg / "rust/lib.rs", *(pkg / "src").rglob("*.py")]
    assert sum(len(p.read_text().splitlines()) for p in code) <= 150
    # Each op name is written once, in rust/lib.rs.
    assert (pkg / "src/dataio_pcdgen/plugin.py").read_text().count("pcdgen_center") == 0
    assert (pkg / "rust/lib.rs").read_text().count('"pcdgen_center"') == 1

    env = {**os.environ, "CARGO_TARGET_DIR": str(REPO / "target" / "new-plugin")}
    build = subprocess.run(["maturin", "develop", "--uv"], cwd=pkg, env=env, capture_output=True, text=True, timeout=900)
    installed.append("dataio-pcdgen")
    assert build.returncode == 0, build.stderr[-4000:]
    ran = run_generated_tests(pkg)
    assert "passed" in ran and "skipped" not in ran, ran
    listed = subprocess.run([sys.executable, "-m", "dataio", "ops", "decode_pcdgen", "pcdgen_center"],
                            capture_output=True, text=True, check=True).stdout
    assert "width: int, default 3 — Values per record." in listed, listed
    assert "takes float32 with 2 dimensions; gives float32 with 2 dimensions" in listed, listed

    # Its sdist is portable: every path relative, the vendored crate inside.
    dist = pkg / "sdist"
    subprocess.run(["maturin", "sdist", "-o", str(dist)], cwd=pkg, env=env, capture_output=True, check=True)
    (archive,) = dist.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifests = [tar.extractfile(n).read().decode() for n in names if n.endswith("Cargo.toml")]  # type: ignore[union-attr]
    assert any(n.endswith("vendor/dataio-abi/src/ops/v2.rs") for n in names), names
    for text in manifests:
        assert str(pkg) not in text and str(REPO) not in text and 'path = "/' not in text, text


def test_a_python_plugin_installs_and_conforms(tmp_path_factory: pytest.TempPathFactory, installed: list[str]) -> None:
    pkg = tmp_path_factory.mktemp("outside") / "dataio-ptsgen"
    write("ptsgen", pkg, native=False)
    assert not (pkg / "Cargo.toml").exists()
    subprocess.run([uv(), "pip", "install", "-q", "--python", sys.executable, "--no-deps", "-e", str(pkg)], check=True)
    installed.append("dataio-ptsgen")
    ran = run_generated_tests(pkg)
    assert "passed" in ran and "skipped" not in ran, ran


def test_bad_names_and_a_non_empty_directory_are_refused(tmp_path: Path) -> None:
    for bad in ("Pcd", "9pcd", "pcd-x", ""):
        with pytest.raises(InvalidArgumentError, match="plugin name"):
            write(bad, tmp_path / "x", native=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(InvalidArgumentError, match="not empty"):
        write("pcd", tmp_path / "full", native=True)
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_the_vendored_abi_is_every_file_of_the_crate_this_dataio_was_built_with() -> None:
    shipped = {path: text for path, text in _native.abi_crate_sources() if not path.startswith("workspace/")}
    crate = REPO / "crates" / "dataio-abi"
    on_disk = {str(p.relative_to(crate)) for p in (crate / "src").rglob("*.rs")} | {"Cargo.toml"}
    assert set(shipped) - {"LICENSE"} == on_disk
    for rel in on_disk:
        assert shipped[rel] == (crate / rel).read_text(), f"{rel} changed since this module was built"
