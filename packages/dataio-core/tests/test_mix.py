"""dataio.mix: several sources in set proportions, deterministic, sharded
and resumable exactly for every stop rule."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dataio

A = [{"key": f"a{i}", "x": i} for i in range(60)]
B = [{"key": f"b{i}", "x": 1000 + i} for i in range(30)]
C = [{"key": f"c{i}", "x": 2000 + i} for i in range(10)]
PIPE = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(8))


def keys(records: Any, **run: Any) -> list[str]:
    with PIPE.bind(records).run("numpy", **run) as loader:
        out = []
        for b in loader:
            # The values are the records' own.
            assert [int(v) for v in b["x"]] == [int(k[1:]) + {"a": 0, "b": 1000, "c": 2000}[k[0]] for k in b.keys]
            out += b.keys
        return out


def test_proportions_stay_within_the_bound_over_a_long_run() -> None:
    weights = [0.6, 0.3, 0.1]
    m = dataio.mix([A, B, C], weights=weights, stop=6000)
    drawn = keys(m, seed=3)
    assert len(drawn) == 6000
    counts = {"a": 0, "b": 0, "c": 0}
    block = 1024  # draws are shuffled inside aligned blocks of this many
    for p, k in enumerate(drawn, 1):
        counts[k[0]] += 1
        for s, w in zip("abc", weights):
            # Exact at every block's end; inside a block, a shuffled share of it.
            bound = len(weights) + 1 if p % block == 0 else len(weights) + 1 + 3 * math.sqrt(block * w * (1 - w))
            assert abs(counts[s] - w * p) <= bound, (p, counts)


def test_each_source_is_reshuffled_in_its_own_epochs() -> None:
    # 30 draws of C (10 records): three of C's own epochs, each every
    # record once (in its own order: crates/dataio-engine/src/exec/mix.rs tests).
    m = dataio.mix([A, C], weights=[0.5, 0.5], stop=60)
    drawn = [k for k in keys(m, seed=5) if k[0] == "c"]
    assert sorted(drawn) == sorted([k["key"] for k in C] * 3)
    with PIPE.bind(m).run("numpy", seed=5) as loader:
        e0 = [k for b in loader for k in b.keys]
        e1 = [k for b in loader for k in b.keys]
    assert e0 != e1 and e0 == keys(m, seed=5)


def test_a_restarted_sources_own_epochs_stay_contiguous_in_delivery_order() -> None:
    # C (10 records) restarts ~6 times while A runs once: in the order
    # delivered, every 10 consecutive draws of C are one of its own epochs
    # (the block shuffle used to interleave two of them: up to 16 repeats
    # in a window of C's size while other records of the epoch were missing).
    for seed in (1, 2, 3):
        drawn = [k for k in keys(dataio.mix([A, C], weights=[1, 1], stop="all_exhausted"), seed=seed) if k[0] == "c"]
        for e in range(len(drawn) // 10):
            assert sorted(drawn[10 * e : 10 * e + 10]) == sorted(r["key"] for r in C), (seed, e)


def test_stop_rules() -> None:
    first = keys(dataio.mix([A, C], weights=[1, 1]), seed=1)
    assert abs(len(first) - 20) <= 2 and sum(k[0] == "c" for k in first) == 10
    everything = keys(dataio.mix([A, C], weights=[1, 1], stop="all_exhausted"), seed=1)
    assert sorted(k for k in everything if k[0] == "a") == sorted(r["key"] for r in A)
    assert abs(len(everything) - 120) <= 2  # C restarted ~5 times meanwhile
    fixed = dataio.mix([A, C], weights=[1, 1], stop=17)
    with PIPE.bind(fixed).run("numpy", seed=1) as loader:
        assert len(loader) == 3 and len([k for b in loader for k in b.keys]) == 17


def test_draws_do_not_depend_on_concurrency_or_order() -> None:
    m = dataio.mix([A, B, C], weights=[2, 1, 1], stop="all_exhausted")
    want = keys(m, seed=9)
    assert keys(m, seed=9, concurrency=1) == want
    with PIPE.bind(m).run("numpy", seed=9, order="completion", concurrency=64) as loader:
        assert sorted(k for b in loader for k in b.keys) == sorted(want)


@settings(max_examples=25, deadline=None)
@given(stop=st.sampled_from(["first_exhausted", "all_exhausted", 41]), cut=st.integers(1, 9), seed=st.integers(0, 2**32))
def test_resume_is_exact_for_every_stop_rule(stop: Any, cut: int, seed: int) -> None:
    m = dataio.mix([A, B, C], weights=[0.5, 0.3, 0.2], stop=stop)
    with PIPE.bind(m).run("numpy", seed=seed, epoch=1) as loader:
        full = [b.keys for b in loader]
    cut = min(cut, len(full) - 1)
    with PIPE.bind(m).run("numpy", seed=seed, epoch=1) as loader:
        it = iter(loader)
        for _ in range(cut):
            next(it)
        state = json.loads(json.dumps(loader.state_dict()))
    assert sum(s["drawn"] for s in state["sources"]) == cut * 8
    with PIPE.bind(m).run("numpy", seed=seed) as loader:
        loader.load_state_dict(state)
        assert [b.keys for b in loader] == full[cut:]


@pytest.mark.parametrize("stop", ["first_exhausted", "all_exhausted", 50])
def test_elastic_resume_two_ranks_to_three(stop: Any) -> None:
    m = dataio.mix([A, B, C], weights=[0.6, 0.3, 0.1], stop=stop)
    whole = sorted(keys(m, seed=4))
    seen, states = [], []
    for rank in range(2):
        with PIPE.bind(m).run("numpy", seed=4, shard={"id": rank, "of": 2}) as loader:
            it = iter(loader)
            for _ in range(2):
                seen += next(it).keys
            states.append(loader.state_dict())
    for rank in range(3):
        with PIPE.bind(m).run("numpy", seed=4, shard={"id": rank, "of": 3}) as loader:
            loader.load_state_dict(states[0])
            seen += [k for b in loader for k in b.keys]
    assert sorted(seen) == whole


def test_two_ranks_of_an_even_mix_each_get_both_sources() -> None:
    # The draws' pattern is regular (a, b, a, b, ...): ranks must not split it by source.
    m = dataio.mix([A, B], weights=[1, 1], stop=2048)
    for rank in range(2):
        with PIPE.bind(m).run("numpy", seed=1, shard={"id": rank, "of": 2}) as loader:
            mine = [k for b in loader for k in b.keys]
        assert len(mine) == 1024 and abs(sum(k[0] == "a" for k in mine) / 1024 - 0.5) < 0.06


def test_ranks_are_disjoint_equal_and_keep_the_proportions() -> None:
    m = dataio.mix([A, B, C], weights=[0.6, 0.3, 0.1], stop=4000)
    per_rank = []
    for rank in range(4):
        with PIPE.bind(m).run("numpy", seed=2, shard={"id": rank, "of": 4, "pad": True}) as loader:
            per_rank.append((len(loader), [k for b in loader for k in b.keys]))
    assert len({n for n, _ in per_rank}) == 1
    assert sum(len(k) for _, k in per_rank) == 4000
    for _, ks in per_rank:
        share = sum(k[0] == "a" for k in ks) / len(ks)
        assert abs(share - 0.6) < 0.05, share


def test_state_and_stats_name_each_source() -> None:
    m = dataio.mix([A, B, C], weights=[0.6, 0.3, 0.1], stop=80)
    with PIPE.bind(m).run("numpy", seed=1) as loader:
        it = iter(loader)
        got = [k for _ in range(5) for k in next(it).keys]
        stats, state = loader.stats(), loader.state_dict()
    assert [s["drawn"] for s in state["sources"]] == [sum(k[0] == p for k in got) for p in "abc"]
    assert stats["sources"] == state["sources"]
    assert len(json.dumps(state)) < 1024


def test_shard_sources_mix_with_lists(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import tarfile

    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    with tarfile.open(tmp_path / "t.tar", "w") as tar:
        for i in range(20):
            data = str(3000 + i).encode()
            info = tarfile.TarInfo(f"t{i:03d}.x")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    shards = dataio.tar_records(str(tmp_path / "t.tar"))
    m = dataio.mix([A, shards], weights=[0.75, 0.25])
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(10))
    with pipe.bind(m).run("numpy", seed=0) as loader:
        rows = [(k, v) for b in loader for k, v in zip(b.keys, b["x"])]
    from_tar = [k for k, _ in rows if k.startswith("t")]
    assert sorted(from_tar) == [f"t{i:03d}" for i in range(20)]  # the tar is the first exhausted


@pytest.mark.parametrize(
    "sources, weights, stop, match",
    [
        ([A, B], [1.0], "first_exhausted", "2 sources but 1 weights"),
        ([A, B], [1.0, -1.0], "first_exhausted", "source 1: weight -1.0"),
        ([A, B], [math.nan, 1.0], "first_exhausted", "source 0: weight nan"),
        ([A, B], [0, 0], "first_exhausted", "all zero"),
        ([A, []], [1, 1], "first_exhausted", "source 1 .* is empty"),
        ([A, iter(B)], [1, 1], "first_exhausted", "source 1 .*not a sized source"),
        ([A, B], [1, 1], 0, "stop must be"),
        ([A, B], [1, 1], "never", "stop must be"),
        ([], [], "first_exhausted", "at least one source"),
    ],
)
def test_bad_mixes_are_typed_errors_naming_the_source(sources: Any, weights: Any, stop: Any, match: str) -> None:
    with pytest.raises(dataio.errors.InvalidArgumentError, match=match):
        dataio.mix(sources, weights=weights, stop=stop)


def test_sources_whose_fields_disagree_are_named() -> None:
    other = [{"key": f"o{i}", "y": i} for i in range(5)]
    m = dataio.mix([A, other], weights=[1, 1])
    with pytest.raises(dataio.errors.InvalidArgumentError, match=r"mix source 1 .*lacks the field\(s\) \['x'\]"):
        PIPE.bind(m).run("numpy", seed=0)
    optional = dataio.pipeline(dataio.slot("x", optional=True).decode_bytes(), dataio.batch(4))
    with optional.bind(m).run("numpy", seed=0) as loader:
        batches = list(loader)
    assert any(v is None for b in batches for v in b["x"])


class _SlowStore:
    """A Python backend whose reads take 20 ms: the slow source of a mix."""

    name = "slow"

    def head(self, uri: str) -> dict[str, Any]:
        return {"size": 3}

    def read_range(self, uri: str, offset: int, size: int) -> bytes:
        return self.read_all(uri)[offset : offset + size]

    def read_all(self, uri: str) -> bytes:
        import time

        time.sleep(0.02)
        return b"abc"

    def list(self, prefix: str, recursive: bool) -> list[Any]:
        return []

    def exists(self, uri: str) -> bool:
        return True


def test_report_names_the_slowest_source(tmp_path: Any, unique: str) -> None:
    from dataio.plugins import register_backend

    scheme = f"slowmix{unique}"
    register_backend(scheme, _SlowStore())
    fast = []
    for i in range(12):
        p = tmp_path / f"fast{i}.bin"
        p.write_bytes(b"xyz")
        fast.append({"key": f"fast{i}", "blob": str(p)})
    slow = [{"key": f"slow{i}", "blob": f"{scheme}://b/{i}"} for i in range(12)]
    pipe = dataio.pipeline(dataio.slot("blob").decode_bytes(), dataio.batch(4))
    m = dataio.mix([fast, slow], weights=[1, 1])
    with pipe.bind(m).run("numpy", seed=0) as loader:
        got = [k for b in loader for k in b.keys]
        stats = loader.stats()
        report = loader.report()
    assert [n for n, _ in stats["source_reads"]] == [sum(k.startswith(p) for k in got) for p in ("fast", "slow")]
    assert report.slowest_source is not None and report.slowest_source["source"] == 1
    assert report.slowest_source["ms_per_record"] >= 15
    assert "slowest source of the mix: #1" in str(report)
