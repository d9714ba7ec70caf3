"""The executor seam: planning and execution apart give the same batches as
the local loader, for every shape stage; group_by's distinct-key grouping
and its bound; run(prefetch=) and run(executor=)."""

from __future__ import annotations

import io
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio
from dataio.errors import InvalidArgumentError, RowError
from dataio.executor import EpochJob, FinishedBatch, LocalExecutor, PlannedBatch, run_planned

N = 23


def _jpeg(i: int) -> bytes:
    h, w = 30 + (i % 5) * 7, 40 + (i % 3) * 9
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 5 + i) % 256, (yy * 3) % 256, (xx + yy + 7 * i) % 256], -1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr).save(out, format="JPEG", quality=90)
    return out.getvalue()


RECORDS = [{"key": f"r{i}", "image": _jpeg(i), "label": i % 4, "bucket": "abc"[i % 3]} for i in range(N)]


def _rename(r: dict[str, Any]) -> dict[str, Any]:
    return {**r, "img": r["image"]}


def _random_pipe(shape: Any) -> dataio.Pipeline:
    stages: list[Any] = [
        dataio.map(_rename),
        dataio.slot("image", field="img").decode_image().random_resized_crop(16, 16).hflip().normalize(),
        dataio.slot("label").decode_bytes(),
        shape,
    ]
    if shape.kind == "batch":
        stages.append(dataio.batch_transforms.mixup(alpha=0.4, num_classes=4))
    return dataio.pipeline(*stages)


def _snapshot(batches: Any) -> list[tuple[list[str], list[int], bytes, bytes]]:
    out = []
    for b in batches:
        out.append((list(b.keys), list(b.indices), np.ascontiguousarray(b["image"]).tobytes(), np.ascontiguousarray(b["label"]).tobytes()))
    return out


def _job(pipe: dataio.Pipeline, records: Any, **kw: Any) -> EpochJob:
    base = dict(seed=None, epoch=0, shard={"id": 0, "of": 1, "pad": False}, start=0, global_offset=0, concurrency=8, order="submit", on_failure="raise", context=None, prefetch=2)
    base.update(kw)
    return EpochJob(pipeline=pipe, records=records, **base)


def _execute(pipe: dataio.Pipeline, planned: list[PlannedBatch], chunk: int, **opts: Any) -> list[FinishedBatch]:
    """Executes planned batches in chunks, last chunk first, then restores submit order."""
    chunks = [planned[i : i + chunk] for i in range(0, len(planned), chunk)]
    done: list[FinishedBatch] = []
    for part in reversed(chunks):
        # Planned batches and finished ones cross process boundaries: both pickle.
        done.extend(run_planned(pipe, pickle.loads(pickle.dumps(part)), **opts))
    done = [pickle.loads(pickle.dumps(b)) for b in done]
    return sorted(done, key=lambda b: b.seq)


class _Wrapped:
    """A finished batch seen through the loader's output conversion."""

    def __init__(self, b: FinishedBatch) -> None:
        self.keys, self.indices, self._slots = b.keys, b.indices, b.slots

    def __getitem__(self, name: str) -> Any:
        v = self._slots[name]
        return getattr(v, "array", v)


@pytest.mark.parametrize(
    "shape, seed, sized",
    [
        (dataio.batch(4), 11, True),
        (dataio.batch(5, drop_last=True), 3, True),
        (dataio.batch(4), None, False),
        (dataio.group_by("bucket"), None, True),
        (dataio.group_by("bucket"), None, False),
    ],
    ids=["batch-seeded", "batch-drop-last", "batch-stream", "group-by", "group-by-stream"],
)
def test_planned_batches_execute_to_the_local_loaders_output(shape: Any, seed: int | None, sized: bool) -> None:
    pipe = _random_pipe(shape)
    records = RECORDS if sized else iter(RECORDS)
    local = _snapshot(pipe.bind(RECORDS if sized else iter(RECORDS)).run("numpy", seed=seed))
    planned = list(_job(pipe, records, seed=seed).plan())
    assert [p.seq for p in planned] == list(range(len(planned)))
    assert all(isinstance(r, dict) and "img" not in r for p in planned for r in p.records), "raw records, before maps"
    for chunk in (1, 3):
        done = _execute(pipe, planned, chunk, seed=seed)
        assert [b.end_position for b in done] == [p.end_position for p in planned]
        assert _snapshot(_Wrapped(b) for b in done) == local


def test_collate_plans_one_batch_per_source_item() -> None:
    groups = [RECORDS[0:3], RECORDS[3:4], RECORDS[4:9]]
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=8, w=8), dataio.collate())
    local = [list(b.keys) for b in pipe.bind(groups).run("numpy")]
    from dataio.loader import _Collated

    planned = list(_job(pipe, _Collated(groups)).plan())
    assert [[r["key"] for r in p.records] for p in planned] == local == [[r["key"] for r in g] for g in groups]


def test_group_by_emits_one_batch_per_distinct_key_in_first_arrival_order() -> None:
    keys = ["a", "b", "a", "c", "b", "a"]
    records = [{"key": f"k{i}", "g": g, "x": i} for i, g in enumerate(keys)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("g"))
    got = [(list(b.keys), b["x"].tolist()) for b in pipe.bind(records).run("numpy")]
    assert got == [(["k0", "k2", "k5"], [0, 2, 5]), (["k1", "k4"], [1, 4]), (["k3"], [3])]


def test_group_by_bound_emits_the_oldest_group_and_refuses_a_returning_key() -> None:
    records = [{"key": f"k{i}", "g": g, "x": i} for i, g in enumerate(["a", "a", "b", "c", "c"])]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("g", max_open_groups=2))
    assert [b["x"].tolist() for b in pipe.bind(records).run("numpy")] == [[0, 1], [2], [3, 4]]
    back = [{"key": f"k{i}", "g": g, "x": i} for i, g in enumerate(["a", "b", "c", "a"])]
    with pytest.raises(InvalidArgumentError, match=r"key a came back.*max_open_groups=2"):
        list(pipe.bind(back).run("numpy"))
    # The same records with room for every group: one batch per key.
    roomy = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("g", max_open_groups=3))
    assert [b["x"].tolist() for b in roomy.bind(back).run("numpy")] == [[0, 3], [1], [2]]
    # The bound does not change what a plan yields, so not its signature.
    assert roomy.signature == pipe.signature


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_group_by_resume_with_open_groups_is_exact(cut: int) -> None:
    keys = ["a", "b", "a", "c", "b", "d", "a", "e", "c", "e"]
    records = [{"key": f"k{i}", "g": g, "x": i} for i, g in enumerate(keys)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("g", max_open_groups=8))
    full = [b["x"].tolist() for b in pipe.bind(records).run("numpy")]
    assert full == [[0, 2, 6], [1, 4], [3, 8], [5], [7, 9]]
    loader = pipe.bind(records).run("numpy")
    head = []
    for b in loader:
        head.append(b["x"].tolist())
        if len(head) == cut:
            state = loader.state_dict()
            break
    loader.close()
    resumed = pipe.bind(records).run("numpy")
    resumed.load_state_dict(state)
    assert head + [b["x"].tolist() for b in resumed] == full


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_run_prefetch_must_be_a_non_negative_integer(bad: Any) -> None:
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2))
    with pytest.raises(ValueError, match="prefetch"):
        pipe.bind([{"x": 1}]).run("numpy", prefetch=bad)


def test_run_prefetch_overrides_the_shape_stages_window() -> None:
    records = [{"x": i} for i in range(64)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2, prefetch=1))
    for prefetch in (0, 9):
        loader = pipe.bind(records).run("numpy", prefetch=prefetch, concurrency=2)
        first = next(iter(loader))
        # The window is prefetch + concurrency / batch size = prefetch + 1
        # batches; one was delivered, so the coordinator forms exactly one
        # more than the window and then waits for the consumer.
        window = prefetch + 1
        for _ in range(1000):
            if loader.stats()["batches_built"] >= window + 1:
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.05)
        assert loader.stats()["batches_built"] == window + 1, prefetch
        assert first["x"].tolist() == [0, 1]
        loader.close()


class _ThreadExecutor:
    """An executor that plans here and runs chunks of planned batches on a
    thread of its own, through the public seam (the shape of a remote one)."""

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk
        self.started = 0

    def start(self, job: EpochJob) -> Any:
        self.started += 1
        return _ThreadRun(job, self.chunk)


class _ThreadRun:
    def __init__(self, job: EpochJob, chunk: int) -> None:
        self._batches = self._run(job, chunk)
        self.position = job.start
        self.closed = False

    @staticmethod
    def _run(job: EpochJob, chunk: int) -> Iterator[FinishedBatch]:
        planned = job.plan()
        while True:
            part = [p for _, p in zip(range(chunk), planned)]
            if not part:
                return
            yield from run_planned(job.pipeline, part, **job.run_options())

    def next_batch(self) -> FinishedBatch | None:
        b = next(self._batches, None)
        if b is not None:
            self.position = b.end_position
        return b

    def stats(self) -> dict[str, Any]:
        return {"batches_delivered": 0}

    def close(self) -> None:
        self.closed = True


def test_run_executor_object_gives_the_local_batches_and_resumes_across_executors() -> None:
    pipe = _random_pipe(dataio.batch(4))
    local = _snapshot(pipe.bind(RECORDS).run("torch", seed=5))
    ex = _ThreadExecutor(chunk=2)
    with pipe.bind(RECORDS).run("torch", seed=5, executor=ex) as loader:
        remote = _snapshot(loader)
        assert ex.started == 1
    assert remote == local
    # Checkpoint under the executor, resume locally; and the other way round.
    loader = pipe.bind(RECORDS).run("torch", seed=5, executor=_ThreadExecutor(chunk=3))
    head = []
    for b in loader:
        head.append(b)
        if len(head) == 2:
            state = loader.state_dict()
            break
    tail = pipe.bind(RECORDS).run("torch", seed=5)
    tail.load_state_dict(state)
    assert _snapshot(head) + _snapshot(tail) == local
    loader = pipe.bind(RECORDS).run("torch", seed=5)
    head = []
    for b in loader:
        head.append(b)
        if len(head) == 3:
            state = loader.state_dict()
            break
    tail = pipe.bind(RECORDS).run("torch", seed=5, executor=_ThreadExecutor(chunk=1))
    tail.load_state_dict(state)
    assert _snapshot(head) + _snapshot(tail) == local


def test_run_planned_reports_row_errors_with_their_record_in_skip_mode() -> None:
    records = [dict(r) for r in RECORDS[:6]]
    records[3]["image"] = b"not an image"
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=8, w=8), dataio.batch(3))
    planned = list(_job(pipe, records).plan())
    done = list(run_planned(pipe, planned, on_failure="skip"))
    assert [b.keys for b in done] == [["r0", "r1", "r2"], ["r4", "r5"]]
    (err,) = pickle.loads(pickle.dumps(done[1].errors()))
    assert isinstance(err, RowError) and err.key == "r3" and err.slot == "image" and err.op == "decode_image"
    with pytest.raises(RowError, match="r3"):
        list(run_planned(pipe, planned))


def test_executor_names_resolve_through_plugins() -> None:
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2))
    with pytest.raises(InvalidArgumentError, match="no executor named 'nope'"):
        pipe.bind([{"x": 1}]).run("numpy", executor="nope")
    with pytest.raises(InvalidArgumentError, match="start"):
        pipe.bind([{"x": 1}]).run("numpy", executor=object())
    assert [b["x"].tolist() for b in pipe.bind([{"x": 1}]).run("numpy", executor=LocalExecutor())] == [[1]]
