"""The engine's build script refuses a JPEG decoder built without SIMD.

mozjpeg-sys only warns when nasm is missing and builds libjpeg-turbo's
scalar fallback (about 0.6x the decode speed). crates/dataio-engine/build.rs
reads the built jconfig.h and fails the build instead, naming what to do.
The script is compiled on its own here and run with the environment cargo
would give it, against a jconfig.h with and without SIMD.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD_RS = REPO / "crates" / "dataio-engine" / "build.rs"


@pytest.fixture(scope="module")
def build_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rustc = shutil.which("rustc")
    assert rustc, "rustc is needed to build dataio at all"
    out = tmp_path_factory.mktemp("build-rs") / "build-script"
    subprocess.run([rustc, "--edition", "2021", str(BUILD_RS), "-o", str(out)], check=True, cwd=REPO)
    return out


def run(script: Path, jconfig: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    include = tmp_path / "include"
    include.mkdir(exist_ok=True)
    (include / "jconfig.h").write_text(jconfig)
    base = {"DEP_JPEG_INCLUDE": str(include), "CARGO_CFG_TARGET_ARCH": "x86_64", "PATH": str(tmp_path / "bin")}
    return subprocess.run([str(script)], env={**base, **env}, capture_output=True, text=True)


def test_a_simd_build_passes_and_is_reported_on(build_script: Path, tmp_path: Path) -> None:
    r = run(build_script, "#define JPEG_LIB_VERSION 62\n#define WITH_SIMD 1\n", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "cargo:rustc-env=DATAIO_JPEG_SIMD=on" in r.stdout


def test_a_build_without_simd_fails_and_names_nasm(build_script: Path, tmp_path: Path) -> None:
    r = run(build_script, "#define JPEG_LIB_VERSION 62\n", tmp_path)
    assert r.returncode != 0
    assert "built without SIMD" in r.stderr
    assert "install nasm" in r.stderr
    assert "cargo clean -p mozjpeg-sys" in r.stderr


def test_installing_nasm_later_names_the_stale_cache(build_script: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nasm").write_text("#!/bin/sh\n")
    r = run(build_script, "#define JPEG_LIB_VERSION 62\n", tmp_path)
    assert r.returncode != 0
    assert "nasm is installed now, but the cached mozjpeg-sys build predates it" in r.stderr
    # ...and the script keeps rerunning until the cached build is replaced.
    r = run(build_script, "#define JPEG_LIB_VERSION 62\n", tmp_path, DATAIO_ALLOW_NO_SIMD="1")
    assert r.returncode == 0
    assert "cargo:rustc-env=DATAIO_JPEG_SIMD=off" in r.stdout
    assert "cargo:rerun-if-changed=/nonexistent/" in r.stdout
    assert "cargo:warning=libjpeg-turbo was built without SIMD" in r.stdout


def test_architectures_without_simd_code_are_not_refused(build_script: Path, tmp_path: Path) -> None:
    r = run(build_script, "#define JPEG_LIB_VERSION 62\n", tmp_path, CARGO_CFG_TARGET_ARCH="riscv64")
    assert r.returncode == 0, r.stderr
    assert "cargo:rustc-env=DATAIO_JPEG_SIMD=off" in r.stdout
