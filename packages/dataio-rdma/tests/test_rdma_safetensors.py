"""Serving a checkpoint: a safetensors file served read-only by another
process, its header fetched over RDMA and parsed with dataio's own
(validating) safetensors parser, and every tensor's byte range read straight
into a torch tensor, equal to a local read.

The server runs in its own process (in its own network namespace where the
sandbox allows it; see conftest.py).
"""

from __future__ import annotations

import struct

import pytest

import dataio
from dataio import rdma
from dataio.formats.safetensors import MAX_HEADER, SafetensorsLayout
from dataio.testing import require

torch = require("torch")


@pytest.fixture
def checkpoint(tmp_path):
    g = torch.Generator().manual_seed(0)
    state = {
        "embed.weight": torch.randn(4096, 512, generator=g),  # 8 MiB float32: many chunks
        "layers.0.attn.qkv": torch.randn(512, 1536, generator=g).to(torch.bfloat16),
        "layers.0.mlp.up": torch.randn(512, 1024, generator=g).to(torch.float16),
        "layers.0.norm.bias": torch.randn(513, generator=g),  # odd size: unaligned offsets after it
        "step": torch.tensor([12345], dtype=torch.int64),
        "mask": torch.rand(77, 3, generator=g) > 0.5,
    }
    path = str(tmp_path / "model.safetensors")
    assert dataio.write_safetensors(path, state, metadata={"format": "pt"}) == [path]
    return path, state


def test_tensor_ranges_over_rdma_match_a_local_read(spawn_server, checkpoint) -> None:
    path, state = checkpoint
    server = spawn_server(mode="file", path=path)
    local = dataio.read_safetensors(path)
    with rdma.connect(server.addr, chunk_size=1 << 20, max_inflight=8) as client:
        assert not client.writable
        # The header, over RDMA, through dataio's parser.
        (n,) = struct.unpack("<Q", rdma.read(client, 0, 8))
        assert n <= MAX_HEADER
        prefix = rdma.read(client, 0, 8 + n)
        layout = SafetensorsLayout.from_header(prefix, client.size, f"rdma://{server.addr}")
        data_start, entries = layout.data_offset, layout.tensors
        assert layout.metadata == {"format": "pt"}
        # The same layout dataio sees locally.
        with dataio.open_safetensors(path) as f:
            local_layout = f.layout()
            assert (local_layout.data_offset, sorted(f.keys())) == (data_start, sorted(entries))
            assert local_layout.tensors == layout.tensors and local_layout.local_path == path
        assert set(entries) == set(state)
        for name, e in entries.items():
            dst = torch.empty(e.shape, dtype=state[name].dtype)
            assert rdma.read_into(client, dst, offset=data_start + e.begin) == e.nbytes
            assert torch.equal(dst, local[name]), name
            assert torch.equal(dst, state[name]), name
        # A row range of one tensor: offset arithmetic only.
        e = entries["embed.weight"]
        rows = torch.empty(100, 512)
        rdma.read_into(client, rows, offset=data_start + e.begin + 1000 * 512 * 4)
        assert torch.equal(rows, state["embed.weight"][1000:1100])
        # The whole file, compared byte for byte.
        with open(path, "rb") as fh:
            assert rdma.read(client) == fh.read()


def test_serving_a_checkpoint_bigger_than_a_read(spawn_server, tmp_path) -> None:
    # A file much larger than any one transfer: pages load on demand (mmap).
    path = tmp_path / "big.safetensors"
    t = torch.arange(24 << 20, dtype=torch.int32)  # 96 MiB
    dataio.write_safetensors(str(path), {"t": t})
    server = spawn_server(mode="file", path=str(path))
    with rdma.connect(server.addr, chunk_size=4 << 20, max_inflight=4) as client:
        (n,) = struct.unpack("<Q", rdma.read(client, 0, 8))
        tail = torch.empty(1 << 20, dtype=torch.int32)
        rdma.read_into(client, tail, offset=8 + n + (t.numel() - tail.numel()) * 4)
        assert torch.equal(tail, t[-tail.numel():])
