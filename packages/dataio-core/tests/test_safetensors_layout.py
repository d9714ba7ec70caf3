"""The public layout API of safetensors files (what device readers and other
transports build on): ``SafetensorsFile.layout()``,
``SafetensorsLayout.from_header`` and the ``SAFETENSORS_DTYPES`` table,
checked against the files themselves and against torch and numpy."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

import dataio
from dataio.errors import CorruptDataError
from dataio.formats.safetensors import (
    SAFETENSORS_DTYPES,
    SafetensorsDType,
    SafetensorsLayout,
    TensorLayout,
)


@pytest.fixture
def checkpoint(tmp_path: Path) -> tuple[str, dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    state = {
        "w": torch.randn(7, 5, generator=g),
        "half": torch.randn(3, generator=g).to(torch.bfloat16),
        "mask": torch.rand(4, 2, generator=g) > 0.5,
        "ids": torch.arange(9, dtype=torch.int64),
        "empty": torch.zeros(0, 3),
        "step": torch.tensor(5, dtype=torch.int32),
    }
    path = str(tmp_path / "model.safetensors")
    dataio.write_safetensors(path, state, metadata={"format": "pt"})
    return path, state


def test_the_layout_places_every_tensor_where_its_bytes_are(checkpoint: tuple[str, dict[str, torch.Tensor]]) -> None:
    path, state = checkpoint
    raw = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    with dataio.open_safetensors(path) as f:
        layout = f.layout()
    assert isinstance(layout, SafetensorsLayout)
    assert layout.uri == path and layout.local_path == path
    assert layout.size == len(raw) and layout.data_offset == 8 + header_len
    assert layout.data_size == len(raw) - 8 - header_len
    assert layout.metadata == {"format": "pt"}
    assert list(layout.tensors) == [k for k in header if k != "__metadata__"]  # header order
    for name, t in layout.tensors.items():
        assert isinstance(t, TensorLayout) and t.name == name
        assert t.dtype is SAFETENSORS_DTYPES[header[name]["dtype"]]
        assert list(t.shape) == header[name]["shape"] and [t.begin, t.end] == header[name]["data_offsets"]
        assert t.nbytes == state[name].numel() * state[name].element_size()
        data = raw[layout.data_offset + t.begin : layout.data_offset + t.end]
        rebuilt = torch.frombuffer(bytearray(data), dtype=t.dtype.torch_dtype()) if t.nbytes else torch.empty(0, dtype=t.dtype.torch_dtype())
        assert torch.equal(rebuilt.reshape(t.shape), state[name]), name
    with pytest.raises(TypeError):
        layout.tensors["w"] = layout.tensors["ids"]  # type: ignore[index]  # read-only


def test_a_header_fetched_by_other_means_parses_to_the_same_layout(checkpoint: tuple[str, dict[str, torch.Tensor]]) -> None:
    path, _ = checkpoint
    raw = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    layout = SafetensorsLayout.from_header(raw[: 8 + header_len], len(raw), "elsewhere://x")
    local = dataio.open_safetensors(path).layout()
    assert layout.uri == "elsewhere://x" and layout.local_path is None
    assert (layout.data_offset, layout.size, dict(layout.tensors), dict(layout.metadata)) == (
        local.data_offset,
        local.size,
        dict(local.tensors),
        dict(local.metadata),
    )
    with pytest.raises(CorruptDataError, match="elsewhere://x"):
        SafetensorsLayout.from_header(raw[: 8 + header_len], len(raw) - 1, "elsewhere://x")  # a truncated file


def test_the_dtype_table_agrees_with_torch_and_numpy() -> None:
    assert {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"} == set(SAFETENSORS_DTYPES)
    for name, d in SAFETENSORS_DTYPES.items():
        assert isinstance(d, SafetensorsDType) and d.name == name
        assert d.torch_dtype().itemsize == d.itemsize, name
        if d.numpy_name is not None:
            assert np.dtype(d.numpy_name).itemsize == d.itemsize, name
    assert SAFETENSORS_DTYPES["BF16"].torch_dtype() is torch.bfloat16 and SAFETENSORS_DTYPES["BF16"].numpy_name is None
    with pytest.raises(TypeError):
        SAFETENSORS_DTYPES["X"] = SAFETENSORS_DTYPES["U8"]  # type: ignore[index]  # read-only
