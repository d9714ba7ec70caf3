"""Checkpoint and resume: bit-identical batches after a restart at any cut
point, small JSON states, refusals of mismatched states, and the training
arguments' validation."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import dataio
from dataio import cond as c
from dataio.errors import CheckpointError, InvalidArgumentError

N = 37


def _jpeg(i: int) -> bytes:
    h, w = 40 + (i % 5) * 9, 50 + (i % 7) * 11
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 5 + i) % 256, (yy * 3) % 256, (xx + yy + 7 * i) % 256], -1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr).save(out, format="JPEG", quality=90)
    return out.getvalue()


RECORDS = [{"key": f"r{i}", "image": _jpeg(i), "label": i % 4, "mask_id": i if i % 3 else None} for i in range(N)]


def _pipe() -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image().random_resized_crop(24, 24).hflip().normalize(),
        dataio.slot("label").decode_bytes(),
        dataio.batch(5, prefetch=2),
        dataio.batch_transforms.mixup(alpha=0.4, num_classes=4),
    )


def _run(pipe: dataio.Pipeline, state: dict | None = None, stop_after: int | None = None, **kw) -> tuple[list, dict]:
    loader = pipe.bind(RECORDS).run("torch", seed=7, **kw)
    if state is not None:
        loader.load_state_dict(state)
    out = []
    for b in loader:
        out.append((list(b.keys), b["image"].clone(), b["label"].clone()))
        if stop_after is not None and len(out) == stop_after:
            st_ = loader.state_dict()
            loader.close()
            return out, st_
    return out, loader.state_dict()


FULL, _ = _run(_pipe())


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for (ka, ia, la), (kb, ib, lb) in zip(a, b):
        assert ka == kb
        assert torch.equal(ia, ib), "images must be bit-identical"
        assert torch.equal(la, lb), "mixed labels must be bit-identical"


@settings(max_examples=12, deadline=None)
@given(cut=st.integers(1, len(FULL) - 1))
def test_resume_is_bit_identical_at_any_cut(cut: int) -> None:
    head, state = _run(_pipe(), stop_after=cut)
    state = json.loads(json.dumps(state))  # JSON-serializable
    tail, _ = _run(_pipe(), state=state)
    _same(head + tail, FULL)


def test_state_is_small_and_independent_of_the_dataset_size() -> None:
    _, s1 = _run(_pipe(), stop_after=2)
    assert len(json.dumps(s1)) < 600
    big = [RECORDS[i % N] for i in range(100_000)]
    loader = _pipe().bind(big).run("torch", seed=7)
    next(iter(loader))
    assert abs(len(json.dumps(loader.state_dict())) - len(json.dumps(s1))) < 20
    loader.close()


def test_output_does_not_depend_on_concurrency_order_or_world() -> None:
    a, _ = _run(_pipe(), concurrency=1)
    _same(a, FULL)
    b, _ = _run(_pipe(), concurrency=13, order="completion")
    by_key = {tuple(k): (i, label) for k, i, label in b}
    for k, i, _label in FULL:
        assert torch.equal(by_key[tuple(k)][0], i)
    # Two ranks together produce the same samples as one rank (no batch transform).
    plain = dataio.pipeline(dataio.slot("image").decode_image().random_resized_crop(24, 24).hflip().normalize(), dataio.batch(5))
    one = {k: t for b in plain.bind(RECORDS).run("torch", seed=3) for k, t in zip(b.keys, b["image"])}
    two = {}
    for r in range(2):
        for b in plain.bind(RECORDS).run("torch", seed=3, shard={"id": r, "of": 2}):
            two.update(zip(b.keys, b["image"]))
    assert set(one) == set(two) and all(torch.equal(one[k], two[k]) for k in one)


def test_epochs_differ_and_repeat() -> None:
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.batch(50))
    loader = pipe.bind(RECORDS).run("numpy", seed=1)
    e0 = [k for b in loader for k in b.keys]
    e1 = [k for b in loader for k in b.keys]
    assert sorted(e0) == sorted(e1) == sorted(r["key"] for r in RECORDS)
    assert e0 != e1, "each epoch is a different permutation"
    loader.set_epoch(0)
    assert [k for b in loader for k in b.keys] == e0


@pytest.mark.parametrize("cut", [1, 2, 4, 7, 10])
def test_completion_order_resume_replays_rather_than_loses(cut: int) -> None:
    # Batches overtake each other in completion order; a checkpoint must
    # resume after the contiguous prefix of delivered batches, not after the
    # last one delivered (that lost the batches it overtook, now and then),
    # and skip those delivered past it (they came twice before).
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.batch(3))
    for _ in range(10):
        loader = pipe.bind(RECORDS).run("numpy", seed=2, order="completion", concurrency=8)
        seen = []
        for i, b in enumerate(loader):
            seen += b.keys
            if i == cut:
                state = loader.state_dict()
                break
        loader.close()
        resumed = pipe.bind(RECORDS).run("numpy", seed=2)
        resumed.load_state_dict(state)
        after = [k for b in resumed for k in b.keys]
        # Nothing lost, nothing repeated: the state names the batches
        # delivered ahead of its position (also resumed in submit order).
        assert sorted(seen + after) == sorted(r["key"] for r in RECORDS)


def test_group_by_resume_over_a_sampler() -> None:
    sampler = [[i, i + 1, i + 2] for i in range(0, 30, 3)]
    records = dataio.from_sampler(sampler, lambda i: {"key": f"s{i}", "x": i})
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.group_by("batch_id"))
    full = [list(b.keys) for b in pipe.bind(records).run("numpy")]
    loader = pipe.bind(records).run("numpy")
    head = []
    for b in loader:
        head.append(list(b.keys))
        if len(head) == 4:
            state = loader.state_dict()
            break
    loader.close()
    resumed = pipe.bind(records).run("numpy")
    resumed.load_state_dict(state)
    assert head + [list(b.keys) for b in resumed] == full


def test_mismatched_states_are_refused() -> None:
    _, state = _run(_pipe(), stop_after=1)
    other = dataio.pipeline(dataio.slot("image").decode_image().resize(24, 24).normalize(), dataio.slot("label").decode_bytes(), dataio.batch(5))
    with pytest.raises(CheckpointError, match="another pipeline"):
        other.bind(RECORDS).run("torch", seed=7).load_state_dict(state)
    with pytest.raises(CheckpointError, match="seed"):
        _pipe().bind(RECORDS).run("torch", seed=8).load_state_dict(state)
    with pytest.raises(CheckpointError, match="records"):
        _pipe().bind(RECORDS[:-1]).run("torch", seed=7).load_state_dict(state)
    with pytest.raises(CheckpointError):
        _pipe().bind(RECORDS).run("torch", seed=7).load_state_dict({"version": 99})
    assert isinstance(CheckpointError("x"), ValueError)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"shard": {"id": 4, "of": 4}}, "out of range"),
        ({"shard": {"id": -1, "of": 2}}, "out of range"),
        ({"shard": {"id": 0, "of": 0}}, "world size"),
        ({"shard": {"id": 0, "of": 2, "bad": 1}}, "unknown keys"),
        ({"seed": "42"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"concurrency": 0}, "concurrency"),
        ({"order": "random"}, "order"),
        ({"on_failure": "ignore"}, "on_failure"),
    ],
)
def test_bad_training_arguments(kw: dict, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        _pipe().bind(RECORDS).run("torch", **kw)


def test_group_key_missing_from_a_record() -> None:
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.group_by("batch_id"))
    with pytest.raises(InvalidArgumentError, match="batch_id"):
        list(pipe.bind(iter(RECORDS)).run("numpy"))


def test_conditionals_gate_reads_and_branch_on_shape() -> None:
    pipe = dataio.pipeline(
        dataio.slot("label").decode_bytes(),
        dataio.slot("mask", optional=True, field="image").active_when(c.col("mask_id").is_not_null()).decode_image(mode="gray"),
        dataio.slot("image").decode_image().when(c.shape(axis=1).gt(70)).then(dataio.transforms.center_crop(h=16, w=16)).otherwise(dataio.transforms.resize(h=16, w=16)),
        dataio.batch(N),
    )
    (b,) = list(pipe.bind(RECORDS).run("numpy"))
    assert b["image"].shape == (N, 16, 16, 3)
    masks = b["mask"]
    assert [m is None for m in masks] == [r["mask_id"] is None for r in RECORDS]
