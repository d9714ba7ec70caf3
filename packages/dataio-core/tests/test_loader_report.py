"""loader.report() / dataio.loader.describe_stats: rates and where the pipeline waits."""

from __future__ import annotations

import time

import numpy as np
import pytest
from _imaging import npy_bytes
from PIL import Image

import dataio
from dataio.loader import StatsReport, describe_stats


def snap(t: float, **kw: float) -> dict:
    base = {
        "records_admitted": 0, "records_done": 0, "records_failed": 0, "bytes_read": 0, "fetch_seconds": 0.0, "decode_seconds": 0.0,
        "source_seconds": 0.0, "consumer_wait_seconds": 0.0, "batches_built": 0, "batches_delivered": 0, "records_in_flight": 0,
        "batches_in_window": 0, "batches_ready": 0, "elapsed_seconds": t,
    }  # fmt: skip
    base.update(kw)
    return base


def verdict(after: dict, before: dict | None = None, **kw: int) -> str:
    kw.setdefault("cpu_threads", 4)
    kw.setdefault("concurrency", 64)
    return describe_stats(after, before, **kw).waiting_on


def test_rates_between_two_snapshots() -> None:
    before = snap(10.0, records_done=100, batches_delivered=10, bytes_read=1_000_000, decode_seconds=1.0)
    after = snap(12.0, records_done=300, batches_delivered=30, bytes_read=5_000_000, decode_seconds=3.0, records_failed=2, consumer_wait_seconds=1.8)
    r = describe_stats(after, before, cpu_threads=2, concurrency=64, prefetch=4)
    assert isinstance(r, StatsReport)
    assert r.interval_s == pytest.approx(2.0)
    assert r.rates["records_per_s"] == pytest.approx(100.0) and r.rates["batches_per_s"] == pytest.approx(10.0)
    assert r.rates["mb_per_s"] == pytest.approx(2.0) and r.rates["failed_per_s"] == pytest.approx(1.0)
    assert r.per_record_ms["decode"] == pytest.approx(10.0)
    assert r.busy["decode"] == pytest.approx(0.5) and r.busy["consumer_wait"] == pytest.approx(0.9)
    assert r.as_dict()["waiting_on"] == r.waiting_on == "decode"
    text = str(r)
    assert "records/s" in text and "waiting on: decode" in text


def test_each_verdict() -> None:
    # the consumer rarely waits: the training step is the bottleneck
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.02, batches_ready=4)) == "consumer"
    # the single source thread is busy
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, source_seconds=0.95)) == "source"
    # the CPU pool is busy decoding (4 threads x 1 s)
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, decode_seconds=3.5)) == "decode"
    # local reads run on the CPU pool: they count towards it
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, decode_seconds=1.0, fetch_seconds=2.0)) == "decode"
    # remote reads: many in progress, most of each record's time
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, fetch_seconds=50.0, decode_seconds=0.2)) == "fetch"
    # concurrency records in flight, nothing busy: admission
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, records_in_flight=64)) == "admission"
    # nothing busy, the consumer waits most of the time
    assert verdict(snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9)) == "hand-off"
    # nothing moved
    assert verdict(snap(1.0)) == "idle"


def test_the_dct_scaling_hint_is_only_for_plans_that_decode_images(monkeypatch: pytest.MonkeyPatch) -> None:
    busy = snap(1.0, records_done=100, batches_delivered=5, consumer_wait_seconds=0.9, decode_seconds=3.5)
    dct = "resize early to use DCT scaling"
    for ops, hinted in [(None, True), ({"decode_image", "resize"}, True), ({"decode_audio"}, False), ({"decode_npy", "cast"}, False)]:
        r = describe_stats(busy, cpu_threads=4, ops=ops)
        assert r.waiting_on == "decode" and "more cores (DATAIO_CPU_THREADS)" in r.hints[0]
        assert (dct in r.hints[0]) == hinted, (ops, r.hints)
    # loader.report() names the plan's ops: an audio-like plan (no decode_image) gets no DCT hint.
    seen: dict = {}
    monkeypatch.setattr(dataio.loader, "describe_stats", lambda after, before=None, **kw: seen.update(kw) or describe_stats(busy, **kw))
    pipe = dataio.pipeline(dataio.slot("x").decode_npy().cast("float32"), dataio.batch(2))
    with pipe.bind([{"x": npy_bytes(np.arange(3.0))} for _ in range(4)]).run("numpy") as loader:
        report = loader.report()
    assert set(seen["ops"]) == {"decode_npy", "cast"} and report.waiting_on == "decode"
    assert dct not in " ".join(report.hints), report.hints


def test_a_snapshot_of_another_epoch_is_ignored() -> None:
    old = snap(50.0, records_done=5000)
    new = snap(2.0, records_done=200, consumer_wait_seconds=0.01, batches_delivered=4)
    r = describe_stats(new, old, cpu_threads=2)
    assert r.interval_s == pytest.approx(2.0) and r.rates["records_per_s"] == pytest.approx(100.0)


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("report-jpegs")
    rng = np.random.default_rng(0)
    out = []
    for i in range(24):
        p = root / f"{i}.jpg"
        Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)).save(p)
        out.append(str(p))
    return out


def test_report_of_a_real_loader(jpegs: list[str]) -> None:
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=32, w=32), dataio.batch(8, prefetch=2))
    with pipe.bind([{"image": p} for p in jpegs]).run("numpy", concurrency=8) as loader:
        it = iter(loader)
        next(it)
        before = loader.stats()
        for _ in it:
            pass
        since = loader.report(before)
        whole = loader.report()
    # (Since the first batch, the pool may already have finished every record.)
    assert whole.rates["records_per_s"] > 0 and since.rates["records_per_s"] >= 0
    assert whole.interval_s >= since.interval_s
    assert whole.queues["concurrency"] == 8 and whole.queues["prefetch"] == 2
    assert whole.waiting_on in {"consumer", "source", "decode", "fetch", "admission", "hand-off"}
    assert "waiting on:" in str(whole)


def test_long_waits_are_counted_whole_and_a_slow_source_is_named(jpegs: list[str]) -> None:
    def slow(record: dict) -> dict:
        time.sleep(0.25)
        return record

    pipe = dataio.pipeline(dataio.map(slow), dataio.slot("image").decode_image().resize(h=16, w=16), dataio.batch(1))
    with pipe.bind([{"image": p} for p in jpegs[:4]]).run("numpy", concurrency=1) as loader:
        n = sum(1 for _ in loader)
        stats = loader.stats()
        report = loader.report()
    assert n == 4
    # Each batch waits ~0.25 s for its record: more than the native 100 ms poll slice.
    assert stats["consumer_wait_seconds"] >= 0.6, stats
    assert report.waiting_on == "source", str(report)


def test_auto_concurrency_admits_at_least_one_batch() -> None:
    # Cheap records need a whole batch in flight; group_by gets 64; both
    # stay within 8..1024 and explicit values are kept.
    records = [{"x": bytes([i % 256]) * 4} for i in range(600)]
    cpu = dataio._native.pool_info()[0]

    def seen(pipe, **kw) -> int:
        with pipe.bind(records).run("numpy", **kw) as loader:
            n = sum(len(b["x"]) for b in loader)
            assert n == len(records)
            return loader._concurrency

    big = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(512))
    assert seen(big) == max(512, 4 * cpu)
    assert seen(big, concurrency=3) == 3
    huge = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(5000))
    assert seen(huge) == 1024
    records2 = [dict(r, g=i // 50) for i, r in enumerate(records)]
    grouped = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("g"))
    with grouped.bind(records2).run("numpy") as loader:
        assert [len(b["x"]) for b in loader] == [50] * 12
        assert loader._concurrency == max(64, 4 * cpu)
