"""A loader's life as users' scripts live it: exits that must end (an
exception before the loop, a script that just ends, Ctrl-C), a fork after
the loader started, two consumers at once, files changed under a running
epoch, a shard replaced behind a kept index, and completion-order resume.
Each risky case runs in a subprocess with a timeout: a hang or a signal
fails the test instead of the suite."""

from __future__ import annotations

import gc
import io
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio
from dataio.errors import CheckpointError, LoaderUsageError

# A small pipeline over records made in the script itself.
PRELUDE = """
import os, sys, time
import numpy as np
import dataio
rows = [{"x": np.arange(4, dtype=np.uint8).tobytes(), "key": f"r{i}"} for i in range(4000)]
pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(4))
"""


def run_script(body: str, tmp_path: Path, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.mark.parametrize(
    "body, rc",
    [
        # An exception before the loop (a typo): the traceback, then the exit.
        ("loader = pipe.bind(rows).run('numpy', seed=7)\nraise RuntimeError('boom')\n", 1),
        # A script that starts a loader and ends.
        ("loader = pipe.bind(rows).run('numpy', seed=7)\n", 0),
        # One batch taken, the rest of the epoch in flight.
        ("loader = pipe.bind(rows).run('numpy', seed=7)\nnext(iter(loader))\n", 0),
        # A checkpoint of another pipeline: a CheckpointError, not a hang.
        (
            "loader = pipe.bind(rows).run('numpy', seed=7)\n"
            "other = dataio.pipeline(dataio.slot('x').decode_bytes(), dataio.batch(8))\n"
            "loader.load_state_dict(other.bind(rows).run('numpy', seed=7).state_dict())\n",
            1,
        ),
    ],
    ids=["raise", "exit", "one-batch", "checkpoint-error"],
)
def test_a_process_with_an_open_loader_exits(tmp_path: Path, body: str, rc: int) -> None:
    for _ in range(3):
        p = run_script(body, tmp_path, timeout=30)
        assert p.returncode == rc, p.stderr
        assert "panicked" not in p.stderr and "not initialized" not in p.stderr, p.stderr
    if "other" in body:
        assert "CheckpointError" in p.stderr


def test_ctrl_c_mid_epoch_ends_the_process(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + "loader = pipe.bind(rows * 100).run('numpy', seed=7)\nprint('ready', flush=True)\n"
                      "for b in loader:\n    time.sleep(0.01)\n")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "KeyboardInterrupt" in err, err
    assert "panicked" not in err, err


def test_a_loader_used_after_fork_fails_at_once_and_closes_quietly(tmp_path: Path) -> None:
    # Where a step hangs, the parent's stacks (faulthandler, armed before the
    # fork, so the child has no watchdog to trip over) and the child's last
    # step (a file) say which.
    steps = tmp_path / "child-steps"
    body = f"""
    import faulthandler
    faulthandler.dump_traceback_later(40, exit=True)
    loader = pipe.bind(rows).run('numpy', seed=7)
    next(iter(loader))
    pid = os.fork()
    if pid == 0:
        step = lambda what: open({str(steps)!r}, "a").write(what + "\\n")
        step("forked")
        code = 3
        t0 = time.monotonic()
        try:
            next(iter(loader))
        except dataio.errors.LoaderUsageError as e:
            step("refused")
            assert "fork" in str(e) and "worker" in str(e), e
            assert time.monotonic() - t0 < 1.0
            loader.close()  # a no-op in the child: never raises, never waits
            step("closed")
            loader.close()
            code = 0
        step(f"exit {{code}}")
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    # The parent's loader is untouched by the child.
    assert len(next(iter(loader))) == 4
    loader.close()
    print("done")
    """
    p = run_script(body, tmp_path, timeout=60)
    child = steps.read_text() if steps.exists() else "(no step)"
    assert p.returncode == 0 and "done" in p.stdout, (p.stderr, f"the child's steps: {child}")


def test_children_forked_while_the_workers_let_go_of_records_call_into_dataio_at_once(tmp_path: Path) -> None:
    # The workers release each record's bytes without the GIL, all the time;
    # a fork in that instant once left the child's first call into dataio
    # waiting forever on a lock no thread of the child held (pyo3's queue of
    # pending decrefs). Fork often, mid-epoch, and call in at once.
    body = """
    rows = [{"x": bytes(64), "key": f"r{i}"} for i in range(100000)]
    loader = pipe.bind(rows).run('numpy', seed=7)
    it = iter(loader)
    stuck = 0
    for k in range(150):
        for _ in range(2):
            next(it)
        pid = os.fork()
        if pid == 0:
            dataio._native.shard_count(0, 1, False, 10)  # an entry into the native module
            os._exit(0)
        t0 = time.monotonic()
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() - t0 > 10:
                stuck += 1
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.001)
    del it
    loader.close()
    print("stuck", stuck)
    """
    p = run_script(body, tmp_path, timeout=300)
    assert p.returncode == 0 and "stuck 0" in p.stdout, (p.stdout, p.stderr)


def test_records_let_go_by_the_workers_are_released() -> None:
    # What the workers let go of without the GIL is released with the GIL
    # (once per batch, at close, by release_memory()): nothing of the
    # records is kept. A worker may drop its share of the last batch's
    # records just after the loader closed: the next release takes it.
    payloads = [bytes([i % 251]) * (1000 + i) for i in range(300)]
    before = [sys.getrefcount(b) for b in payloads]
    rows = [{"x": b, "key": f"r{i}"} for i, b in enumerate(payloads)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(8))
    with pipe.bind(rows).run("numpy", seed=3, context=lambda r: {"n": len(r["x"])}) as loader:
        got = sum(len(b) for b in loader)
    assert got == len(rows)
    del rows, loader
    gc.collect()
    deadline = time.monotonic() + 5
    while [sys.getrefcount(b) for b in payloads] != before and time.monotonic() < deadline:
        time.sleep(0.01)
        dataio.release_memory()
    assert [sys.getrefcount(b) for b in payloads] == before


def test_one_loader_has_one_consumer_at_a_time() -> None:
    rows = [{"x": bytes([i % 256]) * 4} for i in range(400)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(4))
    with pipe.bind(rows).run("numpy", seed=1) as loader:
        first = iter(loader)
        got = [next(first)]
        # A second iteration while the first is open: refused, nothing taken.
        with pytest.raises(LoaderUsageError, match="already being iterated"):
            next(iter(loader))
        errors: list[BaseException] = []

        def other_thread() -> None:
            try:
                for _ in loader:
                    pass
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(10)
        assert len(errors) == 1 and isinstance(errors[0], LoaderUsageError), errors
        # The first consumer still gets the whole epoch, each row once.
        got += list(first)
        assert sum(len(b) for b in got) == 400
        assert loader.state_dict()["epoch"] == 1


def _npy(n: int) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.full(n, 7, np.uint8))
    return buf.getvalue()


def _churn(paths: list[Path], full: list[bytes], stop: threading.Event) -> None:
    """Truncates and rewrites each file in place, over and over."""
    while not stop.is_set():
        for p, data in zip(paths, full):
            with open(p, "r+b") as f:
                f.truncate(len(data) // 3)
            with open(p, "r+b") as f:
                f.write(data)


def test_files_changed_under_a_running_epoch_are_row_errors_not_signals(tmp_path: Path) -> None:
    """npy files of 1 MB (which the local backend used to memory-map):
    truncated and rewritten in place while a loader reads them. Before,
    the process died of SIGBUS; now a read sees a typed error (or whole,
    consistent bytes) and the run goes on."""
    body = f"""
    import threading
    from pathlib import Path
    sys.path.insert(0, {str(Path(__file__).parent)!r})
    from test_lifecycle import _churn, _npy
    folder = Path({str(tmp_path)!r})
    paths = [folder / f"f{{i}}.npy" for i in range(24)]
    full = [_npy(1 << 20) for _ in paths]
    for p, d in zip(paths, full):
        p.write_bytes(d)
    stop = threading.Event()
    t = threading.Thread(target=_churn, args=(paths, full, stop), daemon=True)
    t.start()
    pipe = dataio.pipeline(dataio.slot("x").decode_npy(), dataio.batch(1))
    seen = errs = 0
    for epoch in range(6):
        with pipe.bind([{{"x": str(p)}} for p in paths]).run("numpy", on_failure="skip") as loader:
            for b in loader:
                seen += len(b)
                for e in b.errors:
                    assert e.uri and e.uri.endswith(".npy"), e
    stop.set()
    print("lived", seen)
    """
    p = run_script(body, tmp_path, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert "lived" in p.stdout and "Bus error" not in p.stderr


def _tar(path: Path, keys: list[str], payload: int) -> None:
    import tarfile

    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for k in keys:
            data = k.encode().ljust(payload, b".")
            info = tarfile.TarInfo(f"{k}.txt")
            info.size = len(data)
            info.mtime = 0
            tf.addfile(info, io.BytesIO(data))


def test_a_shard_replaced_by_one_of_equal_size_and_mtime_is_not_misread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    shard, other = tmp_path / "a.tar", tmp_path / "b.tar"
    # Same member count and sizes, other keys and bytes: only an index bound
    # to the file's content tells them apart.
    _tar(shard, [f"old{i:03d}" for i in range(20)], 700)
    _tar(other, [f"new{i:03d}" for i in range(20)], 700)
    assert shard.stat().st_size == other.stat().st_size
    pipe = dataio.pipeline(dataio.slot("txt").decode_bytes(), dataio.batch(5))

    def read() -> list[tuple[str, bytes]]:
        with pipe.bind(dataio.tar_records([str(shard)])).run("numpy") as loader:
            return [(k, bytes(v[:6])) for b in loader for k, v in zip(b.keys, b["txt"])]

    before = read()
    assert all(k.endswith(v.decode()) for k, v in before) and before[0][0].endswith("old000")
    st = shard.stat()
    shutil.copyfile(other, shard)  # in place: the same inode, cp -p style
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (shard.stat().st_size, shard.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    after = read()  # a new source: re-indexed from the new bytes
    assert sorted(v for _, v in after) == [f"new{i:03d}".encode() for i in range(20)]
    assert all(k.endswith(v.decode()) for k, v in after), after[:3]


def test_a_shard_replaced_under_an_open_source_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    shard, other = tmp_path / "a.tar", tmp_path / "b.tar"
    _tar(shard, [f"old{i:03d}" for i in range(20)], 700)
    _tar(other, [f"new{i:03d}" for i in range(20)], 700)
    records = dataio.tar_records([str(shard)])
    st = shard.stat()
    shutil.copyfile(other, shard)
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    pipe = dataio.pipeline(dataio.slot("txt").decode_bytes(), dataio.batch(5))
    with pytest.raises(dataio.errors.DataioError, match="changed since it was indexed"):
        with pipe.bind(records).run("numpy") as loader:
            list(loader)


def _jpeg(side: int, value: int) -> bytes:
    buf = io.BytesIO()
    rng = np.random.default_rng(value)
    Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_completion_order_resume_delivers_every_sample_once() -> None:
    """Every 9th record is a large JPEG, so batches finish out of order; a
    checkpoint after each of the epoch's batches resumes to exactly the
    samples not yet delivered."""
    big, small = _jpeg(1400, 1), _jpeg(16, 2)
    rows = [{"img": big if i % 9 == 0 else small, "key": f"k{i:03d}"} for i in range(60)]
    pipe = dataio.pipeline(dataio.slot("img").decode_image().resize(h=8, w=8), dataio.batch(4))

    def loader() -> Any:
        return pipe.bind(rows).run("numpy", seed=3, order="completion", concurrency=32)

    ahead_seen = 0
    for stop_after in range(1, 15):
        first: list[str] = []
        with loader() as a:
            it = iter(a)
            for _ in range(stop_after):
                first += next(it).keys
            state = a.state_dict()
        ahead_seen += bool(state.get("delivered_ahead"))
        rest: list[str] = []
        with loader() as b:
            b.load_state_dict(state)
            for batch in b:
                rest += batch.keys
        both = first + rest
        assert sorted(both) == sorted(r["key"] for r in rows), f"after {stop_after} batches: repeated or lost"
    # The case the state exists for happened (batches past the prefix).
    assert ahead_seen > 0


def test_a_completion_order_state_keeps_its_skips_until_passed() -> None:
    rows = [{"x": b"ab", "key": f"k{i:02d}"} for i in range(40)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(4))
    state = pipe.bind(rows).run("numpy", seed=1).state_dict()
    order = [k for b in pipe.bind(rows).run("numpy", seed=1) for k in b.keys]
    # As if batches 2 and 3 (positions 8..16) had been delivered ahead.
    state["delivered_ahead"] = [12, 16]
    with pipe.bind(rows).run("numpy", seed=1) as loader:
        loader.load_state_dict(state)
        it = iter(loader)
        first = next(it).keys
        assert first == order[:4]
        # Not passed yet: a checkpoint here still names them.
        assert loader.state_dict()["delivered_ahead"] == [12, 16]
        rest = [k for b in it for k in b.keys]
    assert first + rest == order[:4] + order[4:8] + order[16:]
    with pytest.raises(CheckpointError, match="same ranks"):
        pipe.bind(rows).run("numpy", seed=1, shard={"id": 0, "of": 2}).load_state_dict(state)


def test_pooled_memory_can_be_given_back() -> None:
    rows = [{"x": np.zeros(1 << 20, np.uint8).tobytes()} for _ in range(16)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(4))
    keep = pipe.bind(rows).run("numpy")  # an open loader: closing the other is not the last close
    try:
        with pipe.bind(rows).run("numpy") as loader:
            for b in loader:
                assert b["x"].shape == (4, 1 << 20)
        # The 4 MB batch buffers went back to the pool when dropped.
        assert dataio.release_memory() >= 4 << 20
        assert dataio.release_memory() == 0
    finally:
        keep.close()
