"""GPU paths: a multi-GB sharded checkpoint read to cuda:0, every tensor
compared with a host read, through GDS and through the staged fallback.
Runs only where CUDA is present (the device check script .ci/device-check)."""

from __future__ import annotations

import os

import pytest
import torch

import dataio

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this host (GPU tests run in .ci/device-check)")

SIZE_GB = float(os.environ.get("DATAIO_GPU_TEST_GB", "2"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("ckpt")
    n = max(1, int(SIZE_GB * (1 << 30) / (64 << 20)))
    g = torch.Generator().manual_seed(0)
    sd = {f"w{i}": torch.randn(16 << 20, generator=g) for i in range(n)}
    sd["bf16"] = torch.randn(1000, dtype=torch.float32).to(torch.bfloat16)
    sd["odd"] = torch.tensor([True, False, True])
    dataio.write_safetensors(str(d) + "/", sd, max_shard_size="1GB")
    return str(d)


@pytest.mark.parametrize("path", ["gds", "staged"])
def test_sharded_checkpoint_to_device_matches_host(checkpoint: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataio_gds.reader as reader

    if path == "staged":
        monkeypatch.setattr(reader, "read_gds", lambda f, device: (_ for _ in ()).throw(OSError("forced fallback")))
    host = dataio.read_safetensors(checkpoint)
    dev = dataio.read_safetensors(checkpoint, device="cuda:0")
    assert set(dev) == set(host)
    for k, v in host.items():
        assert dev[k].device.type == "cuda"
        assert torch.equal(dev[k].cpu(), v), k
    assert dataio.gds_info()["path"] in ("gds", "staged")
    if path == "staged":
        assert dataio.gds_info()["path"] == "staged"
        assert reader.READER.last_path == "staged"


def test_one_tensor_to_device(checkpoint: str) -> None:
    import glob

    shard = sorted(glob.glob(checkpoint + "/*.safetensors"))[0]
    with dataio.open_safetensors(shard) as f:
        key = f.keys()[0]
        t = f.read(key=key, device="cuda:0")
        assert t.is_cuda and torch.equal(t.cpu(), f.read(key=key))


def test_pipeline_batches_on_device(tmp_path) -> None:
    recs = [{"x": bytes([i]) * 4} for i in range(10)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(5))
    for b in pipe.bind(recs).run("torch", device="cuda:0"):
        assert b["x"].is_cuda
