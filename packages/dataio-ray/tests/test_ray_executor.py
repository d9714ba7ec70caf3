"""RayExecutor against a real two-node cluster: the batches are the local
loader's, bit for bit, for every shape stage and worker count; the loader's
options (order, on_failure, context, shard, epochs) mean the same; a
checkpoint taken with N workers resumes with M, or locally, and back."""

from __future__ import annotations

from typing import Any

import pytest
from _data import label_context, make_records, random_pipeline, snapshot

import dataio
from dataio.errors import RowError
from dataio_ray import RayExecutor

RECORDS = make_records(29)


@pytest.fixture
def two_workers(ray_cluster: Any) -> Any:
    """Two workers, one per node; closed after the test, which gives their
    CPUs back (idle workers are kept between epochs and would hold them)."""
    ex = RayExecutor(num_workers=2)
    yield ex
    ex.close()


def local(pipe: dataio.Pipeline, records: Any, **opts: Any) -> list[Any]:
    with pipe.bind(records).run("numpy", **opts) as loader:
        return snapshot(loader)


def on_ray(pipe: dataio.Pipeline, records: Any, executor: Any, **opts: Any) -> list[Any]:
    with pipe.bind(records).run("numpy", executor=executor, **opts) as loader:
        return snapshot(loader)


@pytest.mark.parametrize(
    "shape, seed, sized",
    [
        (dataio.batch(4), 11, True),
        (dataio.batch(5, drop_last=True), 3, True),
        (dataio.batch(4), None, False),
        (dataio.group_by("bucket"), None, True),
        (dataio.group_by("bucket"), None, False),
    ],
    ids=["batch-seeded", "batch-drop-last", "batch-one-pass-iterator", "group-by", "group-by-one-pass-iterator"],
)
def test_batches_are_the_local_runs(two_workers: RayExecutor, shape: Any, seed: int | None, sized: bool) -> None:
    pipe = random_pipeline(shape)
    want = local(pipe, RECORDS if sized else iter(RECORDS), seed=seed)
    got = on_ray(pipe, RECORDS if sized else iter(RECORDS), two_workers, seed=seed)
    assert len(got) == len(want) > 1
    assert got == want


def test_collate_is_the_local_run(two_workers: RayExecutor) -> None:
    groups = [RECORDS[0:3], RECORDS[3:4], RECORDS[4:9], RECORDS[9:17]]
    pipe = dataio.pipeline(dataio.slot("image").decode_image().random_resized_crop(8, 8).hflip(), dataio.collate())
    # collate() takes its groups in order (no shuffle); the random ops are
    # keyed by the seed all the same.
    want = local(pipe, groups)
    assert [len(b[0]) for b in want] == [3, 1, 5, 8]
    assert on_ray(pipe, groups, two_workers) == want


@pytest.mark.parametrize("workers, cpus", [(1, 1), (3, 0.5)], ids=["1-worker", "3-workers"])
def test_any_number_of_workers_gives_the_same_batches(ray_cluster: Any, workers: int, cpus: float) -> None:
    pipe = random_pipeline(dataio.batch(3))
    with RayExecutor(num_workers=workers, num_cpus_per_worker=cpus) as ex:
        assert on_ray(pipe, RECORDS, ex, seed=7, epoch=2) == local(pipe, RECORDS, seed=7, epoch=2)


def test_epochs_and_set_epoch(two_workers: RayExecutor) -> None:
    pipe = random_pipeline(dataio.batch(6))
    loader = pipe.bind(RECORDS).run("numpy", seed=1, executor=two_workers)
    epoch0, epoch1 = snapshot(loader), snapshot(loader)
    loader.set_epoch(5)
    epoch5 = snapshot(loader)
    loader.close()
    assert epoch0 == local(pipe, RECORDS, seed=1, epoch=0)
    assert epoch1 == local(pipe, RECORDS, seed=1, epoch=1)
    assert epoch5 == local(pipe, RECORDS, seed=1, epoch=5)
    assert epoch0 != epoch1


def test_completion_order_delivers_every_batch_once_and_checkpoints_the_prefix(two_workers: RayExecutor) -> None:
    pipe = random_pipeline(dataio.batch(2))
    want = {tuple(b[0]): b for b in local(pipe, RECORDS, seed=4)}
    loader = pipe.bind(RECORDS).run("numpy", seed=4, order="completion", executor=two_workers)
    got, states = [], []
    for b in loader:
        got.extend(snapshot([b]))
        states.append(loader.state_dict())
    assert sorted(got) == sorted(want.values())
    # The saved position never passes a batch that was not delivered yet.
    delivered: set[tuple[str, ...]] = set()
    order = [tuple(b[0]) for b in local(pipe, RECORDS, seed=4)]
    for b, state in zip(got, states):
        delivered.add(tuple(b[0]))
        prefix_end = 0
        for keys in order:
            if keys not in delivered:
                break
            prefix_end += len(keys)
        assert state["position"] == prefix_end
    loader.close()


def test_context_and_shard(two_workers: RayExecutor) -> None:
    pipe = random_pipeline(dataio.batch(4))
    opts = {"seed": 9, "shard": {"id": 1, "of": 2, "pad": True}, "context": label_context}
    got = on_ray(pipe, RECORDS, two_workers, **opts)
    assert got == local(pipe, RECORDS, **opts)
    assert got[0][4][0] == (got[0][0][0], int(got[0][0][0][1:]) % 4 * 10)


def test_on_failure_skip_and_raise(two_workers: RayExecutor) -> None:
    records = [dict(r) for r in RECORDS]
    records[6]["image"] = b"not a jpeg"
    records[17]["image"] = records[17]["image"][:40]
    pipe = random_pipeline(dataio.batch(4))
    skipped = on_ray(pipe, records, two_workers, seed=2, on_failure="skip")
    assert skipped == local(pipe, records, seed=2, on_failure="skip")
    assert sorted(k for b in skipped for k, _, _ in b[3]) == ["r17", "r6"]

    def until_error(executor: Any) -> tuple[int, str | None]:
        n = 0
        with pipe.bind(records).run("numpy", seed=2, executor=executor) as loader, pytest.raises(RowError) as info:
            for _ in loader:
                n += 1
        return n, info.value.key

    assert until_error(two_workers) == until_error(None)


def test_torch_output_from_the_object_store(two_workers: RayExecutor) -> None:
    import torch

    pipe = random_pipeline(dataio.batch(8))
    with pipe.bind(RECORDS).run("torch", seed=3, executor=two_workers) as loader:
        got = [(b.keys, b["image"].clone(), b["label"].clone()) for b in loader]
    with pipe.bind(RECORDS).run("torch", seed=3) as loader:
        want = [(b.keys, b["image"], b["label"]) for b in loader]
    assert len(got) == len(want)
    for (gk, gi, gl), (wk, wi, wl) in zip(got, want):
        assert gk == wk and gi.dtype == torch.float32
        assert torch.equal(gi, wi) and torch.equal(gl, wl)


def test_executor_by_name_uses_the_running_cluster(ray_cluster: Any) -> None:
    pipe = random_pipeline(dataio.batch(8))
    with pipe.bind(RECORDS).run("numpy", seed=0, executor="ray") as loader:
        got = snapshot(loader)
        workers = loader.stats()["workers"]
    assert got == local(pipe, RECORDS, seed=0)
    assert len(workers) == 2  # the defaults: num_workers=2


# -- checkpoints across worker counts -----------------------------------------


def _take(loader: Any, n: int) -> list[Any]:
    out = []
    for b in loader:
        out.extend(snapshot([b]))
        if len(out) == n:
            break
    return out


@pytest.mark.parametrize("first, second", [(2, 1), (2, None), (None, 2)], ids=["2-then-1", "2-then-local", "local-then-2"])
def test_checkpoint_resumes_with_another_worker_count(ray_cluster: Any, first: int | None, second: int | None) -> None:
    pipe = random_pipeline(dataio.batch(3))
    want = local(pipe, RECORDS, seed=8, epoch=1)

    def executor(n: int | None) -> Any:
        return None if n is None else RayExecutor(num_workers=n)

    ex1 = executor(first)
    loader = pipe.bind(RECORDS).run("numpy", seed=8, epoch=1, executor=ex1)
    head = _take(loader, 4)
    state = loader.state_dict()
    loader.close()
    if ex1 is not None:
        ex1.close()

    ex2 = executor(second)
    resumed = pipe.bind(RECORDS).run("numpy", seed=8, epoch=1, executor=ex2)
    resumed.load_state_dict(state)
    tail = snapshot(resumed)
    resumed.close()
    if ex2 is not None:
        ex2.close()
    # Nothing lost, nothing repeated, every byte the same.
    assert head + tail == want


def test_stats_and_report_show_the_workers(two_workers: RayExecutor) -> None:
    pipe = random_pipeline(dataio.batch(2))
    assert two_workers.warm_up() == 2  # both take batches from the first one on
    with pipe.bind(RECORDS).run("numpy", seed=1, executor=two_workers) as loader:
        n = sum(len(b) for b in loader)
        stats = loader.stats()
        report = loader.report()
    workers = stats["workers"]
    assert len({w["name"] for w in workers}) == len(workers) == 2
    assert sum(w["records_done"] for w in workers) == stats["records_done"] == n
    assert sum(w["batches"] for w in workers) == stats["batches_delivered"] == 15
    assert all(w["records_done"] > 0 and w["busy_seconds"] > 0 and w["node_ip"] == "127.0.0.1" for w in workers)
    assert stats["decode_seconds"] == pytest.approx(sum(w["decode_seconds"] for w in workers)) and stats["decode_seconds"] > 0
    slowest = stats["slowest_worker"]
    assert slowest["name"] in {w["name"] for w in workers}
    assert slowest["waiting_on"] in {"trainer", "fetch", "decode", "source", "transfer"}
    assert slowest["summary"].startswith(f"slowest worker: {slowest['name']} on 127.0.0.1")
    assert f"waiting on {slowest['waiting_on']}" in slowest["summary"]
    assert report.rates["records_per_s"] > 0
    # The report names the slowest worker, and counts the workers' threads.
    assert report.slowest_worker == slowest and slowest["summary"] in str(report)
    assert report.queues["cpu_threads"] == stats["cpu_threads"]


def test_closing_mid_epoch_releases_the_actors(ray_cluster: Any) -> None:
    import ray

    pipe = random_pipeline(dataio.batch(2))
    ex = RayExecutor(num_workers=2)
    assert ex.warm_up() == 2
    loader = pipe.bind(RECORDS).run("numpy", seed=0, executor=ex)
    next(iter(loader))
    pids = [w["pid"] for w in loader.stats()["workers"]]
    assert len(pids) == 2
    loader.close()
    assert all(line.endswith("(released)") for line in ex.workers())
    # Ray gives both CPUs back once the actors are gone.
    wait_for(lambda: ray.available_resources().get("CPU", 0) == ray.cluster_resources().get("CPU", 0), 60)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def wait_for(predicate: Any, timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


# -- datasets in shards ---------------------------------------------------------


def _tar_shards(folder: Any, counts: list[int]) -> list[str]:
    import io
    import tarfile

    from _data import jpeg

    uris, n = [], 0
    for s, count in enumerate(counts):
        path = folder / f"train-{s:04d}.tar"
        with tarfile.open(path, "w") as tar:
            for _ in range(count):
                for ext, data in (("image", jpeg(n)), ("label", str(n % 4).encode())):
                    info = tarfile.TarInfo(f"{n:05d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                n += 1
        uris.append(str(path))
    return uris


def test_tar_shards_shuffle_and_resume_like_the_local_run(two_workers: RayExecutor, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    _tar_shards(tmp_path, [9, 7, 11, 6])
    records = dataio.tar_records(str(tmp_path / "train-{0000..0003}.tar"), shuffle_window=8)
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().random_resized_crop(16, 16).hflip(),
        dataio.slot("label").decode_bytes(),
        dataio.batch(4),
    )
    want = local(pipe, records, seed=5, epoch=1)  # the native shard path
    assert sorted(k for b in want for k in b[0]) == [f"{n:05d}" for n in range(33)]
    assert on_ray(pipe, records, two_workers, seed=5, epoch=1) == want
    loader = pipe.bind(records).run("numpy", seed=5, epoch=1, executor=two_workers)
    head = _take(loader, 3)
    state = loader.state_dict()
    loader.close()
    resumed = pipe.bind(records).run("numpy", seed=5, epoch=1)
    resumed.load_state_dict(state)
    assert head + snapshot(resumed) == want
    resumed.close()


def test_a_mix_is_the_local_run_and_resumes_across_executors(two_workers: RayExecutor) -> None:
    small = make_records(7)
    mixed = dataio.mix([RECORDS, small], weights=[0.7, 0.3], stop="all_exhausted")
    pipe = random_pipeline(dataio.batch(4))
    want = local(pipe, mixed, seed=6, epoch=1)
    assert on_ray(pipe, mixed, two_workers, seed=6, epoch=1) == want
    loader = pipe.bind(mixed).run("numpy", seed=6, epoch=1, executor=two_workers)
    head = _take(loader, 3)
    state = loader.state_dict()
    loader.close()
    resumed = pipe.bind(mixed).run("numpy", seed=6, epoch=1)
    resumed.load_state_dict(state)
    assert head + snapshot(resumed) == want
    resumed.close()


def test_the_default_call_carries_about_128_samples() -> None:
    from types import SimpleNamespace

    from dataio_ray.executor import _default_batches_per_task

    def per_call(shape: Any) -> int:
        return _default_batches_per_task(SimpleNamespace(pipeline=dataio.pipeline(dataio.slot("image").decode_image(), shape)))  # type: ignore[arg-type]

    assert [per_call(dataio.batch(n)) for n in (2, 32, 100, 128, 256)] == [8, 4, 2, 1, 1]
    assert per_call(dataio.group_by("label", prefetch=2)) == 1
