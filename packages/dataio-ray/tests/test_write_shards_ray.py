"""dataio.write_shards with ``executor=RayExecutor(...)``: the cluster's
workers decode, resize and encode, the driver writes the shards, and the
files are a local run's byte for byte (shards, shardindex.json and the
manifest's entries), with the same failed rows; a worker killed mid-write
loses nothing and the shards still equal the local run's. The writer reads
the loader's position after each batch and its skipped rows through
``log_errors``: the first test checks both mean the same under the Ray
executor, dropped batches (every row failed) included."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _data import hang_once_on_worker, jpeg

import dataio
from dataio_ray import RayExecutor

N = 60
# A few broken files, and one batch of four (records 32..35) where every row
# fails: that batch is not delivered, and its rows reach the writer through
# log_errors alone.
BROKEN = {7, 23, 32, 33, 34, 35, 50}
HANG = 44  # the record whose first execution on a worker hangs until killed


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("images")
    for i in range(N):
        (root / f"{i:03d}.jpg").write_bytes(b"not a jpeg" if i in BROKEN else jpeg(i))
    return root


def _records(images: Path, extra: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    extra = extra or {}
    return [{"key": f"s{i:03d}", "image": str(images / f"{i:03d}.jpg"), "cls": i % 10, **extra.get(i, {})} for i in range(N)]


def _pipe(*maps: Any) -> dataio.Pipeline:
    return dataio.pipeline(
        *[dataio.map(f) for f in maps],
        dataio.slot("jpg", field="image").decode_image().resize_short(24).encode_image("jpeg", quality=90),
        dataio.slot("cls").decode_bytes(),
        dataio.batch(4),
    )


def _files(folder: Path) -> dict[str, bytes]:
    """Every file the writer left, by name; the manifest without its ``dest``
    (the one thing that names the folder)."""
    out = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    for name in [n for n in out if n.endswith(".manifest.json")]:
        doc = json.loads(out[name])
        doc["fingerprint"].pop("dest")
        out[name] = json.dumps(doc, sort_keys=True).encode()
    return out


def _errors(report: dataio.WriteReport) -> list[tuple[Any, ...]]:
    return sorted((e.key, e.slot, e.op, e.cause_kind) for e in report.errors)


def _deliveries(bound: Any, **opts: Any) -> tuple[list[tuple[Any, ...]], list[str]]:
    """What write_shards reads from its loader: after each batch, the
    position and the rows skipped so far (log_errors), with the batch's keys
    and errors."""
    logged: list[Any] = []
    seen = []
    with bound.run("numpy", on_failure="skip", order="submit", log_errors=logged.append, **opts) as loader:
        for b in loader:
            seen.append((loader.state_dict()["position"], list(b.keys), [e.key for e in b.errors], [e.key for e in logged]))
    return seen, [e.key for e in logged]


def test_position_and_skipped_rows_are_the_local_runs(ray_cluster: Any, images: Path) -> None:
    bound = _pipe().bind(_records(images))
    ex = RayExecutor(num_workers=2)
    try:
        with pytest.warns(RuntimeWarning, match="every row failed"):
            want = _deliveries(bound)
        with pytest.warns(RuntimeWarning, match="every row failed"):
            got = _deliveries(bound, executor=ex)
    finally:
        ex.close()
    assert got == want
    seen, logged = got
    assert sorted(logged) == [f"s{i:03d}" for i in sorted(BROKEN)]
    # The dropped batch's rows are logged before the next delivered batch,
    # whose position is past both.
    after = next(s for s in seen if "s036" in s[1])
    assert after[0] == 40 and {"s032", "s035"} <= set(after[3])


def test_shards_written_on_ray_are_the_local_runs_byte_for_byte(ray_cluster: Any, images: Path, tmp_path: Path) -> None:
    bound = _pipe().bind(_records(images))
    local = dataio.write_shards(bound, str(tmp_path / "local" / "train-{000000..}.tar"), samples_per_shard=10)
    ex = RayExecutor(num_workers=2)
    try:
        on_ray = dataio.write_shards(bound, str(tmp_path / "ray" / "train-{000000..}.tar"), samples_per_shard=10, executor=ex)
        stats = ex.workers()
    finally:
        ex.close()
    assert len(stats) == 2
    want, got = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert list(got) == list(want) == ["shardindex.json", *[f"train-{i:06d}.tar" for i in range(6)], "train.tar.manifest.json"]
    assert got == want
    assert on_ray.failed == local.failed == {"DecodeError": len(BROKEN)}
    assert _errors(on_ray) == _errors(local) and len(local.errors) == len(BROKEN)
    assert on_ray.samples == local.samples == N - len(BROKEN)
    assert len(dataio.tar_records(str(tmp_path / "ray" / "shardindex.json"))) == N - len(BROKEN)


@pytest.mark.timeout(240)
def test_a_worker_killed_mid_write_leaves_the_local_runs_shards(ray_cluster: Any, images: Path, tmp_path: Path) -> None:
    flag = tmp_path / "hang.pid"
    records = _records(images, {HANG: {"hang": str(flag)}})
    bound = _pipe(hang_once_on_worker).bind(records)
    local = dataio.write_shards(bound, str(tmp_path / "local" / "train-{000000..}.tar"), samples_per_shard=10)
    assert not flag.exists(), "the map hangs on workers only"

    first_shard = tmp_path / "ray" / "train-000000.tar"
    killed: dict[str, Any] = {}

    def kill_the_hanging_worker() -> None:
        # The worker holding record HANG's batch waits in the map; kill it
        # once the writer has finished a shard: mid-write.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (flag.exists() and flag.read_text() and first_shard.exists()):
            time.sleep(0.05)
        killed["shards_before"] = sorted(p.name for p in first_shard.parent.glob("train-*.tar"))
        pid = int(flag.read_text())
        os.kill(pid, signal.SIGKILL)
        killed["pid"] = pid

    # One batch a call, so the other batches keep flowing while one hangs.
    ex = RayExecutor(num_workers=2, batches_per_task=1, max_worker_restarts=2)
    assert ex.warm_up() == 2
    killer = threading.Thread(target=kill_the_hanging_worker, daemon=True)
    killer.start()
    try:
        on_ray = dataio.write_shards(bound, str(tmp_path / "ray" / "train-{000000..}.tar"), samples_per_shard=10, executor=ex)
        lines = ex.workers()
    finally:
        killer.join(timeout=5)
        ex.close()
    assert killed.get("pid"), "no worker was killed"
    assert killed["shards_before"] and len(killed["shards_before"]) < len(local.shards), killed
    # The killed worker is dead (not released at the end) and was replaced.
    assert any(f"(pid {killed['pid']})" in line and "dead" in line and "released" not in line for line in lines), lines
    assert len(lines) == 3, lines
    assert _files(tmp_path / "ray") == _files(tmp_path / "local")
    assert on_ray.failed == local.failed == {"DecodeError": len(BROKEN)}
    assert on_ray.samples == local.samples


def test_a_local_write_cut_short_resumes_on_ray_into_the_same_shards(ray_cluster: Any, images: Path, tmp_path: Path) -> None:
    bound = _pipe().bind(_records(images))
    dest = str(tmp_path / "out" / "train-{000000..}.tar")
    local = dataio.write_shards(bound, dest, samples_per_shard=10)
    want = _files(tmp_path / "out")
    # What a crash after the third shard's upload leaves: the manifest lists
    # three shards (not complete), a fourth stands unlisted, no index.
    manifest = tmp_path / "out" / "train.tar.manifest.json"
    doc = json.loads(manifest.read_text())
    assert doc["shards"][2]["end_keys"], "the cut falls inside a batch: its written rows must be dropped"
    manifest.write_text(json.dumps({k: v for k, v in doc.items() if k != "complete"} | {"shards": doc["shards"][:3]}))
    for name in ["shardindex.json", "train-000004.tar", "train-000005.tar"]:
        (tmp_path / "out" / name).unlink()
    ex = RayExecutor(num_workers=2)
    try:
        resumed = dataio.write_shards(bound, dest, samples_per_shard=10, executor=ex)
    finally:
        ex.close()
    assert resumed.kept == 3 and len(resumed.shards) == len(local.shards)
    assert _files(tmp_path / "out") == want
    assert resumed.failed == local.failed
