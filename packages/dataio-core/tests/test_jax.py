"""run("jax"): jax.Array batches on one device (zero-copy on CPU) and global
over a mesh of 8 CPU devices, with the numpy run's values; two real
processes under jax.distributed (4 devices each) that each load only their
rows, with equal batch counts, an exact mid-epoch resume through an Orbax
CheckpointManager and an elastic 2 -> 1 resume; pack(segment_ids=True).

JAX fixes its device count at first import, so the JAX side runs in fresh
interpreters (``_jax_worker.py``); this module imports no JAX."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _imaging import npy_bytes

import dataio
from dataio.errors import InvalidArgumentError, MissingExtraError

pytest.importorskip("jax", reason="the jax extra is not installed (pip install 'dataio[jax]')")
pytest.importorskip("orbax.checkpoint")

WORKER = Path(__file__).with_name("_jax_worker.py")


def worker(*args: str, devices: int = 8, **popen: Any) -> subprocess.Popen[str]:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            **popen)


def result(proc: subprocess.Popen[str], timeout: float = 120) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=timeout)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, out[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_one_process_on_one_device_and_over_eight() -> None:
    got = result(worker("single"))
    assert got["devices"] == 8
    assert got["plain_equal"] and got["plain_type"] == "ArrayImpl" and got["plain_device"] == "cpu:0"
    # The jax.Array's buffer is the engine's (what the host batch pointed to).
    assert got["zero_copy"] and all(got["zero_copy"])
    assert got["keys_host"] and got["transfer_seconds"] > 0
    assert got["sharded_equal"] and got["sharded_as_asked"]
    # Two batches handed out while more were on the devices: the state is
    # the one after the second, and the resume delivers the rest exactly.
    assert got["resume_position"] == 32 and got["resume_exact"]


def test_packed_batches_carry_segment_ids_consistent_with_document_ids() -> None:
    got = result(worker("packed"))
    assert got["packed_ok"] and got["batches"] > 0


def test_the_next_epoch_starts_while_the_step_holds_the_last_batches() -> None:
    got = result(worker("epochs", devices=1))
    assert got["same_epochs"]
    n = got["per_epoch"]
    # Epoch 0 at construction; epoch 1 started before the consumer took the
    # last batch of epoch 0, and epoch 2 before the last of epoch 1; that
    # run of epoch 2 is closed unused after set_epoch(5), which starts 5
    # (and, at its end, 6).
    (e0, _), (e1, t1), (e2, t2), (e5, t5), (e6, _) = got["starts"]
    assert (e0, e1, e2, e5, e6) == (0, 1, 2, 5, 6)
    assert t1 < n and n <= t2 < 2 * n and t5 == 0


def test_two_processes_orbax_resume_and_elastic_to_one(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    port = free_port()
    procs = [worker("multi", str(rank), str(port), str(ckpt), devices=4) for rank in (0, 1)]
    r0, r1 = (result(p, timeout=180) for p in procs)
    for rank, r in enumerate((r0, r1)):
        assert (r["process"], r["devices"], r["local"]) == (rank, 8, 4)
        assert r["shard"]["id"] == rank and r["shard"]["of"] == 2 and r["shard"]["pad"]
        # Each process addresses only its rows: its block of the global batch.
        assert r["addressed"] == [rank * 8 + 2 * d for d in range(4)]
        assert r["own_rows"], "the rows of the one-process run's batch this rank loads"
        assert r["resume_exact"] and r["restored_same_loader"]
        assert r["packed_global"]
    assert r0["len"] == r1["len"] == r0["batches"] == r1["batches"] == 6
    assert r0["packed_batches"] == r1["packed_batches"] > 0
    assert sorted(p.name for p in (ckpt / "2" / "loader").glob("*.json")) == ["process_0-of-2.json", "process_1-of-2.json"]
    elastic = result(worker("elastic", str(ckpt)))
    assert elastic["elastic_exact"] and elastic["rest"] == 3


def test_importing_dataio_imports_no_jax_and_a_missing_jax_names_the_extra() -> None:
    code = """
import sys
import dataio, dataio.jax
assert "jax" not in sys.modules and "orbax" not in sys.modules, "imported JAX"
sys.modules["jax"] = None  # as if it were not installed
pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2))
try:
    pipe.bind([{"x": 1}]).run("jax")
except dataio.errors.MissingExtraError as e:
    assert isinstance(e, ImportError) and e.extra == "jax", e
    print("MSG", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "pip install 'dataio[jax]'" in out.stdout
    assert issubclass(MissingExtraError, ImportError)


def test_jax_arguments_are_checked() -> None:
    pipe = dataio.pipeline(dataio.slot("x").decode_npy(), dataio.batch(2))
    records = [{"x": npy_bytes(np.zeros(2, np.float32))}] * 4
    with pytest.raises(InvalidArgumentError, match="output='jax'"):
        pipe.bind(records).run("numpy", sharding=object())
    with pytest.raises(InvalidArgumentError, match="run\\('jax'\\)"):
        dataio.Loader(pipe.bind(records), "jax")
    with pytest.raises(InvalidArgumentError, match="prefetch_to_device"):
        pipe.bind(records).run("jax", prefetch_to_device=-1)
    with pytest.raises(InvalidArgumentError, match="jax.sharding.Sharding"):
        pipe.bind(records).run("jax", sharding="data")
