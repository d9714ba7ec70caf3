"""WebDataset tar shards in an S3 store (moto), one epoch through
``RayExecutor(num_workers=2)`` on the two-node cluster: the batches are the
local run's bit for bit, every sample comes once, and the store serves each
shard once in the epoch — to the trainer, which plans the batches by reading
every planned record (``EpochJob.plan()`` over a Python source calls
``records[i]``) and ships the sample bytes inside the planned batches; the
workers never ask the store for anything.

The store is a moto server started in the cluster's network namespace (so
the workers could reach it too) behind a WSGI counter: per request, its
method, key, body bytes sent and the process whose socket asked (found from
the client port through ``/proc``). That is the honest count of store
traffic: what the store sent, and to whom — not what a client says it read.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _data import jpeg, snapshot

import dataio
from dataio.testing import QUICK_RETRIES, require
from dataio_ray import RayExecutor

wds = pytest.importorskip("webdataset", reason="webdataset is in the core's test group")
pytest.importorskip("dataio_s3", reason="the S3 plugin serves the shards")
require("moto.server", "moto[server], the S3 emulator")

ACCESS_KEY = "AKIADATAIOTESTKEY01"
SECRET_KEY = "dataio-test-secret-do-not-print-0123456789"
COUNTS = [16, 16, 16, 16, 16, 16]  # samples per shard
PIPE = dataio.pipeline(
    dataio.slot("jpg").decode_image(mode="rgb").random_resized_crop(16, 16).hflip().normalize(),
    dataio.slot("cls").decode_bytes(),
    dataio.batch(8),
)


def _socket_owner(port: int) -> int | None:
    """The pid of the process holding the TCP socket whose local port is
    ``port`` (this namespace's), or None when it is gone."""
    inode = None
    for table in ("/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inode = cols[9]
                    break
        if inode:
            break
    if not inode or inode == "0":
        return None
    target = f"socket:[{inode}]"
    pids = [os.getpid()] + [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


@dataclass
class Served:
    """One request the store answered."""

    method: str
    key: str
    body_bytes: int
    pid: int | None


@dataclass
class CountingStore:
    """The moto app, counting what it sends and to which process."""

    app: Any
    log: list[Served] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    owners: dict[int, int | None] = field(default_factory=dict)  # client port → pid (keep-alive reuses a port)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        port = int(environ.get("REMOTE_PORT") or 0)
        with self.lock:
            pid = self.owners.get(port)
            if pid is None:
                pid = self.owners[port] = _socket_owner(port)
        method, key = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        sent = 0
        try:
            for chunk in self.app(environ, start_response):
                sent += len(chunk)
                yield chunk
        finally:
            with self.lock:
                self.log.append(Served(method, key, sent if method != "HEAD" else 0, pid))

    def mark(self) -> int:
        with self.lock:
            return len(self.log)

    def since(self, mark: int) -> list[Served]:
        with self.lock:
            return list(self.log[mark:])


@dataclass
class Store:
    endpoint: str
    bucket: str
    client: Any
    counter: CountingStore


@pytest.fixture(scope="module")
def store(ray_cluster: Any) -> Iterator[Store]:
    """Moto on 127.0.0.1, started here, after the cluster fixture moved this
    thread into the cluster's namespace: its server thread lives there."""
    import boto3
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    import dataio_s3

    counter = CountingStore(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, counter, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    bucket = f"dataio-ray-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    dataio.configure_endpoint("s3", endpoint)
    dataio.configure_credentials("s3", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)
    dataio_s3.configure("s3", **QUICK_RETRIES)
    try:
        yield Store(endpoint, bucket, client, counter)
    finally:
        dataio.config.reset("s3")
        dataio_s3.PLUGIN.reset("s3")
        server.shutdown()
        thread.join()


def upload_shards(store: Store, tmp: Path) -> tuple[str, dict[str, int]]:
    """Tar shards written by webdataset's TarWriter, and the shard index
    webdataset's ``widsindex`` format describes them with, beside them (so
    opening the source reads one small JSON, no shard). Returns the index's
    URI and each shard's key and stored size."""
    prefix = f"train-{uuid.uuid4().hex[:8]}"
    sizes, n = {}, 0
    shardlist = []
    for s, count in enumerate(COUNTS):
        name = f"shard-{s:04d}.tar"
        path = tmp / name
        with wds.TarWriter(str(path)) as w:
            for _ in range(count):
                w.write({"__key__": f"{n:06d}", "jpg": jpeg(n), "cls": str(n % 4).encode()})
                n += 1
        store.client.upload_file(str(path), store.bucket, f"{prefix}/{name}")
        sizes[f"/{store.bucket}/{prefix}/{name}"] = path.stat().st_size
        shardlist.append({"url": name, "nsamples": count, "filesize": path.stat().st_size})
    doc = {"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": shardlist}
    store.client.put_object(Bucket=store.bucket, Key=f"{prefix}/shardindex.json", Body=json.dumps(doc).encode())
    return f"s3://{store.bucket}/{prefix}/shardindex.json", sizes


def test_an_epoch_over_s3_shards_fetches_each_shard_once_and_is_the_local_run(store: Store, tmp_path: Path) -> None:
    index, sizes = upload_shards(store, tmp_path)
    dataset = sum(sizes.values())
    mark = store.counter.mark()
    records = dataio.tar_records(index, shuffle_window=32, cache_dir=tmp_path / "cache", index_dir=tmp_path / "index")
    assert records.counts == COUNTS and records.shard_index == index

    with RayExecutor(num_workers=2) as ex:
        assert ex.warm_up() == 2  # both up before the first batch: the first calls go to both
        with PIPE.bind(records).run("numpy", seed=5, executor=ex) as loader:
            got = snapshot(loader)
            stats = loader.stats()
    served = store.counter.since(mark)
    workers = [w for w in stats["workers"] if w["batches"] > 0]

    # The reference: a local run over the same store, its own fresh cache.
    local_records = dataio.tar_records(index, shuffle_window=32, cache_dir=tmp_path / "cache-local", index_dir=tmp_path / "index-local")
    with PIPE.bind(local_records).run("numpy", seed=5) as loader:
        want = snapshot(loader)

    # Bit for bit the local run, every sample once, both nodes working.
    assert got == want
    keys = [k for batch in got for k in batch[0]]
    assert sorted(keys) == [f"{i:06d}" for i in range(sum(COUNTS))]
    assert len({w["node_id"] for w in workers}) == 2, stats["workers"]

    # What the store sent in the epoch (the index JSON included): each shard
    # once, at most 1.05x the dataset.
    body = collections.Counter[str]()
    for r in served:
        body[r.key] += r.body_bytes
    shard_bytes = {k: body[k] for k in sizes}
    total = sum(body.values())
    assert shard_bytes == sizes, "each shard's bytes, served once"
    assert total <= 1.05 * dataset, f"store sent {total} bytes for a {dataset}-byte dataset"

    # All of it to the trainer (this process), none to a worker: the trainer
    # reads every planned record and ships its bytes in the planned batch.
    by_pid = collections.Counter[int | None]()
    for r in served:
        by_pid[r.pid] += r.body_bytes
    assert by_pid[os.getpid()] == total, by_pid
    for w in stats["workers"]:
        assert by_pid[w["pid"]] == 0 and not any(r.pid == w["pid"] for r in served), (w["name"], w["node_id"])
    # The trainer's own counter says the same: its cache fetched the shards.
    source = stats["source"]
    assert source["cache_bytes_fetched"] == dataset, source
    assert source["cache_misses"] == len(COUNTS), source
