"""dataio.pack with a RayExecutor: the document blocks execute on a
two-node cluster and the packed batches are the local run's, bit for bit;
a packed checkpoint taken on Ray resumes locally."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import dataio
from dataio_ray import RayExecutor


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def packed(batches: Any) -> list[tuple[Any, ...]]:
    names = ("input_ids", "labels", "position_ids", "document_ids", "cu_seqlens")
    return [tuple(np.asarray(b[n]).tolist() for n in names) + (b["max_seqlen"],) for b in batches]


@pytest.fixture
def two_workers(ray_cluster: Any) -> Any:
    ex = RayExecutor(num_workers=2)
    yield ex
    ex.close()


@pytest.mark.parametrize("strategy", ["best_fit", "concat"])
def test_packed_batches_on_ray_are_the_local_run(two_workers: RayExecutor, strategy: str) -> None:
    rng = np.random.default_rng(3)
    records = [{"key": f"d{i}", "ids": npy(1000 * (i + 1) + np.arange(1, int(rng.integers(1, 50)) + 1))} for i in range(80)]
    pipe = dataio.pipeline(dataio.slot("ids").decode_npy(),
                           dataio.pack("ids", seq_len=40, batch_size=3, strategy=strategy, eos_token=0, window=16))
    with pipe.bind(records).run("numpy", seed=5) as loader:
        want = packed(loader)
    assert len(want) > 5
    with pipe.bind(records).run("numpy", seed=5, executor=two_workers) as loader:
        assert packed(loader) == want
    loader = pipe.bind(records).run("numpy", seed=5, executor=two_workers)
    it = iter(loader)
    head = [next(it) for _ in range(3)]
    state = loader.state_dict()
    loader.close()
    with pipe.bind(records).run("numpy", seed=5) as resumed:
        resumed.load_state_dict(state)
        assert packed(head) + packed(resumed) == want
