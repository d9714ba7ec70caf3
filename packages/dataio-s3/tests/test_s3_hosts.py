"""Many hosts reading one set of tar shards from S3 (moto): each host a
process with its own cache directory, two ranks per host. The order is
partitioned by host, so a shard is fetched by one host per epoch: store
bytes per epoch stay at the dataset's size for 1, 2, 4 and 8 hosts, where
every host used to fetch every shard (2x the dataset for 2 hosts, 4.12x for
4). Ranks are disjoint, every sample comes once, batch counts are equal, and
a job resumed on another host count goes on where each partition stood."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ACCESS_KEY, SECRET_KEY, S3Server
from PIL import Image

import dataio

wds = pytest.importorskip("webdataset", reason="webdataset is in the core's test group")

SHARDS = 16
PER_SHARD = 20
N = SHARDS * PER_SHARD

# One host: its ranks' loaders in turn over one cache directory (the ranks of
# a host share it), the store bytes that host read, and each rank's keys.
HOST = r"""
import json, sys, dataio, dataio_s3
endpoint, key, secret, spec, index_dir, cache_dir, hosts, host, local, state, batches, declared = sys.argv[1:13]
dataio.configure_endpoint("s3", endpoint)
dataio.configure_credentials("s3", access_key_id=key, secret_access_key=secret)
hosts, host, local, batches = int(hosts), int(host), int(local), int(batches)
recs = dataio.tar_records(spec, shuffle_window=40, cache_dir=cache_dir, cache_bytes=1 << 30, index_dir=index_dir)
before = recs.stats()["store_bytes_read"]
pipe = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.batch(5))
ranks = []
for l in range(local):
    shard = {"id": host * local + l, "of": hosts * local, "pad": True, "hosts": int(declared)}
    with pipe.bind(recs).run("numpy", seed=3, shard=shard) as loader:
        if state != "-":
            loader.load_state_dict(json.loads(state))
        keys = []
        for i, b in enumerate(loader):
            assert b["jpg"][:, 0, 0, 0].tolist() == [int(k) % 251 for k in b.keys]
            keys.append([int(k) for k in b.keys])
            if batches and i + 1 == batches:
                break
        source = loader.stats()["source"]
        ranks.append({"keys": keys, "len": len(loader), "state": loader.state_dict(),
                      "ratio": source.get("host_fetch_to_delivery"), "report": str(loader.report())})
print(json.dumps({"store_bytes": recs.stats()["store_bytes_read"] - before, "ranks": ranks}))
"""


@pytest.fixture(scope="module")
def dataset(moto_server: tuple[str, int], _bucket: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from conftest import boto_client

    tmp = tmp_path_factory.mktemp("host-shards")
    client = boto_client(moto_server[0])
    prefix = f"hosts-{uuid.uuid4().hex[:8]}"
    size, n = 0, 0
    for s in range(SHARDS):
        path = tmp / f"train-{s:04d}.tar"
        with wds.TarWriter(str(path)) as w:
            for _ in range(PER_SHARD):
                buf = io.BytesIO()
                Image.fromarray(np.full((16, 16, 3), n % 251, np.uint8)).save(buf, "JPEG", quality=95)
                w.write({"__key__": f"{n:06d}", "jpg": buf.getvalue()})
                n += 1
        client.upload_file(str(path), _bucket, f"{prefix}/train-{s:04d}.tar")
        size += path.stat().st_size
    return {"spec": f"s3://{_bucket}/{prefix}/train-{{0000..{SHARDS - 1:04d}}}.tar", "bytes": size, "tmp": tmp}


def counted(s3: S3Server, dataset: dict[str, Any], tmp_path: Path) -> Path:
    """An index directory that knows every shard's count (what a fresh host
    gets from a shard index beside the shards): opening the source then
    reads no shard."""
    index_dir = tmp_path / "index"
    dataio.tar_records(dataset["spec"], cache_dir=tmp_path / "counting-cache", index_dir=index_dir)
    return index_dir


def run_hosts(
    s3: S3Server, dataset: dict[str, Any], tmp_path: Path, hosts: int, *,
    state: dict[str, Any] | None = None, batches: int = 0, tag: str = "", declared: int | None = None,
) -> list[dict[str, Any]]:
    index_dir = tmp_path / "index"

    def one(h: int) -> dict[str, Any]:
        args = [
            s3.endpoint, ACCESS_KEY, SECRET_KEY, dataset["spec"], str(index_dir), str(tmp_path / f"cache{tag}-{hosts}-{h}"),
            str(hosts), str(h), "2", json.dumps(state) if state is not None else "-", str(batches),
            str(hosts if declared is None else declared),
        ]
        p = subprocess.run([sys.executable, "-c", HOST, *args], capture_output=True, text=True, timeout=300, env=dict(os.environ))
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, range(hosts)))


@pytest.mark.parametrize("hosts", [1, 2, 4, 8])
def test_store_bytes_per_epoch_stay_at_the_dataset_for_any_host_count(s3: S3Server, dataset: dict[str, Any], tmp_path: Path, hosts: int) -> None:
    counted(s3, dataset, tmp_path)
    out = run_hosts(s3, dataset, tmp_path, hosts)
    fetched = sum(o["store_bytes"] for o in out)
    assert fetched <= 1.05 * dataset["bytes"], f"{hosts} hosts fetched {fetched / dataset['bytes']:.2f}x the dataset"
    ranks = [r for o in out for r in o["ranks"]]
    keys = [k for r in ranks for b in r["keys"] for k in b]
    assert sorted(keys) == list(range(N)), "every sample once, ranks disjoint"
    assert len({len(r["keys"]) for r in ranks}) == 1 and all(len(r["keys"]) == r["len"] for r in ranks), "equal batch counts"
    # What each host fetched against what its ranks delivered: about 1, and the report names no host.
    for o in out:
        ratio = o["ranks"][-1]["ratio"]
        assert ratio is not None and 0.9 <= ratio <= 1.1, ratio
        assert "fetched more than once" not in o["ranks"][-1]["report"]


def test_the_report_names_a_host_that_fetches_every_shard(s3: S3Server, dataset: dict[str, Any], tmp_path: Path) -> None:
    # Two hosts that do not say they are two (every rank on "one host"):
    # each reads every shard, so each fetches the whole dataset.
    counted(s3, dataset, tmp_path)
    out = run_hosts(s3, dataset, tmp_path, 2, declared=1)
    assert sum(o["store_bytes"] for o in out) >= 1.8 * dataset["bytes"]
    for o in out:
        last = o["ranks"][-1]
        assert last["ratio"] > 1.5, last["ratio"]
        assert f"host 0 fetched {last['ratio']:.2f}x" in last["report"], last["report"]


def test_resume_and_elastic_resume_across_host_processes(s3: S3Server, dataset: dict[str, Any], tmp_path: Path) -> None:
    counted(s3, dataset, tmp_path)
    full = run_hosts(s3, dataset, tmp_path, 4, tag="full")
    head = run_hosts(s3, dataset, tmp_path, 4, batches=2, tag="head")
    state = head[0]["ranks"][0]["state"]
    assert all(r["state"]["partition_progress"] == state["partition_progress"] for o in head for r in o["ranks"])
    consumed = [k for o in head for r in o["ranks"] for b in r["keys"] for k in b]
    # Same hosts: each rank goes on exactly where it stopped.
    for o_full, o_head in zip(full, head, strict=True):
        for r_full, r_head in zip(o_full["ranks"], o_head["ranks"], strict=True):
            assert r_head["keys"] == r_full["keys"][:2]
    for hosts in (2, 3):
        rest = run_hosts(s3, dataset, tmp_path, hosts, state=state, tag=f"elastic{hosts}")
        keys = [k for o in rest for r in o["ranks"] for b in r["keys"] for k in b]
        assert sorted(consumed + keys) == list(range(N)), f"4 -> {hosts} hosts: a sample lost or repeated"
        if hosts == 2:
            # fewer hosts that divide the canonical four: each shard of the
            # rest of the epoch is fetched by one host (partly read ones whole)
            assert sum(o["store_bytes"] for o in rest) <= 1.05 * dataset["bytes"]
