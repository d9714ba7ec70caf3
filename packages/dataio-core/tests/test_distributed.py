"""Real multi-process runs: torchrun launches ranks that shard one dataset,
and a job killed mid-epoch resumes from its saved states."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "torchrun" / "worker.py"


def torchrun(nproc: int, out: Path, *args: str) -> None:
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
        str(WORKER), "--out", str(out), *args,
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1", DATAIO_CPU_THREADS="1", DATAIO_IO_THREADS="2")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"torchrun failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def load(out: Path, prefix: str, ranks: int) -> list[dict]:
    return [json.loads((out / f"{prefix}-{r}.json").read_text()) for r in range(ranks)]


def test_four_ranks_with_padding_cover_the_epoch_with_equal_batch_counts(tmp_path: Path) -> None:
    torchrun(4, tmp_path, "--records", "103", "--batch", "8", "--pad")
    ranks = load(tmp_path, "seen", 4)
    counts = {r["batches"] for r in ranks}
    assert len(counts) == 1, f"ranks saw different batch counts: {[r['batches'] for r in ranks]}"
    assert all(r["len"] == r["batches"] for r in ranks)
    keys = Counter(k for r in ranks for k in r["keys"])
    assert set(keys) == {f"r{i}" for i in range(103)}, "the union must be the dataset"
    # 103 records over 4 ranks padded to 104: exactly one record repeats.
    assert sum(keys.values()) == 104
    assert sum(1 for c in keys.values() if c > 1) == 1


def test_without_padding_shards_are_disjoint(tmp_path: Path) -> None:
    torchrun(2, tmp_path, "--records", "40", "--batch", "5")
    ranks = load(tmp_path, "seen", 2)
    a, b = (set(r["keys"]) for r in ranks)
    assert not a & b
    assert a | b == {f"r{i}" for i in range(40)}


def test_a_killed_job_resumes_with_exactly_the_rest(tmp_path: Path) -> None:
    torchrun(4, tmp_path, "--records", "103", "--batch", "4", "--pad", "--stop-after", "3")
    before = load(tmp_path, "seen", 4)
    assert all(r["batches"] == 3 for r in before)
    torchrun(4, tmp_path, "--records", "103", "--batch", "4", "--pad", "--resume")
    after = load(tmp_path, "resumed", 4)
    # Each rank continues its own shard: before + after per rank is a full
    # uninterrupted epoch of that rank.
    full = tmp_path / "full"
    full.mkdir()
    torchrun(4, full, "--records", "103", "--batch", "4", "--pad")
    uninterrupted = load(full, "seen", 4)
    for r in range(4):
        assert before[r]["keys"] + after[r]["keys"] == uninterrupted[r]["keys"]


def test_elastic_resume_on_fewer_ranks_loses_and_repeats_nothing(tmp_path: Path) -> None:
    torchrun(4, tmp_path, "--records", "96", "--batch", "4", "--pad", "--stop-after", "2")
    before = load(tmp_path, "seen", 4)
    torchrun(2, tmp_path, "--records", "96", "--batch", "4", "--pad", "--resume")
    after = load(tmp_path, "resumed", 2)
    keys = Counter(k for r in before + after for k in r["keys"])
    assert set(keys) == {f"r{i}" for i in range(96)}
    assert all(c == 1 for c in keys.values()), "96 records over 4 then 2 ranks need no padding"


@pytest.fixture(autouse=True)
def _need_gloo() -> None:
    import torch.distributed as dist

    assert dist.is_available() and dist.is_gloo_available(), "torch was built without gloo"


def test_packed_ranks_end_each_epoch_at_the_same_batch(tmp_path: Path) -> None:
    # Rank 0's documents are ten times longer than rank 1's: alone it would
    # pack several times more batches, and the per-step collective would hang.
    torchrun(2, tmp_path, "--records", "40", "--pack")
    ranks = load(tmp_path, "pack", 2)
    assert ranks[0]["batches"] == ranks[1]["batches"] > 0
    assert ranks[0]["ended_early"] and not ranks[1]["ended_early"]
    # What was delivered is each rank's own documents, none twice within an epoch.
    for r, got in enumerate(ranks):
        assert all((t // 1000 - 1) % 2 == r for t in got["tokens"])
        per_epoch = len(got["tokens"]) // 2
        assert len(set(got["tokens"][:per_epoch])) == per_epoch


def test_a_packed_job_resumes_on_another_world_size(tmp_path: Path) -> None:
    # Two ranks pack a step and die; three ranks take the rest of the epoch
    # from rank 0's state, which holds both ranks' points.
    torchrun(2, tmp_path, "--records", "40", "--pack", "--stop-after", "1")
    state = json.loads((tmp_path / "state-0.json").read_text())
    assert len(state["pack"]["ranks"]) == 2
    before = load(tmp_path, "packseen", 2)
    torchrun(3, tmp_path, "--records", "40", "--pack", "--resume")
    after = load(tmp_path, "packresumed", 3)
    assert len({r["batches"] for r in after}) == 1, [r["batches"] for r in after]
    seen = [t for r in before + after for t in r["tokens"]]
    assert len(seen) == len(set(seen)), "a token was delivered twice"
    # The rest came from both old ranks' documents (even and odd records).
    assert {(t // 1000 - 1) % 2 for r in after for t in r["tokens"]} == {0, 1}
