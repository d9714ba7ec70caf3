"""Tensors leave the engine through DLPack without a copy, share the native
buffer, and free it when the last view dies (``_native.live_buffers()``
counts live engine buffers)."""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
import pytest
import torch
from _imaging import decode_one, live_buffers, natural_image, png, run_all

import dataio
from dataio import _native
from dataio import cond as c


def settle(target: int | None = None, timeout: float = 10.0) -> int:
    """The live buffer count once it stops moving (tasks of closed loaders
    may still be unwinding on the pool), or once it reaches `target`. This
    waits for an end state; it asserts nothing about time."""
    deadline = time.monotonic() + timeout
    last, stable = live_buffers()[0], 0  # one full gc; then the counter alone
    while time.monotonic() < deadline:
        if target is not None and last == target:
            return last
        time.sleep(0.01)
        now = _native.live_buffers()[0]
        stable = stable + 1 if now == last else 0
        last = now
        if target is None and stable >= 5:
            return last
    return last


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return [{"key": f"k{i}", "image": png(natural_image(40 + i, 50, seed=i)), "label": i} for i in range(10)]


def pipe(batch: int = 4) -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image().resize(h=32, w=32).normalize("imagenet"),
        dataio.slot("raw", field="image").decode_image(),  # variable shape: a list of tensors
        dataio.slot("label").decode_bytes(),
        dataio.batch(batch),
    )


def test_native_output_gives_engine_tensors(records: list[dict[str, Any]]) -> None:
    batches = run_all(pipe(), records, "native")
    b = batches[0]
    t = b["image"]
    assert isinstance(t, _native.Tensor)
    assert t.shape == [4, 3, 32, 32] and t.dtype == "float32" and t.nbytes == 4 * 3 * 32 * 32 * 4
    assert isinstance(t.data_ptr, int) and t.data_ptr != 0
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    raw = b["raw"]
    assert isinstance(raw, list) and len(raw) == 4 and all(isinstance(x, _native.Tensor) for x in raw)
    assert raw[1].shape == [41, 50, 3] and raw[1].dtype == "uint8"
    assert isinstance(b["label"], _native.Tensor) and b["label"].dtype == "int64"


def test_torch_from_dlpack_shares_the_native_buffer(records: list[dict[str, Any]]) -> None:
    (b, *_) = run_all(pipe(), records, "native")
    for t in [b["image"], b["label"], *b["raw"]]:
        tt = torch.from_dlpack(t)
        assert tt.data_ptr() == t.data_ptr, "torch got a copy, not the engine's buffer"
        assert list(tt.shape) == t.shape
        nn = np.from_dlpack(t)
        assert nn.ctypes.data == t.data_ptr, "numpy got a copy, not the engine's buffer"
        assert torch.from_dlpack(t).data_ptr() == tt.data_ptr()
    # one buffer, several views: a write through torch is seen by numpy
    t = b["raw"][0]
    tt, nn = torch.from_dlpack(t), np.from_dlpack(t)
    before = int(nn[0, 0, 0])
    tt[0, 0, 0] = (before + 1) % 256
    assert int(nn[0, 0, 0]) == (before + 1) % 256
    assert bytes(memoryview(t))[:1] == bytes([(before + 1) % 256]), "the buffer protocol exports the same memory"


def test_torch_and_numpy_outputs(records: list[dict[str, Any]]) -> None:
    tb = run_all(pipe(), records, "torch")
    nb = run_all(pipe(), records, "numpy")
    assert [len(b) for b in tb] == [len(b) for b in nb] == [4, 4, 2]
    for t, n in zip(tb, nb):
        assert isinstance(t["image"], torch.Tensor) and t["image"].dtype == torch.float32
        assert isinstance(n["image"], np.ndarray) and n["image"].dtype == np.float32
        np.testing.assert_array_equal(t["image"].numpy(), n["image"])
        assert isinstance(t["label"], torch.Tensor) and t["label"].dtype == torch.int64
        assert t["label"].tolist() == n["label"].tolist() == [int(k[1:]) for k in t.keys]
        assert all(isinstance(x, torch.Tensor) and x.dtype == torch.uint8 for x in t["raw"])
        assert all(isinstance(x, np.ndarray) for x in n["raw"])
        # batches are contiguous, rows first, and 64-byte aligned
        assert t["image"].is_contiguous() and t["image"].data_ptr() % 64 == 0
        assert n["image"].flags.c_contiguous
    with pytest.raises(dataio.errors.InvalidArgumentError, match="output"):
        pipe().bind(records).run("tensorflow")


def test_buffers_are_freed_when_the_tensors_die(records: list[dict[str, Any]]) -> None:
    for output in ("torch", "numpy", "native"):
        base = settle()
        batches = run_all(pipe(), records, output)
        held = live_buffers()[0]
        assert held > base, f"{output}: the batches hold no engine buffers?"
        # each batch holds its stacked image, stacked label and per-row raw images
        first = batches[0]
        del batches
        # the first batch is still alive: its buffers too
        assert settle() > base
        assert float(np.asarray(first["image"]).sum()) != 0.0
        del first
        assert settle(base) == base, f"{output}: engine buffers leak after every tensor died"


def test_a_tensor_outlives_its_loader_and_batch(records: list[dict[str, Any]]) -> None:
    base = settle()
    p = dataio.pipeline(dataio.slot("image").decode_image(), dataio.batch(1))
    with p.bind(records[:1]).run("torch") as loader:
        (batch,) = list(loader)
    t = batch["image"]
    del batch, loader
    gc.collect()
    assert settle() > base, "the tensor's buffer was freed while the tensor lives"
    expect = decode_one(dataio.slot("image").decode_image(), records[0]["image"])
    np.testing.assert_array_equal(t[0].numpy(), expect)
    del t
    assert settle(base) == base


def test_views_of_one_buffer_keep_it_alive_until_the_last_dies(records: list[dict[str, Any]]) -> None:
    base = settle()
    (b, *rest) = run_all(pipe(), records, "native")
    del rest
    t = b["image"]
    views = [torch.from_dlpack(t), np.from_dlpack(t), torch.from_dlpack(t)[1:3]]
    ref = views[1].copy()
    del b, t
    assert settle() > base
    np.testing.assert_array_equal(views[0].numpy(), ref)
    np.testing.assert_array_equal(views[1], ref)
    np.testing.assert_array_equal(views[2].numpy(), ref[1:3])
    del views
    assert settle(base) == base


def test_unconsumed_dlpack_capsules_do_not_leak(records: list[dict[str, Any]]) -> None:
    base = settle()
    (b, *rest) = run_all(pipe(), records, "native")
    del rest
    t = b["image"]
    capsules = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0)), t.__dlpack__(max_version=(0, 8))]
    del b, t
    assert settle() > base
    del capsules
    assert settle(base) == base


def test_dlpack_refuses_copies_and_other_devices(records: list[dict[str, Any]]) -> None:
    (b, *_) = run_all(pipe(), records, "native")
    t = b["image"]
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError):
        t.__dlpack__(copy=True)
    assert t.__dlpack__(copy=False) is not None


def test_optional_rows_are_views_into_one_buffer_and_are_freed(tmp_path: Any) -> None:
    base = settle()
    recs = [{"image": png(natural_image(30, 30, seed=i)), "mask": png(natural_image(30, 30, seed=9)) if i % 2 else None} for i in range(6)]
    p = dataio.pipeline(
        dataio.slot("image").decode_image().resize(h=16, w=16),
        dataio.slot("mask", optional=True).active_when(c.col("mask").is_not_null()).decode_image(mode="gray").resize(h=8, w=8),
        dataio.batch(6),
    )
    (b,) = run_all(p, recs, "torch")
    masks = b["mask"]
    assert [m is None for m in masks] == [r["mask"] is None for r in recs]
    present = [m for m in masks if m is not None]
    assert all(tuple(m.shape) == (8, 8, 1) for m in present)
    del b, masks
    assert settle() > base
    del present
    assert settle(base) == base
