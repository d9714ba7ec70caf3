"""Tar shards in an S3 store (moto): indexed once, cached locally within a
byte budget shared by several processes, and a second epoch that fits the
cache fetches nothing from the store."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ACCESS_KEY, SECRET_KEY, S3Server
from PIL import Image

import dataio

wds = pytest.importorskip("webdataset", reason="webdataset is in the core's test group")

COUNTS = [20, 20, 20, 20, 20, 20]
PIPE = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.slot("cls").decode_bytes(), dataio.batch(10))


def upload_shards(s3: S3Server, tmp: Path) -> tuple[str, int]:
    prefix = f"shards-{uuid.uuid4().hex[:8]}"
    n, size = 0, 0
    for s, count in enumerate(COUNTS):
        path = tmp / f"train-{s:04d}.tar"
        with wds.TarWriter(str(path)) as w:
            for _ in range(count):
                buf = io.BytesIO()
                Image.fromarray(np.full((16, 16, 3), n % 251, np.uint8)).save(buf, "JPEG", quality=95)
                w.write({"__key__": f"{n:06d}", "jpg": buf.getvalue(), "cls": str(n).encode()})
                n += 1
        s3.client.upload_file(str(path), s3.bucket, f"{prefix}/train-{s:04d}.tar")
        size = max(size, path.stat().st_size)
    return f"s3://{s3.bucket}/{prefix}", size


def keys(records: Any, **run: Any) -> list[int]:
    with PIPE.bind(records).run("numpy", **run) as loader:
        out = []
        for b in loader:
            assert b["jpg"][:, 0, 0, 0].tolist() == [int(k) % 251 for k in b.keys]
            out += [int(k) for k in b.keys]
        return out


def test_second_epoch_and_restart_fetch_nothing(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    base, _ = upload_shards(s3, tmp_path)
    recs = dataio.tar_records(f"{base}/train-{{0000..0005}}.tar", shuffle_window=30, cache_bytes=1 << 30)
    assert recs.counts == COUNTS
    after_index = recs.stats()
    assert after_index["cache_misses"] == 6  # indexing fetched each shard once, into the cache
    with PIPE.bind(recs).run("numpy", seed=1) as loader:
        e0 = [int(k) for b in loader for k in b.keys]
        e1 = [int(k) for b in loader for k in b.keys]
        stats = loader.stats()["source"]
    assert sorted(e0) == sorted(e1) == list(range(120)) and e0 != e1
    assert stats["cache_bytes_fetched"] == after_index["cache_bytes_fetched"]  # zero bytes in epochs 1 and 2
    assert stats["cache_hits"] > after_index["cache_hits"]
    # A restarted job: indexes and shards come from the host, not the store;
    # the glob's listing names the shards' versions, so opening the set asks
    # nothing per shard.
    caplog.clear()
    with caplog.at_level("INFO", logger="werkzeug"):
        again = dataio.tar_records(f"{base}/train-*.tar", shuffle_window=30, cache_bytes=1 << 30)
    requests = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert requests and not [r for r in requests if '"HEAD ' in r or '"GET /' + s3.bucket + "/" in r.split("?")[0]], requests
    assert again.shards == recs.shards
    assert keys(again, seed=1) == e0
    assert again.stats()["cache_bytes_fetched"] == 0 and again.stats()["store_bytes_read"] == 0


def test_without_a_cache_every_open_reads_the_store(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    base, _ = upload_shards(s3, tmp_path)
    recs = dataio.tar_records(f"{base}/train-*.tar", cache=False)
    assert "cache_hits" not in recs.stats()
    assert sorted(keys(recs, seed=2)) == list(range(120))
    assert recs.stats()["store_bytes_read"] > 0
    assert not (tmp_path / "cache" / "cache").exists()


CHILD = r"""
import json, sys, dataio, dataio_s3
endpoint, key, secret, spec, cache_dir, budget, rank, world = sys.argv[1:9]
dataio.configure_endpoint("s3", endpoint)
dataio.configure_credentials("s3", access_key_id=key, secret_access_key=secret)
recs = dataio.tar_records(spec, shuffle_window=10, cache_dir=cache_dir, cache_bytes=int(budget))
pipe = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.batch(10))
seen, peak = [], 0
with pipe.bind(recs).run("numpy", seed=5, shard={"id": int(rank), "of": int(world)}) as loader:
    for epoch in range(2):
        for b in loader:
            seen += [int(k) for k in b.keys]
            peak = max(peak, recs.stats()["cache_bytes_used"])
print(json.dumps({"seen": seen, "peak": peak, "stats": recs.stats()}))
"""


def test_processes_share_the_cache_within_its_budget(s3: S3Server, tmp_path: Path) -> None:
    base, shard_size = upload_shards(s3, tmp_path)
    cache_dir = tmp_path / "shared-cache"
    budget = int(shard_size * 5.5)  # fewer shards than the dataset: it must evict
    spec = f"{base}/train-{{0000..0005}}.tar"
    stop = threading.Event()
    peaks: list[int] = []

    def watch() -> None:
        data = cache_dir / "data"
        while not stop.is_set():
            if data.is_dir():
                total = 0
                for p in data.iterdir():
                    if not p.name.endswith(".partial"):
                        try:
                            total += p.stat().st_size
                        except FileNotFoundError:
                            pass
                peaks.append(total)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    env = {**os.environ, "DATAIO_CACHE_DIR": str(tmp_path / "idx")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, s3.endpoint, ACCESS_KEY, SECRET_KEY, spec, str(cache_dir), str(budget), str(r), "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for r in range(2)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    stop.set()
    watcher.join()
    seen = sorted(n for o in outs for n in o["seen"])
    assert seen == sorted(list(range(120)) * 2)  # two epochs, ranks disjoint
    assert max(peaks) <= budget and max(o["peak"] for o in outs) <= budget
    assert sum(o["stats"]["cache_evictions"] for o in outs) > 0
    assert not list((cache_dir / "data").glob("*.partial"))


def test_a_shard_source_inside_a_mix_fetches_ahead(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    a, _ = upload_shards(s3, tmp_path)
    b, _ = upload_shards(s3, tmp_path)
    # counted first (kept indexes), then fresh caches: every shard of the epoch is fetched during it
    for base in (a, b):
        dataio.tar_records(f"{base}/train-{{0000..0005}}.tar", cache_dir=tmp_path / "count-cache")
    sources = [
        dataio.tar_records(f"{base}/train-{{0000..0005}}.tar", shuffle_window=20, cache_dir=tmp_path / f"cache-{i}")
        for i, base in enumerate((a, b))
    ]
    mixed = dataio.mix(sources, weights=[0.5, 0.5])
    with PIPE.bind(mixed).run("numpy", seed=2) as loader:
        n = sum(len(batch) for batch in loader)
    assert n > 0
    for src in sources:
        stats = src.stats()
        assert stats["shards_prefetched"] > 0, stats
