"""Task runner for the dataio monorepo.

Packages are discovered, not listed: every ``packages/*/pyproject.toml`` is a
package, ``packages/dataio-core`` is the native core, and test-only plugin
packages live under ``packages/dataio-core/tests/plugins/``.

    python3 -m nox -s demo        # the training-style demo
    python3 -m nox -s tests       # cargo tests + pytest of every package
    python3 -m nox -s tests -- packages/dataio-s3   # one package
    python3 -m nox -s lint typecheck bench
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

ROOT = Path(__file__).parent
CORE = ROOT / "packages" / "dataio-core"
PACKAGES = sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))
PLUGINS = [p for p in PACKAGES if p != CORE]
TEST_PLUGINS = sorted(p.parent for p in CORE.glob("tests/plugins/*/pyproject.toml"))
# Plugins with a native module (a Cargo.toml beside their pyproject) are built
# in place by maturin like the core; the others install as editable packages.
NATIVE_PLUGINS = [p for p in PLUGINS if (p / "Cargo.toml").is_file()]
# Plain-Rust crates (engine, ABI, shared plugin code) are tested with cargo;
# the pyo3 crates of the packages are tested through pytest.
RUST_CRATES = sorted(tomllib.loads(p.read_text())["package"]["name"] for p in ROOT.glob("crates/*/Cargo.toml"))
CARGO_PROFILE = "ci"
PYTHON = "3.11"

# Debian packages the build and the tests need, keyed by a command (or an
# absolute path) each provides: nasm builds libjpeg-turbo's SIMD code;
# libfabric-dev's headers build dataio-rdma's shim, whose tests load
# libfabric1 (a dependency of libfabric-bin, which brings fi_info).
SYSTEM_PACKAGES = {"nasm": "nasm", "fi_info": "libfabric-bin", "/usr/include/rdma/fabric.h": "libfabric-dev"}
# npm packages the tests run (dataio-azure's emulator), installed under .cache/.
NPM_PACKAGES = {"azurite": "azurite@3"}


def ensure_system_packages(session: nox.Session) -> None:
    def present(tool: str) -> bool:
        return os.path.exists(tool) if os.path.isabs(tool) else shutil.which(tool) is not None

    missing = [pkg for tool, pkg in SYSTEM_PACKAGES.items() if not present(tool)]
    if not missing:
        return
    apt = shutil.which("apt-get")
    if apt is None:
        session.error(f"install these system packages first: {' '.join(missing)}")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    session.log(f"installing system packages: {' '.join(missing)}")
    subprocess.run([*sudo, apt, "update", "-qq"], check=False)
    subprocess.run([*sudo, apt, "install", "-y", "-qq", *missing], check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def install_dataio(session: nox.Session, group: str) -> None:
    """The tool group, the core built in place by maturin, then every plugin."""
    ensure_system_packages(session)
    session.install("--group", f"{CORE / 'pyproject.toml'}:{group}")
    session.run(
        "maturin", "develop", "--uv", "--profile", CARGO_PROFILE, "-m", str(CORE / "Cargo.toml"),
        env={"CARGO_TARGET_DIR": str(ROOT / "target")},
    )
    for pkg in NATIVE_PLUGINS:
        session.run(
            "maturin", "develop", "--uv", "--profile", CARGO_PROFILE, "-m", str(pkg / "Cargo.toml"),
            env={"CARGO_TARGET_DIR": str(ROOT / "target")},
        )
    editable = [arg for pkg in PLUGINS + TEST_PLUGINS if pkg not in NATIVE_PLUGINS for arg in ("-e", str(pkg))]
    session.install(*editable)
    # Each plugin's own group of the same name (its emulator, its SDK extras).
    for pkg in PLUGINS:
        if group in tomllib.loads((pkg / "pyproject.toml").read_text()).get("dependency-groups", {}):
            session.install("--group", f"{pkg / 'pyproject.toml'}:{group}")
    if group == "test":
        ensure_npm_packages(session)


def ensure_npm_packages(session: nox.Session) -> None:
    """Installs NPM_PACKAGES under .cache/<name> (where the tests look) when npm is there;
    without npm the tests that need them skip and say why."""
    npm = shutil.which("npm")
    for name, spec in NPM_PACKAGES.items():
        prefix = ROOT / ".cache" / name
        if (prefix / "node_modules" / name).is_dir():
            continue
        if npm is None:
            session.warn(f"npm is missing: {spec} is not installed and the tests that need it will skip")
            continue
        session.run(npm, "install", "--no-fund", "--no-audit", "--prefix", str(prefix), spec, external=True)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job: a training-style loop over the pipeline on an embedded dataset."""
    install_dataio(session, "demo")
    session.run("python", "-m", "dataio.demo", *session.posargs)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Rust tests of the engine, then pytest for every package."""
    install_dataio(session, "test")
    if not session.posargs:
        session.run(
            "cargo", "test", *(arg for c in RUST_CRATES for arg in ("-p", c)), "--profile", CARGO_PROFILE, "--quiet",
            external=True,
        )
        # The stubs are the docs of the native layer: keep them honest.
        session.run("python", "-m", "mypy.stubtest", "dataio._native", "--ignore-missing-stub")
    targets = [Path(p) for p in session.posargs] or PACKAGES
    for pkg in targets:
        tests_dir = (ROOT / pkg / "tests") if (ROOT / pkg / "tests").is_dir() else ROOT / pkg
        session.run("python", "-m", "pytest", str(tests_dir), "-q", "--timeout=600", "-p", "no:cacheprovider")
    # Repository-level tests: examples run on data they make, docs match the code.
    repo_tests = ROOT / "tests"
    if not session.posargs and repo_tests.is_dir():
        session.run("python", "-m", "pytest", str(repo_tests), "-q", "--timeout=600", "-p", "no:cacheprovider")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on Python, rustfmt and clippy on Rust."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", str(ROOT))
    session.run("cargo", "fmt", "--all", "--check", external=True)
    session.run("cargo", "clippy", "--workspace", "--profile", CARGO_PROFILE, "--", "-D", "warnings", external=True)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy on the packages, and stubtest keeps the native stubs honest."""
    install_dataio(session, "lint")
    session.run("mypy", str(CORE / "python" / "dataio"))
    session.run("python", "-m", "mypy.stubtest", "dataio._native", "--ignore-missing-stub")


# Shared libraries SPDL loads (FFmpeg 5, Debian 12 names); without them the
# benchmark's SPDL row says UNAVAILABLE instead of measuring.
BENCH_LIBRARIES = {
    "libavcodec.so.59": "libavcodec59",
    "libavformat.so.59": "libavformat59",
    "libavfilter.so.8": "libavfilter8",
    "libswscale.so.6": "libswscale6",
    "libavdevice.so.59": "libavdevice59",
}


def ensure_bench_libraries(session: nox.Session) -> None:
    found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    missing = [pkg for lib, pkg in BENCH_LIBRARIES.items() if lib not in found]
    apt = shutil.which("apt-get")
    if not missing or apt is None:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    session.log(f"installing FFmpeg's libraries for SPDL: {' '.join(missing)}")
    subprocess.run([*sudo, apt, "update", "-qq"], check=False)
    subprocess.run([*sudo, apt, "install", "-y", "-qq", *missing], check=False, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The cross-framework benchmark matrix (writes bench-out/; docs/benchmark.md)."""
    ensure_bench_libraries(session)
    install_dataio(session, "bench")
    session.run("python", "-m", "dataio.bench", *session.posargs)
