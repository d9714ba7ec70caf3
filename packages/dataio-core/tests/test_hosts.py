"""Shard sources read by several hosts: the order is partitioned by host.

Each host's ranks read only the shards of the host's canonical partitions,
so a shard is fetched by one host per epoch; the ranks are disjoint, every
sample comes once, ``pad=True`` gives every rank the same batch count, a
resume is exact, and a resume on another host count continues each
partition where it stood (exact where the counts divide, every sample once
otherwise). Hosts are simulated here as loaders with their own
``shard={"id", "of", "hosts"}`` in one process (the order is all that is
tested; store bytes per host are measured through the S3 emulator in
dataio-s3's tests)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio
from dataio.errors import InvalidArgumentError

wds = pytest.importorskip("webdataset", reason="webdataset is in the core's test group")

COUNTS = [24] * 16
N = sum(COUNTS)
PIPE = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.batch(8))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("host-shards")
    n = 0
    for s, count in enumerate(COUNTS):
        with wds.TarWriter(str(root / f"train-{s:04d}.tar")) as w:
            for _ in range(count):
                buf = io.BytesIO()
                Image.fromarray(np.full((8, 8, 3), n % 251, np.uint8)).save(buf, "JPEG", quality=95)
                w.write({"__key__": f"s{s:04d}/{n:06d}", "jpg": buf.getvalue()})
                n += 1
    return str(root / "train-{0000..0015}.tar")


def records(shards: str) -> Any:
    return dataio.tar_records(shards, shuffle_window=32)


def sample(key: str) -> int:
    return int(key.split("/")[1])


def shard_no(key: str) -> int:
    return int(key.split("/")[0][1:])


def read(recs: Any, shard: dict[str, Any], *, batches: int | None = None, state: dict[str, Any] | None = None, epoch: int = 0) -> tuple[list[list[str]], dict[str, Any], int]:
    """(batches' keys, state after them, len(loader)) of one rank."""
    loader = PIPE.bind(recs).run("numpy", seed=1, epoch=epoch, shard=shard)
    with loader:
        if state is not None:
            loader.load_state_dict(state)
        total = len(loader)
        out: list[list[str]] = []
        for b in loader:
            # the bytes are the sample's own
            assert b["jpg"][:, 0, 0, 0].tolist() == [sample(k) % 251 for k in b.keys]
            out.append(list(b.keys))
            if batches is not None and len(out) == batches:
                break
        return out, loader.state_dict(), total


@pytest.mark.parametrize("hosts", [1, 2, 4, 8])
def test_each_host_reads_its_own_shards_and_every_sample_comes_once(shards: str, hosts: int) -> None:
    recs = records(shards)
    world = hosts * 2
    per_rank = [read(recs, {"id": r, "of": world, "pad": True, "hosts": hosts}) for r in range(world)]
    keys = [k for got, _, _ in per_rank for b in got for k in b]
    assert sorted(sample(k) for k in keys) == list(range(N)), "every sample once"
    assert len({len(got) for got, _, _ in per_rank}) == 1, "equal batch counts"
    assert all(len(got) == total for got, _, total in per_rank), "len(loader) is the batch count"
    owners: dict[int, set[int]] = {}
    for r, (got, _, _) in enumerate(per_rank):
        for b in got:
            for k in b:
                owners.setdefault(shard_no(k), set()).add(r // 2)
    assert all(len(h) == 1 for h in owners.values()), f"a shard read by several hosts: {owners}"
    assert len(owners) == len(COUNTS)


def test_one_host_is_the_order_of_one_global_stream(shards: str) -> None:
    recs = records(shards)
    one = [read(recs, {"id": r, "of": 2, "pad": True})[0] for r in range(2)]
    explicit = [read(recs, {"id": r, "of": 2, "pad": True, "hosts": 1})[0] for r in range(2)]
    assert one == explicit


def test_host_partitioned_orders_differ_by_epoch_and_repeat_by_seed(shards: str) -> None:
    recs = records(shards)
    shard = {"id": 1, "of": 4, "pad": True, "hosts": 2}
    e0, e0_again, e1 = read(recs, shard)[0], read(recs, shard)[0], read(recs, shard, epoch=1)[0]
    assert e0 == e0_again and e0 != e1
    # the host keeps its shards across epochs (its cache holds only its share)
    assert {shard_no(k) for b in e0 for k in b} == {shard_no(k) for b in e1 for k in b}


def test_resume_on_the_same_hosts_is_exact(shards: str) -> None:
    recs = records(shards)
    shard = {"id": 3, "of": 4, "pad": True, "hosts": 2}
    full = read(recs, shard)[0]
    head, state, _ = read(recs, shard, batches=3)
    assert head == full[:3]
    assert state["shard"]["canonical_hosts"] == 2 and len(state["partition_progress"]) == 2
    rest = read(recs, shard, state=state)[0]
    assert rest == full[3:]


@pytest.mark.parametrize(("old", "new"), [(4, 2), (2, 4), (4, 3), (4, 8)])
def test_elastic_resume_to_another_host_count(shards: str, old: int, new: int) -> None:
    recs = records(shards)
    pad = old % new == 0 or new % old == 0
    steps = 2
    before = [read(recs, {"id": r, "of": old * 2, "pad": pad, "hosts": old}, batches=steps) for r in range(old * 2)]
    states = [s for _, s, _ in before]
    assert all(s["partition_progress"] == states[0]["partition_progress"] for s in states)
    consumed = [k for got, _, _ in before for b in got for k in b]
    after = [read(recs, {"id": r, "of": new * 2, "pad": pad, "hosts": new}, state=states[0]) for r in range(new * 2)]
    rest = [k for got, _, _ in after for b in got for k in b]
    assert sorted(sample(k) for k in consumed + rest) == list(range(N)), f"{old} -> {new} hosts: a sample lost or repeated"
    if pad:
        assert len({len(got) for got, _, _ in after}) == 1, "equal batch counts after the resume"
    if old % new == 0:
        # fewer hosts: each shard of the rest is still read by one host
        owners: dict[int, set[int]] = {}
        for r, (got, _, _) in enumerate(after):
            for b in got:
                for k in b:
                    owners.setdefault(shard_no(k), set()).add(r // 2)
        assert all(len(h) == 1 for h in owners.values()), owners


def test_torchrun_environment_names_the_hosts(shards: str, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = records(shards)
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("GROUP_RANK", "2")
    from_env = read(recs, {"id": 5, "of": 8, "pad": True})
    explicit = read(recs, {"id": 5, "of": 8, "pad": True, "hosts": 4})
    assert from_env[0] == explicit[0] and from_env[1]["shard"]["hosts"] == 4
    with pytest.raises(InvalidArgumentError, match="host 2"):
        PIPE.bind(recs).run("numpy", seed=1, shard={"id": 1, "of": 8, "pad": True})  # GROUP_RANK says host 2, rank 1 is on host 0
    with pytest.raises(InvalidArgumentError, match="does not split evenly"):
        PIPE.bind(recs).run("numpy", seed=1, shard={"id": 0, "of": 6, "hosts": 4})
