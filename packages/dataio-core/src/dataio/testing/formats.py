"""The formats suite: :class:`FormatsConformance`, the format helpers end to
end on any scheme (safetensors checkpoints and ``get_slice``, parquet, the
image pipeline): the same checks every cloud plugin runs against its
emulator. Needs torch, pyarrow, safetensors and pillow (the core's test
group)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

import dataio
from dataio import cond as c

from .helpers import pipeline_images, require

__all__ = ["FormatsConformance"]


def _formats_state_dict() -> dict[str, Any]:
    torch = require("torch")
    g = torch.Generator().manual_seed(6)
    return {
        "embed.weight": torch.randn(257, 64, generator=g),  # 65.8 KB: a shard of its own
        "layers.0.attn.qkv": torch.randn(96, 64, generator=g).to(torch.bfloat16),
        "layers.0.attn.bias": torch.randn(96, generator=g).to(torch.float16),
        "layers.0.mlp.w": torch.randn(40, 64, generator=g, dtype=torch.float64),
        "layers.1.mlp.w": torch.randn(64, 40, generator=g),
        "mask": torch.rand(33, 7, generator=g) > 0.5,
        "tokens": torch.randint(0, 256, (1000,), generator=g, dtype=torch.uint8),
        "ids": torch.arange(-500, 500, dtype=torch.int32).reshape(10, 100),
        "step": torch.tensor(1234, dtype=torch.int64),  # 0-d
        "empty": torch.zeros(0, 16),
    }


def _assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    import torch

    assert sorted(got) == sorted(want)
    for k, w in want.items():
        assert got[k].dtype == w.dtype and tuple(got[k].shape) == tuple(w.shape), k
        assert torch.equal(got[k], w), k


def _check_sharded_checkpoint(root: str, tmp_path: Path) -> None:
    sd = _formats_state_dict()
    meta = {"format": "pt", "run": "e2e"}
    local = tmp_path / "ckpt"
    local_files = dataio.write_safetensors(str(local), sd, max_shard_size="24KB", metadata=meta)
    remote = f"{root}/ckpt"
    remote_files = dataio.write_safetensors(remote, sd, max_shard_size="24KB", metadata=meta)
    names = [os.path.basename(f) for f in local_files]
    assert [f.rsplit("/", 1)[1] for f in remote_files] == names
    assert len(names) == 5 and names[-1] == "model.safetensors.index.json"  # 4 shards and the index
    assert dataio.glob(remote + "/*") == sorted(remote_files)
    for lf, rf in zip(local_files, remote_files):
        assert dataio.read(rf) == Path(lf).read_bytes(), rf  # the writer is deterministic
    index = json.loads(dataio.read(remote + "/model.safetensors.index.json"))
    assert set(index["weight_map"]) == set(sd) and index["metadata"]["run"] == "e2e"

    from_local = dataio.read_safetensors(str(local))
    from_remote = dataio.read_safetensors(remote)
    _assert_same(from_remote, from_local)
    _assert_same(from_remote, sd)
    # the same through numpy (bf16 comes through ml_dtypes where installed)
    if importlib.util.find_spec("ml_dtypes") is not None:
        np_local = dataio.read_safetensors(str(local), framework="numpy")
        np_remote = dataio.read_safetensors(remote, framework="numpy")
        assert sorted(np_remote) == sorted(np_local)
        for k in np_local:
            assert np_remote[k].dtype == np_local[k].dtype and np_remote[k].shape == np_local[k].shape, k
            assert np_remote[k].tobytes() == np_local[k].tobytes(), k
    # an independent reader agrees on every shard
    st = require("safetensors.torch")
    merged: dict[str, Any] = {}
    for rf in remote_files[:-1]:
        merged.update(st.load(dataio.read(rf)))
    _assert_same(merged, sd)


def _check_get_slice(root: str) -> None:
    import torch

    sd = _formats_state_dict()
    uri = f"{root}/single/model.safetensors"
    dataio.write_safetensors(uri, sd, metadata={"format": "pt"})
    with dataio.open_safetensors(uri) as f:
        assert sorted(f.keys()) == sorted(sd) and f.metadata() == {"format": "pt"}
        assert f.dtype("layers.0.attn.qkv") == "BF16" and f.shape("embed.weight") == [257, 64]
        for k, a, b in [("embed.weight", 10, 37), ("embed.weight", 250, 1000), ("embed.weight", 0, 257),
                        ("layers.0.attn.qkv", 95, 96), ("tokens", 999, 1000), ("ids", 3, 3), ("mask", 1, 30),
                        ("layers.0.mlp.w", 7, 21), ("layers.0.attn.bias", 17, 80)]:
            got = f.get_slice(k)[a:b]
            assert got.dtype == sd[k].dtype and torch.equal(got, sd[k][a:b]), (k, a, b)
        assert torch.equal(f.get_slice("ids")[4], sd["ids"][4])
        assert torch.equal(f.get_slice("embed.weight")[-3:], sd["embed.weight"][-3:])
        assert torch.equal(f.get_slice("embed.weight")[5:9, 2:6], sd["embed.weight"][5:9, 2:6])
        assert torch.equal(f.read("layers.1.mlp.w"), sd["layers.1.mlp.w"])
        assert f.get_slice("embed.weight").shape == [257, 64]


def _parquet_tables() -> list[Any]:
    pa = require("pyarrow")
    out = []
    for part in range(3):
        n = 300 + 50 * part
        ids = list(range(part * 1000, part * 1000 + n))
        out.append(pa.table({
            "id": pa.array(ids, pa.int64()),
            "score": pa.array([i * 0.5 if i % 7 else None for i in ids], pa.float64()),
            "name": pa.array([f"row-{i}" for i in ids], pa.string()),
            "tags": pa.array([[i % 3, i % 5] for i in ids], pa.list_(pa.int32())),
        }))
    return out


def _check_glob_and_read_parquet(root: str, tmp_path: Path) -> None:
    pq = require("pyarrow.parquet")
    layout = ["data/part-0.parquet", "data/2024/part-1.parquet", "data/2024/01/part-2.parquet"]
    others = ["data/README.md", "data/2024/part-1.parquet.crc", "other/x.parquet"]
    local = tmp_path / "pq"
    for rel, table in zip(layout, _parquet_tables()):
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, local / rel, row_group_size=100)
    for rel in others:
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_bytes(b"not the parquet you are looking for")
    for rel in layout + others:
        dataio.write(f"{root}/pq/{rel}", (local / rel).read_bytes())

    found = dataio.glob(f"{root}/pq/data/**/*.parquet")
    local_found = dataio.glob(f"{local}/data/**/*.parquet")
    assert [u.removeprefix(f"{root}/pq/") for u in found] == [p.removeprefix(f"{local}/") for p in local_found]
    assert sorted(u.removeprefix(f"{root}/pq/") for u in found) == sorted(layout)
    for uri in found:
        path = local / uri.removeprefix(f"{root}/pq/")
        want = pq.read_table(path)
        got = dataio.read_parquet(uri)
        assert got.equals(want), uri
        cols = dataio.read_parquet(uri, columns=["id", "name"], filter=c.col("id").ge(want["id"][0].as_py() + 150))
        assert cols.equals(pq.read_table(path, columns=["id", "name"], filters=[("id", ">=", want["id"][0].as_py() + 150)]))
        assert cols.num_rows == want.num_rows - 150
        rows = dataio.parquet_records(uri, columns=["id", "tags"])
        assert len(rows) == want.num_rows and rows[5] == {"id": want["id"][5].as_py(), "tags": want["tags"][5].as_py()}


def _jpegs(count: int) -> list[bytes]:
    np = require("numpy")
    image = require("PIL.Image")
    rng = np.random.default_rng(1)
    out = []
    for i in range(count):
        pixels = rng.integers(0, 255, (40 + 5 * i, 64 - 2 * i, 3), dtype=np.uint8)
        buf = io.BytesIO()
        image.fromarray(pixels).save(buf, format="JPEG", quality=85)
        out.append(buf.getvalue())
    return out


def _check_image_pipeline(root: str, tmp_path: Path) -> None:
    np = require("numpy")
    prefix = f"{root}/images"
    local, remote = [], []
    for i, data in enumerate(_jpegs(12)):
        path = tmp_path / f"{i:02d}.jpg"
        path.write_bytes(data)
        dataio.write(f"{prefix}/{i:02d}.jpg", data)
        local.append({"key": f"k{i}", "image": str(path)})
        remote.append({"key": f"k{i}", "image": f"{prefix}/{i:02d}.jpg"})
    assert dataio.glob(prefix + "/*.jpg") == [r["image"] for r in remote]
    assert dataio.glob(root + "/**/*.jpg") == [r["image"] for r in remote]
    keys_local, from_local = pipeline_images(local)
    keys_remote, from_remote = pipeline_images(remote)
    assert keys_remote == keys_local == [r["key"] for r in remote]
    assert from_remote.shape == (12, 3, 32, 32)
    np.testing.assert_array_equal(from_remote, from_local)


class FormatsConformance:
    """Safetensors checkpoints, ``get_slice``, parquet and the image pipeline
    on a backend.

    Subclass and give a ``root`` fixture returning an empty, writable prefix
    (no trailing slash), e.g. ``f"s3://{bucket}/{uuid.uuid4().hex}"``."""

    @pytest.fixture
    def root(self) -> str:  # pragma: no cover - subclasses override
        raise pytest.UsageError("define a root fixture returning an empty writable prefix")

    def test_a_sharded_checkpoint_reads_back_like_the_local_one(self, root: str, tmp_path: Path) -> None:
        _check_sharded_checkpoint(root, tmp_path)

    def test_get_slice_reads_rows_of_a_remote_tensor(self, root: str) -> None:
        _check_get_slice(root)

    def test_glob_and_read_parquet_match_pyarrow_on_local_files(self, root: str, tmp_path: Path) -> None:
        _check_glob_and_read_parquet(root, tmp_path)

    def test_a_missing_checkpoint_is_file_not_found(self, root: str) -> None:
        with pytest.raises(FileNotFoundError, match="nothing-here"):
            dataio.read_safetensors(f"{root}/nothing-here")

    def test_the_image_pipeline_reads_remote_uris_like_local_files(self, root: str, tmp_path: Path) -> None:
        _check_image_pipeline(root, tmp_path)

    def test_a_missing_image_in_a_pipeline_is_a_row_error_naming_the_uri(self, root: str) -> None:
        uri = f"{root}/missing.jpg"
        pipe = dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize(h=8, w=8), dataio.batch(1))
        with pytest.raises(dataio.errors.DataioError) as info:
            with pipe.bind([{"key": "m", "image": uri}]).run("torch") as loader:
                list(loader)
        assert uri in str(info.value)
