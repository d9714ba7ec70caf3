"""to_dataset: one epoch of a pipeline as a Ray Data dataset whose rows are
the local run's samples, made by the native engine inside Ray Data's read
tasks; iter_torch_batches and streaming_split (what Ray Train's
get_dataset_shard hands each training worker) read it."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from _data import make_records, random_pipeline

import dataio
from dataio.errors import InvalidArgumentError
from dataio_ray import to_dataset

RECORDS = make_records(30)
PIPE = random_pipeline(dataio.batch(4))


@pytest.fixture
def ordered(ray_cluster: Any) -> Any:
    import ray.data

    ctx = ray.data.DataContext.get_current()
    before = ctx.execution_options.preserve_order
    ctx.execution_options.preserve_order = True
    yield ctx
    ctx.execution_options.preserve_order = before


def local_samples(**opts: Any) -> list[tuple[str, int, bytes, bytes]]:
    out = []
    with PIPE.bind(RECORDS).run("numpy", **opts) as loader:
        for b in loader:
            for i, key in enumerate(b.keys):
                out.append((key, b.indices[i], np.ascontiguousarray(b["image"][i]).tobytes(), np.ascontiguousarray(b["label"][i]).tobytes()))
    return out


def rows_of(ds: Any) -> list[tuple[str, int, bytes, bytes]]:
    return [
        (r["__key__"], int(r["__index__"]), np.ascontiguousarray(r["image"]).tobytes(), np.ascontiguousarray(r["label"]).tobytes())
        for r in ds.iter_rows()
    ]


def test_rows_are_the_local_runs_samples(ordered: Any) -> None:
    ds = to_dataset(PIPE.bind(RECORDS), seed=6, epoch=1, with_keys=True, override_num_blocks=3)
    assert rows_of(ds) == local_samples(seed=6, epoch=1)
    assert ds.count() == len(RECORDS)
    assert set(ds.columns()) == {"image", "label", "__key__", "__index__"}
    # Another epoch is another permutation and other random crops.
    assert rows_of(to_dataset(PIPE.bind(RECORDS), seed=6, epoch=2, with_keys=True)) == local_samples(seed=6, epoch=2)


def test_iter_torch_batches(ordered: Any) -> None:
    import torch

    ds = to_dataset(PIPE.bind(RECORDS), seed=3)
    assert ds.columns() == ["image", "label"]
    images = [b["image"] for b in ds.iter_torch_batches(batch_size=8)]
    assert all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 and tuple(t.shape[1:]) == (3, 16, 16) for t in images)
    want = torch.from_numpy(np.stack([np.frombuffer(s[2], dtype=np.float32).reshape(3, 16, 16) for s in local_samples(seed=3)]))
    assert torch.equal(torch.cat(images), want)


def test_streaming_split_feeds_every_shard_once(ray_cluster: Any) -> None:
    """Ray Train's get_dataset_shard is a streaming_split of the dataset: each
    training worker iterates its own part, and together they see every
    sample exactly once."""
    ds = to_dataset(PIPE.bind(RECORDS), seed=9, with_keys=True)
    shards = ds.streaming_split(2, equal=False)
    seen: list[list[str]] = [[], []]

    def consume(i: int) -> None:
        for batch in shards[i].iter_batches(batch_size=4):
            seen[i].extend(str(k) for k in batch["__key__"])

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(seen[0] + seen[1]) == sorted(r["key"] for r in RECORDS)


def test_skipped_rows_are_left_out(ordered: Any) -> None:
    records = [dict(r) for r in RECORDS]
    records[4]["image"] = b"broken"
    ds = to_dataset(PIPE.bind(records), seed=2, on_failure="skip", with_keys=True)
    keys = [r["__key__"] for r in ds.iter_rows()]
    assert "r4" not in keys and len(keys) == len(RECORDS) - 1


def test_a_one_pass_iterator_is_refused(ray_cluster: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="one-pass iterator.*RayExecutor"):
        to_dataset(PIPE.bind(iter(RECORDS)), seed=0)
