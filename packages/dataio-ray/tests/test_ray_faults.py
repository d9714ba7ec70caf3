"""Faults on a real cluster: a worker process killed, a node removed, a batch
that kills every worker it touches, no worker left. Lost batches are computed
again and the epoch's batches stay the local run's; when nothing can run,
the loader ends in a typed error (the pytest timeout turns a hang into a
failure)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
from _data import make_records, random_pipeline, snapshot, worker_only_crash

import dataio
from dataio_ray import RayExecutor, WorkersLostError

RECORDS = make_records(40)


def local(pipe: dataio.Pipeline, records: Any, **opts: Any) -> list[Any]:
    with pipe.bind(records).run("numpy", **opts) as loader:
        return snapshot(loader)


def test_a_killed_worker_process_is_replaced_and_its_batches_recomputed(ray_cluster: Any) -> None:
    pipe = random_pipeline(dataio.batch(2))
    want = local(pipe, RECORDS, seed=21)
    # One batch a call, so that calls are still in flight when one is killed.
    ex = RayExecutor(num_workers=2, max_worker_restarts=2, batches_per_task=1)
    assert ex.warm_up() == 2
    got = []
    with pipe.bind(RECORDS).run("numpy", seed=21, executor=ex) as loader:
        for i, b in enumerate(loader):
            got.extend(snapshot([b]))
            if i == 2:
                # Kill a worker that has batches in flight.
                busy = [w for w in loader.stats()["workers"] if w["calls_in_flight"]]
                os.kill(busy[0]["pid"], signal.SIGKILL)
                victim = busy[0]["name"]
        stats = loader.stats()
    ex.close()
    assert got == want
    lines = ex.workers()
    assert any(line.startswith(victim) and "dead" in line and "released" not in line for line in lines), lines
    assert len(lines) == 3, "a replacement was started"
    assert stats["batches_retried"] >= 1


def test_a_removed_node_loses_its_worker_and_the_epoch_completes(ray_cluster: Any) -> None:
    # Two nodes of its own, so the session's nodes stay; the workers may run
    # only where the "faults" resource is.
    nodes = [ray_cluster.add_node(num_cpus=1, resources={"faults": 1}) for _ in range(2)]
    pipe = random_pipeline(dataio.batch(2))
    want = local(pipe, RECORDS, seed=5)
    ex = RayExecutor(num_workers=2, resources={"faults": 1}, worker_start_timeout=60, batches_per_task=1)
    assert ex.warm_up() == 2
    got = []
    try:
        with pipe.bind(RECORDS).run("numpy", seed=5, executor=ex) as loader:
            for i, b in enumerate(loader):
                got.extend(snapshot([b]))
                if i == 2:
                    workers = loader.stats()["workers"]
                    assert len({w["node_id"] for w in workers}) == 2, "one worker per node"
                    node = nodes.pop(0)
                    ray_cluster.lose_node(node, [w["pid"] for w in workers if w["node_id"] == node.node_id])
            stats = loader.stats()
    finally:
        ex.close()
        for node in nodes:
            ray_cluster.remove_node(node)
    assert got == want
    # The lost node's worker is dead; its replacement has nowhere to go (the
    # other node is full) and was released with the executor.
    assert sum(1 for w in stats["workers"] if w["state"] == "dead") >= 1


def test_a_batch_that_kills_every_worker_fails_after_the_retry_budget(ray_cluster: Any) -> None:
    records = [dict(r) for r in RECORDS[:12]]
    records[7]["crash"] = True
    pipe = dataio.pipeline(dataio.map(worker_only_crash), dataio.slot("image").decode_image().resize(h=8, w=8), dataio.batch(4))
    ex = RayExecutor(num_workers=2, max_batch_retries=2, max_worker_restarts=10)
    delivered = 0
    with pytest.raises(WorkersLostError) as info, pipe.bind(records).run("numpy", executor=ex) as loader:
        for _ in loader:
            delivered += 1
    ex.close()
    assert info.value.batch == 1  # records 4..7
    assert info.value.attempts == 3
    assert "max_batch_retries=2" in str(info.value)
    assert delivered == 1
    assert isinstance(info.value, dataio.DataioError)


@pytest.mark.timeout(180)
def test_no_worker_left_ends_in_a_typed_error(ray_cluster: Any) -> None:
    node = ray_cluster.add_node(num_cpus=1, resources={"lonely": 1})
    pipe = random_pipeline(dataio.batch(2))
    ex = RayExecutor(num_workers=1, resources={"lonely": 1}, max_worker_restarts=1, worker_start_timeout=5)
    assert ex.warm_up(timeout=60) == 1
    delivered = 0
    try:
        with pytest.raises(WorkersLostError) as info, pipe.bind(RECORDS).run("numpy", seed=1, executor=ex) as loader:
            for _ in loader:
                delivered += 1
                if delivered == 1:
                    ray_cluster.lose_node(node, [w["pid"] for w in loader.stats()["workers"]])
    finally:
        ex.close()
    # The replacement either never finds a place (worker_start_timeout) or is
    # placed on the dying node before Ray knows it is gone and fails to
    # start (the restart budget is then spent): both end here.
    message = str(info.value)
    assert "has no worker left" in message
    assert "worker_start_timeout=5s" in message or "max_worker_restarts=1" in message
    assert info.value.batch is None and len(info.value.workers) == 2
    assert 1 <= delivered < len(RECORDS) // 2


def test_no_restart_budget_fails_at_once_when_the_last_worker_dies(ray_cluster: Any) -> None:
    pipe = random_pipeline(dataio.batch(2))
    ex = RayExecutor(num_workers=1, max_worker_restarts=0)
    with pytest.raises(WorkersLostError, match="restart budget"), pipe.bind(RECORDS).run("numpy", seed=1, executor=ex) as loader:
        for i, _ in enumerate(loader):
            if i == 0:
                os.kill(loader.stats()["workers"][0]["pid"], signal.SIGKILL)
    ex.close()
