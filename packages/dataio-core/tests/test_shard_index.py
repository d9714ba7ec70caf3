"""Shard indexes (issue 32, point 1): tar shards opened on a fresh host
without reading them, their counts from a ``wids-shard-index-v1`` file
written by webdataset's own ``widsindex`` or by ``python -m dataio index``.

The store is ``mem://`` (the dataio-memfs test plugin): remote-style, so
shards go through the shard cache as they would from S3, and every byte it
serves is counted here, the index's included."""

from __future__ import annotations

import io
import json
import logging
import math
import os
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import dataio
from dataio.__main__ import main as cli
from dataio.errors import CorruptDataError, InvalidArgumentError
from dataio.formats.shards import parse_shard_index

wds = pytest.importorskip("webdataset", reason="webdataset is in the test group")
memfs = pytest.importorskip("dataio_memfs", reason="the mem:// test plugin is installed with the tests")

PIPE = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.slot("cls").decode_bytes(), dataio.batch(6))


def jpeg(value: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((24, 32, 3), value % 251, np.uint8)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def write_shards(folder: Path, counts: list[int]) -> list[Path]:
    """WebDataset shards by webdataset's TarWriter; sample n is key
    s{shard}/{n:06d}, a JPEG of value n and its label n."""
    folder.mkdir(parents=True, exist_ok=True)
    paths, n = [], 0
    for s, count in enumerate(counts):
        path = folder / f"train-{s:04d}.tar"
        with wds.TarWriter(str(path)) as w:
            for _ in range(count):
                w.write({"__key__": f"s{s:04d}/{n:06d}", "jpg": jpeg(n), "cls": str(n).encode()})
                n += 1
        paths.append(path)
    return paths


def upload(paths: list[Path], prefix: str) -> list[str]:
    uris = []
    for p in paths:
        uri = f"{prefix}/{p.name}"
        dataio.write(uri, p.read_bytes())
        uris.append(uri)
    return uris


class Reads:
    """Bytes the mem:// store serves, per URI."""

    def __init__(self) -> None:
        self.by_uri: Counter[str] = Counter()

    def shards(self) -> int:
        return sum(n for u, n in self.by_uri.items() if u.endswith(".tar"))

    def others(self) -> dict[str, int]:
        return {u: n for u, n in self.by_uri.items() if not u.endswith(".tar")}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    r = Reads()
    store = memfs.STORE
    read_all, read_range = store.read_all, store.read_range

    def counted_all(uri: str) -> bytes:
        data = read_all(uri)
        r.by_uri[uri] += len(data)
        return data

    def counted_range(uri: str, offset: int, size: int) -> bytes:
        data = read_range(uri, offset, size)
        r.by_uri[uri] += len(data)
        return data

    monkeypatch.setattr(store, "read_all", counted_all)
    monkeypatch.setattr(store, "read_range", counted_range)
    return r


@pytest.fixture(autouse=True)
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dataio-cache"
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(root))
    return root


_hosts = iter(range(10**6))


def fresh_host(tmp_path: Path) -> dict[str, str]:
    """A host that never saw the dataset: empty cache and kept-index dirs."""
    n = next(_hosts)
    return {"cache_dir": str(tmp_path / f"host{n}" / "cache"), "index_dir": str(tmp_path / f"host{n}" / "index")}


def ids(batch: Any) -> list[int]:
    got = [int(k.split("/")[1]) for k in batch.keys]
    assert batch["jpg"][:, 0, 0, 0].tolist() == [n % 251 for n in got]
    return got


COUNTS = [12, 9, 14, 12, 11, 13, 12, 10, 12, 15, 12, 11, 12, 13, 9, 12, 12, 14, 11, 12, 12, 10, 13, 12]
TOTAL = sum(COUNTS)


@pytest.fixture
def local_shards(tmp_path: Path) -> list[Path]:
    return write_shards(tmp_path / "train", COUNTS)


def widsindex(folder: Path, names: list[str]) -> bytes:
    """The index webdataset's own ``widsindex create`` writes (relative URLs:
    it is run in the shards' folder, on their file names)."""
    pytest.importorskip("wids", reason="wids (webdataset's indexed reader, with widsindex) is in the test group")
    cmd = [sys.executable, "-c", "import sys; from wids.wids_index import main; sys.exit(main())", "create", *names, "--output", "index.json"]
    subprocess.run(cmd, cwd=folder, check=True, capture_output=True, timeout=120)
    return (folder / "index.json").read_bytes()


def test_a_widsindex_index_opens_a_fresh_host_without_reading_the_dataset(
    tmp_path: Path, local_shards: list[Path], reads: Reads, unique: str
) -> None:
    doc = widsindex(local_shards[0].parent, [p.name for p in local_shards])
    assert json.loads(doc)["__kind__"] == "wids-shard-index-v1" and json.loads(doc)["shardlist"][0]["url"] == "train-0000.tar"
    prefix = f"mem://wids-{unique}/train"
    upload(local_shards, prefix)
    dataio.write(f"{prefix}/index.json", doc)
    dataset = sum(p.stat().st_size for p in local_shards)
    reads.by_uri.clear()
    recs = dataio.tar_records(f"{prefix}/index.json", shuffle_window=12, cache_bytes=dataset // 3, **fresh_host(tmp_path))
    # Opening read the index, one request, and no shard.
    assert reads.by_uri == {f"{prefix}/index.json": len(doc)}
    assert recs.counts == COUNTS and len(recs) == TOTAL and recs.shard_index == f"{prefix}/index.json"
    assert recs.stats()["index_bytes_read"] == len(doc) and recs.stats()["cache_bytes_fetched"] == 0
    seen: list[int] = []
    with PIPE.bind(recs).run("numpy", seed=5) as loader:
        it = iter(loader)
        seen += ids(next(it))
        # Before the first batch: the index and the first window's shards
        # (at most window/avg + 3 open, what the engine keeps open), not
        # the dataset.
        first = reads.shards()
        window_shards = math.ceil(12 / (TOTAL / len(COUNTS))) + 3
        assert 0 < first <= window_shards * max(p.stat().st_size for p in local_shards) < dataset / 3, (first, dataset)
        seen += [n for b in it for n in ids(b)]
        stats = loader.stats()["source"]
    assert sorted(seen) == list(range(TOTAL)) and seen != sorted(seen)
    # One epoch with a third of the dataset for a cache, which holds this
    # epoch's working set (28%): each shard fetched exactly once (issue 44: the
    # bound here was 1.15x while read-ahead could evict shards the epoch
    # came back to; one CI run read 1.09x).
    assert stats["cache_working_set"] <= stats["cache_budget"], stats
    assert reads.shards() == dataset and stats["cache_bytes_fetched"] == dataset, (reads.shards() / dataset)
    assert stats["shards_refetched"] == 0 and stats["cache_evictions"] > 0, stats
    assert stats["index_bytes_read"] == len(doc)
    assert set(reads.others()) == {f"{prefix}/index.json"}


def test_an_index_for_named_shards_absolute_and_relative_urls(tmp_path: Path, local_shards: list[Path], reads: Reads, unique: str) -> None:
    prefix = f"mem://named-{unique}/data/train"
    uris = upload(local_shards, prefix)
    # Absolute URLs: the index lives apart from the shards.
    assert cli(["index", f"{prefix}/train-*.tar", "--out", f"mem://named-{unique}/meta/train.json", "--quiet"]) == 0
    absolute = json.loads(dataio.read(f"mem://named-{unique}/meta/train.json"))
    assert [e["url"] for e in absolute["shardlist"]] == uris
    assert [e["nsamples"] for e in absolute["shardlist"]] == COUNTS
    assert [e["filesize"] for e in absolute["shardlist"]] == [p.stat().st_size for p in local_shards]
    # Relative URLs, with a folder and a parent step, resolved against the index's folder.
    rel = {"__kind__": "wids-shard-index-v1", "wids_version": 1, "name": "t", "shardlist": [
        {"url": f"train/{Path(u).name}" if i % 2 else f"../data/train/{Path(u).name}", "nsamples": n, "md5sum": "x"}
        for i, (u, n) in enumerate(zip(uris, COUNTS, strict=True))
    ]}
    dataio.write(f"mem://named-{unique}/data/rel.json", json.dumps(rel).encode())
    for index in (f"mem://named-{unique}/meta/train.json", f"mem://named-{unique}/data/rel.json"):
        reads.by_uri.clear()
        subset = uris[3:9]
        recs = dataio.tar_records(subset, index=index, shuffle_window=20, **fresh_host(tmp_path))
        assert reads.shards() == 0 and list(reads.others()) == [index]
        assert recs.counts == COUNTS[3:9] and recs.shards == subset and recs.shard_index == index
        with PIPE.bind(recs).run("numpy", seed=1) as loader:
            got = sorted(n for b in loader for n in ids(b))
        assert got == list(range(sum(COUNTS[:3]), sum(COUNTS[:9])))
    # A shard the index does not list is named.
    with pytest.raises(dataio.errors.InvalidArgumentError, match="does not list 1 of the 2 shards"):
        dataio.tar_records([uris[0], f"{prefix}/other.tar"], index=f"mem://named-{unique}/data/rel.json")
    # Not a shard index: said so, with how to write one.
    dataio.write(f"mem://named-{unique}/data/mds.json", b'{"version": 2, "shards": []}')
    with pytest.raises(dataio.errors.InvalidArgumentError, match="not a wids-shard-index-v1 shard index.*python -m dataio index"):
        dataio.tar_records(f"mem://named-{unique}/data/mds.json")


def test_a_count_the_shard_does_not_bear_out_names_the_shard_and_the_index(
    tmp_path: Path, local_shards: list[Path], unique: str
) -> None:
    prefix = f"mem://mismatch-{unique}/train"
    uris = upload(local_shards, prefix)
    index = f"{prefix}/index.json"
    assert cli(["index", *uris, "--out", index, "--quiet", "--index-dir", str(tmp_path / "cli-index")]) == 0
    doc = json.loads(dataio.read(index))
    doc["shardlist"][5]["nsamples"] += 2
    dataio.write(index, json.dumps(doc).encode())
    recs = dataio.tar_records(index, shuffle_window=16, **fresh_host(tmp_path))
    assert recs.counts[5] == COUNTS[5] + 2
    with pytest.raises(dataio.errors.CorruptDataError) as err:
        with PIPE.bind(recs).run("numpy", seed=2) as loader:
            for _ in loader:
                pass
    text = str(err.value)
    assert uris[5] in text and index in text and f"holds {COUNTS[5]} samples" in text and f"says {COUNTS[5] + 2}" in text, text
    # A shard replaced since the index was written (another size) is caught at open.
    doc["shardlist"][5]["nsamples"] -= 2
    doc["shardlist"][7]["filesize"] += 512
    dataio.write(index, json.dumps(doc).encode())
    with pytest.raises(dataio.errors.CorruptDataError, match="train-0007.tar.*filesize"):
        dataio.tar_records(index, **fresh_host(tmp_path))


def test_dataio_index_is_resumable_and_read_by_wids(tmp_path: Path, local_shards: list[Path], reads: Reads, unique: str) -> None:
    prefix = f"mem://resume-{unique}/train"
    uris = upload(local_shards, prefix)
    dataio.write(uris[4], b"not a tar" * 100)
    kept = str(tmp_path / "kept")
    reads.by_uri.clear()
    assert cli(["index", f"{prefix}/train-*.tar", "--out", f"{prefix}/index.json", "--index-dir", kept, "--quiet", "--jobs", "3"]) == 1
    assert not dataio.exists(f"{prefix}/index.json")
    first = reads.shards()
    # The shard fixed, the same command reads only it.
    dataio.write(uris[4], local_shards[4].read_bytes())
    reads.by_uri.clear()
    assert cli(["index", f"{prefix}/train-*.tar", "--out", f"{prefix}/index.json", "--index-dir", kept, "--quiet"]) == 0
    assert reads.shards() == local_shards[4].stat().st_size < first
    assert dataio.tar_records(f"{prefix}/index.json").counts == COUNTS
    # Local shards through the real entry point; webdataset's own reader reads the index.
    wids = pytest.importorskip("wids", reason="wids is in the test group")
    folder = local_shards[0].parent
    out = subprocess.run(
        [sys.executable, "-m", "dataio", "index", str(folder / "train-{0000..0023}.tar"), "--out", str(folder / "shardindex.json")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "DATAIO_CACHE_DIR": str(tmp_path / "cli")},
    )
    assert out.returncode == 0, out.stderr
    assert f"{len(COUNTS)} shards, {TOTAL} samples" in out.stdout
    doc = json.loads((folder / "shardindex.json").read_text())
    assert doc["shardlist"][0] == {"url": "train-0000.tar", "nsamples": COUNTS[0], "filesize": local_shards[0].stat().st_size}
    theirs = wids.ShardListDataset(str(folder / "shardindex.json"), transformations=[])
    assert len(theirs) == TOTAL and theirs[TOTAL - 1]["__key__"] == f"s{len(COUNTS) - 1:04d}/{TOTAL - 1:06d}"


def test_counting_warns_once_and_writes_an_index_back_when_asked(
    tmp_path: Path, local_shards: list[Path], reads: Reads, unique: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"mem://back-{unique}/train"
    upload(local_shards, prefix)
    dataset = sum(p.stat().st_size for p in local_shards)
    caplog.set_level(logging.DEBUG, logger="dataio")
    # Local shards and a handful of remote ones: no warning.
    dataio.tar_records([str(p) for p in local_shards], **fresh_host(tmp_path))
    dataio.tar_records(f"{prefix}/train-000[0-3].tar", **fresh_host(tmp_path))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # Many remote shards and no index: one warning, before counting, that
    # says what counting costs and how to write the index.
    caplog.clear()
    reads.by_uri.clear()
    recs = dataio.tar_records(f"{prefix}/train-*.tar", write_index=True, **fresh_host(tmp_path))
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == "dataio"
    text = warning.getMessage()
    assert f"reading {len(COUNTS)} tar shards whole ({dataset / 1e6:,.1f} MB)" in text, text
    assert f"python -m dataio index 'mem://back-{unique}/train/train-*.tar' --out mem://back-{unique}/train/shardindex.json" in text
    assert recs.shard_index is None and reads.shards() == dataset
    written = json.loads(dataio.read(f"{prefix}/shardindex.json"))
    assert written["__kind__"] == "wids-shard-index-v1"
    assert [(e["url"], e["nsamples"]) for e in written["shardlist"]] == [(p.name, n) for p, n in zip(local_shards, COUNTS, strict=True)]
    # The next fresh host finds it by name: one small read, no shard, no warning.
    caplog.clear()
    reads.by_uri.clear()
    again = dataio.tar_records(f"{prefix}/train-*.tar", **fresh_host(tmp_path))
    assert again.counts == COUNTS and again.shard_index == f"{prefix}/shardindex.json"
    assert reads.shards() == 0 and list(reads.others()) == [f"{prefix}/shardindex.json"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # A copy opened elsewhere (a worker) counts from the same index; a glob
    # over the whole folder does not take the index for a shard.
    assert pickle.loads(pickle.dumps(again)).shard_index == f"{prefix}/shardindex.json"
    assert dataio.tar_records(f"{prefix}/*", **fresh_host(tmp_path)).counts == COUNTS
    # A file of that name that is not a shard index is never replaced.
    other = f"mem://back-{unique}/mds"
    upload(local_shards[:2], other)
    dataio.write(f"{other}/shardindex.json", b'{"version": 2, "shards": []}')
    assert dataio.tar_records(f"{other}/*.tar", write_index=True, **fresh_host(tmp_path)).shard_index is None
    assert dataio.read(f"{other}/shardindex.json") == b'{"version": 2, "shards": []}'
    assert "is not a wids-shard-index-v1 shard index: left alone" in caplog.text
    # A store that refuses writes: no error, a debug line.
    ro = f"mem://back-{unique}/readonly"
    upload(local_shards[:2], ro)

    def refuse(uri: str) -> Any:
        raise PermissionError(f"{uri}: read-only store")

    monkeypatch.setattr(memfs.STORE, "open_writer", refuse)
    caplog.clear()
    assert dataio.tar_records(f"{ro}/*.tar", write_index=True, **fresh_host(tmp_path)).counts == COUNTS[:2]
    assert not dataio.exists(f"{ro}/shardindex.json")
    assert f"could not write the shard index {ro}/shardindex.json" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# -- the index parser on hostile bytes ------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_entry = st.dictionaries(
    st.sampled_from(["url", "nsamples", "filesize", "md5sum", "name"]),
    st.none() | st.integers(-3, 10**12) | st.text(max_size=20) | st.booleans() | _json,
    max_size=5,
)
_doc = st.fixed_dictionaries(
    {"__kind__": st.sampled_from(["wids-shard-index-v1", "other", None]), "shardlist": st.lists(_entry | _json, max_size=5)},
    optional={"base": st.text(max_size=12) | _json, "wids_version": st.integers(0, 2), "datasets": _json},
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=200), _doc.map(lambda d: json.dumps(d).encode()), st.just(b"[" * 5000)))
def test_a_damaged_index_is_a_typed_error_never_a_crash(data: bytes) -> None:
    """Whatever the bytes, the parser returns an index whose shards all have
    a URL and a count, or raises CorruptDataError / InvalidArgumentError."""
    try:
        got = parse_shard_index("s3://bucket/train/shardindex.json", data)
    except (CorruptDataError, InvalidArgumentError) as e:
        assert "shardindex.json" in str(e)
        return
    assert got.urls and len(got.urls) == len(got.counts) == len(got.sizes)
    assert all(isinstance(n, int) and n >= 0 for n in got.counts)
    assert all(u.startswith("s3://") or "://" in u or u.startswith("/") for u in got.urls), got.urls


def test_twenty_runs_beside_busy_processes_fetch_each_shard_once(
    tmp_path: Path, local_shards: list[Path], reads: Reads, unique: str
) -> None:
    """Issue 44's stress: the same budget (the epoch's working set, as the
    loader reports it), 20 fresh hosts in a row while two processes keep
    both CPUs busy, shuffle spread 2: no shard is ever fetched twice."""
    prefix = f"mem://busy-{unique}/train"
    upload(local_shards, prefix)
    dataset = sum(p.stat().st_size for p in local_shards)
    spec = f"{prefix}/train-{{0000..0023}}.tar"
    dataio.tar_records(spec, write_index=True, **fresh_host(tmp_path))
    pipe = dataio.pipeline(dataio.slot("cls").decode_bytes(), dataio.batch(6))
    burn = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"
    busy = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2)]
    try:
        refetched, fetched = [], []
        for run in range(20):
            seed = run % 4
            recs = dataio.tar_records(spec, shuffle_window=40, shuffle_spread=2, cache_bytes=1 << 30, **fresh_host(tmp_path))
            with pipe.bind(recs).run("numpy", seed=seed) as loader:
                list(loader)
                budget = loader.stats()["source"]["cache_working_set"]
            reads.by_uri.clear()
            recs = dataio.tar_records(spec, shuffle_window=40, shuffle_spread=2, cache_bytes=budget, **fresh_host(tmp_path))
            with pipe.bind(recs).run("numpy", seed=seed) as loader:
                got = [k for b in loader for k in b.keys]
                stats = loader.stats()["source"]
            assert len(got) == len(set(got)) == TOTAL
            refetched.append(stats["shards_refetched"])
            fetched.append(reads.shards() / dataset)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    # Quiet, every run fetches each shard exactly once (the budget tests
    # above assert it). Beside two CPU burners and a loaded CI machine, the
    # batches in flight can hold one shard longer than the reported working
    # set allows, and one entry in 20 runs was evicted and fetched again (seen
    # twice in a CI run under load 5): at most one such refetch in all 20
    # runs, each run within 1.05x of the dataset (it was 14 of 24 shards
    # fetched twice before issue 44).
    assert sum(refetched) <= 1 and all(f <= 1.05 for f in fetched), (refetched, fetched)
    assert refetched.count(0) >= 19 and fetched.count(1.0) >= 19, (refetched, fetched)
