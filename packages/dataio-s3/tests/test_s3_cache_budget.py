"""A shard cache smaller than the dataset (issue 44), over the S3 emulator:
no budget ends an epoch; when the budget holds the epoch's working set each
shard is fetched exactly once; when it does not, the loader says so once,
naming the budget that would; and a shard is asked about (HEAD) at most
once per epoch, however often its stripe reopens it."""

from __future__ import annotations

import io
import tarfile
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import S3Server

import dataio

COUNTS = [12, 9, 14, 12, 11, 13, 12, 10, 12, 15, 12, 11, 12, 13, 9, 12, 12, 14, 11, 12, 12, 10, 13, 12]
TOTAL = sum(COUNTS)
PIPE = dataio.pipeline(dataio.slot("bin", stack="never").decode_bytes(), dataio.batch(6))


_UPLOADED: dict[str, tuple[str, int, int]] = {}


@pytest.fixture
def shards(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, int]:
    """24 tar shards of 9-15 samples under one prefix, and a shard index
    (``python -m dataio index``'s) beside them, uploaded once per module;
    (prefix, dataset bytes, largest shard)."""
    if s3.bucket in _UPLOADED:
        return _UPLOADED[s3.bucket]
    prefix = f"s3://{s3.bucket}/budget-{uuid.uuid4().hex[:8]}"
    n, sizes = 0, []
    for s, count in enumerate(COUNTS):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for _ in range(count):
                data = bytes([n % 251]) * 1500
                info = tarfile.TarInfo(f"{n:06d}.bin")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
                n += 1
        dataio.write(f"{prefix}/train-{s:04d}.tar", buf.getvalue())
        sizes.append(len(buf.getvalue()))
    tmp = tmp_path_factory.mktemp("indexer")
    dataio.tar_records(f"{prefix}/train-{{0000..0023}}.tar", write_index=True, cache_dir=tmp / "c", index_dir=tmp / "i")
    _UPLOADED[s3.bucket] = (prefix, sum(sizes), max(sizes))
    return _UPLOADED[s3.bucket]


def epochs(prefix: str, tmp: Path, *, budget: int, spread: int, index: bool, n: int = 2) -> list[dict[str, Any]]:
    """``n`` epochs on a fresh host; per epoch: the keys, the source's
    counters (their change over the epoch) and the warnings."""
    spec = f"{prefix}/shardindex.json" if index else f"{prefix}/train-{{0000..0023}}.tar"
    recs = dataio.tar_records(spec, shuffle_window=60, shuffle_spread=spread, cache_bytes=budget,
                              cache_dir=tmp / "cache", index_dir=tmp / "index")
    assert recs.shard_index is not None, "the index beside the shards is found by name, or given"
    out = []
    before = recs.stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with PIPE.bind(recs).run("numpy", seed=3) as loader:
            for _ in range(n):
                keys = [int(k) for b in loader for k in b.keys]
                after = loader.stats()["source"]
                delta = {k: after[k] - before.get(k, 0) for k in ("cache_bytes_fetched", "shards_refetched", "store_bytes_read")}
                delta.update({f"{k}_requests": after["requests"][k] - before["requests"].get(k, 0) for k in ("HEAD", "GET")})
                out.append({"keys": keys, **delta, "working_set": after["cache_working_set"], "budget": after["cache_budget"],
                            "uncached": after["cache_uncached"], "warnings": [str(w.message) for w in caught]})
                caught.clear()
                before = after
    return out


@pytest.mark.parametrize("index", [True, False], ids=["index", "named"])
@pytest.mark.parametrize("spread", [1, 2])
@pytest.mark.parametrize("fraction", [0, 0.25, 0.5], ids=["one-shard", "quarter", "half"])
def test_no_budget_ends_an_epoch_and_a_budget_that_holds_the_working_set_fetches_once(
    shards: tuple[str, int, int], tmp_path: Path, fraction: float, spread: int, index: bool
) -> None:
    prefix, dataset, largest = shards
    budget = largest if fraction == 0 else int(dataset * fraction)
    runs = epochs(prefix, tmp_path, budget=budget, spread=spread, index=index)
    for e in runs:
        # Every epoch completes, every sample once.
        assert sorted(e["keys"]) == list(range(TOTAL)), "an epoch lost or repeated samples"
        # One HEAD per shard per epoch at most, however often it is reopened.
        assert e["HEAD_requests"] <= len(COUNTS), e
    first = runs[0]
    # Whatever the budget, epoch 1 fetches each shard once: what the cache
    # cannot hold is kept in memory while the epoch comes back to it.
    assert first["store_bytes_read"] == dataset and first["shards_refetched"] == 0, first
    assert first["GET_requests"] == len(COUNTS), first
    # With a window of 60 and spread 1 the epoch reads about a third of the
    # dataset at once, with spread 2 about two thirds: only half, spread 1 fits.
    assert (first["working_set"] <= budget) == (fraction == 0.5 and spread == 1), (first["working_set"], budget)
    if first["working_set"] <= budget:
        # The budget holds the working set: each shard fetched exactly once, nothing said.
        assert first["cache_bytes_fetched"] == dataset and first["shards_refetched"] == 0, first
        assert first["GET_requests"] == len(COUNTS) and not first["warnings"], first
    else:
        # It does not: said once, naming the budget that would hold it.
        assert len(first["warnings"]) == 1 and f"cache_bytes={first['working_set']}" in first["warnings"][0], first
        assert "below the working set" in first["warnings"][0]
        assert not runs[1]["warnings"], "said once per loader"


def test_a_budget_at_the_reported_working_set_fetches_each_shard_once(shards: tuple[str, int, int], tmp_path: Path) -> None:
    """The figure the warning names is enough: rerun with it, each shard is
    fetched once (an epoch's working set depends on its order: another
    epoch's may be larger, and is said then), and a second epoch that fits
    asks nothing but a HEAD each."""
    prefix, dataset, _ = shards
    for spread in (1, 2):
        probe = epochs(prefix, tmp_path / f"probe{spread}", budget=1, spread=spread, index=True, n=1)[0]
        assert probe["warnings"] and probe["uncached"] > 0
        ws = probe["working_set"]
        assert ws < dataset
        run = epochs(prefix, tmp_path / f"run{spread}", budget=ws, spread=spread, index=True, n=1)[0]
        assert run["cache_bytes_fetched"] == dataset and run["shards_refetched"] == 0, run
        assert run["GET_requests"] == len(COUNTS) and not run["warnings"], run
    whole = epochs(prefix, tmp_path / "whole", budget=2 * dataset, spread=2, index=True)
    assert whole[1]["GET_requests"] == 0 and whole[1]["cache_bytes_fetched"] == 0
    assert whole[1]["HEAD_requests"] == len(COUNTS), whole[1]
