"""Format helpers: interop with the reference libraries both ways, zero-copy
local reads, and typed errors (never a crash) on damaged files."""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dataio
from dataio.errors import CorruptDataError

# -- safetensors ---------------------------------------------------------------

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2]


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor, comparable for every dtype (float8 included)."""
    return t.contiguous().reshape(-1).view(torch.uint8)


def _state(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for i, dt in enumerate(ALL_DTYPES):
        base = torch.randn(5, 7, generator=g) * 10
        sd[f"t{i}.{str(dt).split('.')[-1]}"] = base.to(dt) if dt != torch.bool else base > 0
    sd["scalar"] = torch.tensor(3.5)
    sd["empty"] = torch.zeros(0, 4)
    return sd


def test_single_file_round_trip_all_dtypes_and_reference_reader(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    sd = _state()
    path = str(tmp_path / "m.safetensors")
    dataio.write_safetensors(path, sd, metadata={"format": "pt"})
    ours = dataio.read_safetensors(path)
    ref = load_file(path)
    for k, v in sd.items():
        assert ours[k].dtype == v.dtype and ours[k].shape == v.shape, k
        assert torch.equal(_bits(ours[k]), _bits(v)), k
        assert torch.equal(_bits(ref[k]), _bits(v)), k
    with dataio.open_safetensors(path) as st_:
        assert st_.metadata() == {"format": "pt"}
        assert sorted(st_.keys()) == sorted(sd)


def test_reading_files_written_by_the_reference_library(tmp_path: Path) -> None:
    from safetensors.numpy import save_file as save_np
    from safetensors.torch import save_file

    sd = {"a": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(2, dtype=torch.bfloat16)}
    save_file(sd, tmp_path / "ref.safetensors", metadata={"k": "v"})
    got = dataio.read_safetensors(str(tmp_path / "ref.safetensors"))
    assert torch.equal(got["a"], sd["a"]) and torch.equal(got["b"], sd["b"])
    save_np({"x": np.arange(6, dtype=np.int16)}, str(tmp_path / "np.safetensors"))
    assert np.array_equal(dataio.read_safetensors(str(tmp_path / "np.safetensors"), framework="numpy")["x"], np.arange(6, dtype=np.int16))


def test_huggingface_sharded_checkpoints_both_ways(tmp_path: Path) -> None:
    hub = pytest.importorskip("huggingface_hub")
    sd = {f"layer.{i}.weight": torch.randn(128, 64) for i in range(8)}
    # Ours -> the Hugging Face loader.
    written = dataio.write_safetensors(str(tmp_path / "ours") + "/", sd, max_shard_size="70KB", metadata={"format": "pt"})
    index = json.loads((tmp_path / "ours" / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == sum(t.numel() * 4 for t in sd.values())
    assert set(index["weight_map"]) == set(sd) and len(written) == len(set(index["weight_map"].values())) + 1
    assert all(Path(w).name.startswith("model-") or w.endswith("index.json") for w in written)
    model = torch.nn.Module()
    for k, v in sd.items():
        model.register_buffer(k.replace(".", "_"), torch.zeros_like(v))
    from safetensors.torch import load_file

    merged = {}
    for f in set(index["weight_map"].values()):
        merged.update(load_file(tmp_path / "ours" / f))
    assert all(torch.equal(merged[k], v) for k, v in sd.items())
    # The Hugging Face saver -> ours.
    (tmp_path / "hf").mkdir()
    hub.save_torch_state_dict(sd, tmp_path / "hf", max_shard_size="70KB")
    got = dataio.read_safetensors(str(tmp_path / "hf"))
    assert set(got) == set(sd) and all(torch.equal(got[k], v) for k, v in sd.items())


def test_local_reads_are_zero_copy_views(tmp_path: Path) -> None:
    path = str(tmp_path / "m.safetensors")
    dataio.write_safetensors(path, {"a": torch.arange(1000, dtype=torch.float32), "b": torch.ones(10)})
    t1 = dataio.read_safetensors(path)["a"]
    with dataio.open_safetensors(path) as f:
        base = f._torch_storage().data_ptr()
        t2 = f.read(key="a")
        assert t2.untyped_storage().data_ptr() == base, "a view of the file map, not a copy"
    t1[0] = 42.0  # copy-on-write: the file is untouched
    assert dataio.read_safetensors(path)["a"][0].item() == 0.0
    n = dataio.read_safetensors(path, framework="numpy")["a"]
    assert isinstance(n.base, np.memmap) or isinstance(n, np.memmap) or n.base is not None


def test_slices_read_only_what_they_need(tmp_path: Path) -> None:
    path = str(tmp_path / "m.safetensors")
    x = torch.arange(40, dtype=torch.int64).reshape(10, 4)
    dataio.write_safetensors(path, {"x": x})
    with dataio.open_safetensors("file://" + path) as f:
        assert torch.equal(f.get_slice("x")[2:5], x[2:5])
        assert torch.equal(f.get_slice("x")[7], x[7])
        assert torch.equal(f.get_slice("x")[3:4, 1:3], x[3:4, 1:3])


def test_remote_style_reads_go_through_ranged_reads(tmp_path: Path) -> None:
    # mem:// is a remote-style backend (no local path): ranged reads into tensors.
    path = str(tmp_path / "m.safetensors")
    sd = {"a": torch.randn(33, 7), "b": torch.arange(5)}
    dataio.write_safetensors(path, sd)
    dataio.write("mem://ckpt/m.safetensors", Path(path).read_bytes())
    got = dataio.read_safetensors("mem://ckpt/m.safetensors")
    assert all(torch.equal(got[k], v) for k, v in sd.items())
    with dataio.open_safetensors("mem://ckpt/m.safetensors") as f:
        assert torch.equal(f.get_slice("a")[10:20], sd["a"][10:20])


def _header_file(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x01\x02", "too short"),
        (_header_file({}, length=10**12), "limit"),
        (_header_file({}, length=500), "truncated"),
        (_header_file(b"not json"), "JSON"),
        (_header_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4), "outside"),
        (_header_file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8), "needs 12 bytes"),
        (_header_file({"a": {"dtype": "Q9", "shape": [1], "data_offsets": [0, 1]}}, b"\0"), "unknown dtype"),
        (
            _header_file({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, b"\0" * 6),
            "overlaps",
        ),
        (_header_file({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 5), "trailing"),
    ],
)
def test_damaged_safetensors_give_typed_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(CorruptDataError, match=message) as info:
        dataio.read_safetensors(str(path))
    assert str(path) in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_safetensors_parser_fuzz(tmp_path: Path, data: st.DataObject) -> None:
    good = _header_file({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, "b": {"dtype": "I8", "shape": [3], "data_offsets": [16, 19]}}, b"\x01" * 19)
    blob = bytearray(good)
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    blob = blob[: data.draw(st.integers(0, len(blob)))]
    path = tmp_path / "fuzz.safetensors"
    path.write_bytes(bytes(blob))
    try:
        out = dataio.read_safetensors(str(path))
    except (CorruptDataError, dataio.errors.InvalidArgumentError):
        return
    for t in out.values():
        t.sum()  # every view must be inside the file


def test_device_placement_without_cuda_is_refused_clearly(tmp_path: Path) -> None:
    path = str(tmp_path / "m.safetensors")
    dataio.write_safetensors(path, {"a": torch.ones(2)})
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU; the device path is covered by the GPU test module")
    with pytest.raises(dataio.errors.UnsupportedOperationError, match="CUDA"):
        dataio.read_safetensors(path, device="cuda:0")
    info = dataio.gds_info()
    assert dataio.gds_available() is False and info["reason"]


def test_atomic_writes_leave_old_checkpoints_intact_on_error(tmp_path: Path) -> None:
    d = str(tmp_path / "ck") + "/"
    dataio.write_safetensors(d, {"a": torch.ones(3)})
    with pytest.raises(dataio.errors.InvalidArgumentError):
        dataio.write_safetensors(d, {"a": torch.ones(3), "bad": object()})
    assert torch.equal(dataio.read_safetensors(d)["a"], torch.ones(3))


# -- numpy ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["u1", "i2", "<i4", ">i8", "f2", "<f4", ">f8", "?", "c8", "U3"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_read_numpy_matches_numpy(tmp_path: Path, dtype: str, order: str) -> None:
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype, order=order)
    np.save(tmp_path / "a.npy", a)
    got = dataio.read_numpy(str(tmp_path / "a.npy"))
    assert got.dtype == a.dtype and np.array_equal(got, a)
    dataio.write("mem://np/a.npy", (tmp_path / "a.npy").read_bytes())
    assert np.array_equal(dataio.read_numpy("mem://np/a.npy"), a)


def test_read_numpy_is_a_copy_on_write_map_and_reads_npz(tmp_path: Path) -> None:
    a = np.arange(1000, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    m = dataio.read_numpy(str(tmp_path / "a.npy"))
    assert isinstance(m, np.memmap)
    m[0] = 99
    assert np.load(tmp_path / "a.npy")[0] == 0
    np.savez(tmp_path / "z.npz", x=a, y=np.ones(2))
    z = dataio.read_numpy(str(tmp_path / "z.npz"))
    assert set(z) == {"x", "y"} and np.array_equal(z["x"], a)


def test_damaged_npy_is_a_typed_error(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(100))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:90])
    with pytest.raises(CorruptDataError, match="t.npy"):
        dataio.read_numpy(str(tmp_path / "t.npy"), mmap=False)
    (tmp_path / "g.npy").write_bytes(b"garbage")
    with pytest.raises(CorruptDataError):
        dataio.read_numpy(str(tmp_path / "g.npy"))


@pytest.mark.parametrize("mmap", [True, False])
def test_every_damaged_npy_header_is_a_typed_error(tmp_path: Path, mmap: bool) -> None:
    """Bytes of the header dict damaged one at a time (numpy's parser raises
    SyntaxError, tokenize.TokenError, ValueError... on them): a typed error
    naming the file, or an array when the damage left a valid header."""
    rng = np.random.default_rng(5)
    np.save(tmp_path / "a.npy", np.arange(24, dtype="<f4").reshape(2, 3, 4))
    raw = (tmp_path / "a.npy").read_bytes()
    header_end = 10 + int.from_bytes(raw[8:10], "little")
    kinds: set[str] = set()
    for i in range(300):
        damaged = bytearray(raw)
        for at in rng.integers(10, header_end, size=1 + i % 3):
            damaged[at] = int(rng.choice([0, 0x22, 0x27, 0x28, 0x29, 0x2C, 0x7B, 0x7D, 0x5C, 0x0A, rng.integers(0, 256)]))
        path = tmp_path / f"d{i}.npy"
        path.write_bytes(bytes(damaged))
        try:
            got = dataio.read_numpy(str(path), mmap=mmap)
        except CorruptDataError as e:
            assert f"d{i}.npy" in str(e)
            kinds.add(type(e.__cause__).__name__)
        else:
            assert isinstance(got, np.ndarray)
    # The damage reached numpy's parser in more than one way.
    assert len(kinds) >= 2, kinds


# -- images --------------------------------------------------------------------


def test_read_image_matches_pil(tmp_path: Path) -> None:
    from PIL import Image

    yy, xx = np.mgrid[0:60, 0:80]
    arr = np.stack([xx * 3, yy * 4, (xx + yy) * 2], -1).astype(np.uint8)
    Image.fromarray(arr).save(tmp_path / "a.png")
    got = dataio.read_image(str(tmp_path / "a.png"))
    assert got.shape == (60, 80, 3) and np.array_equal(got, arr)
    gray = dataio.read_image(str(tmp_path / "a.png"), mode="gray")[..., 0]
    assert np.abs(gray.astype(int) - np.asarray(Image.open(tmp_path / "a.png").convert("L"), dtype=int)).max() <= 1
    (tmp_path / "bad.png").write_bytes(b"nope")
    with pytest.raises(dataio.errors.DecodeError, match="bad.png"):
        dataio.read_image(str(tmp_path / "bad.png"))


# -- parquet -------------------------------------------------------------------


def test_parquet_read_scan_and_records(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"key": [f"k{i}" for i in range(100)], "height": list(range(0, 1000, 10)), "label": [i % 3 for i in range(100)]})
    pq.write_table(table, tmp_path / "s.parquet", row_group_size=10)
    uri = str(tmp_path / "s.parquet")
    cols = dataio.read_parquet(uri, columns=["key", "height"])
    assert cols.column_names == ["key", "height"] and cols.num_rows == 100
    rows = dataio.scan_parquet(uri).filter(lambda r: r["height"] > 512).collect()
    assert [r["key"] for r in rows] == [f"k{i}" for i in range(52, 100)]
    pruned = dataio.scan_parquet(uri).filter(dataio.cond.col("height").gt(512)).select("key").collect()
    assert [r["key"] for r in pruned] == [f"k{i}" for i in range(52, 100)]
    dataio.write("mem://pq/s.parquet", (tmp_path / "s.parquet").read_bytes())
    assert dataio.read_parquet("mem://pq/s.parquet").equals(pq.read_table(uri))
    # As a pipeline record source: columns are handed over per chunk.
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.batch(16))
    recs = dataio.parquet_records(uri, columns=["key", "label"], key="key")
    seen = []
    for b in pipe.bind(recs).run("numpy", seed=3):
        seen += list(zip(b.keys, b["label"].tolist()))
    assert sorted(seen) == sorted((f"k{i}", i % 3) for i in range(100))


# -- TFRecord ------------------------------------------------------------------


def test_tfrecord_interop_with_the_tfrecord_package(tmp_path: Path) -> None:
    tfrecord = pytest.importorskip("tfrecord")
    path = str(tmp_path / "a.tfrecord")
    w = tfrecord.TFRecordWriter(path)
    for i in range(20):
        w.write({"image": (f"img{i}".encode(), "byte"), "label": (i, "int"), "score": ([0.5, float(i)], "float")})
    w.close()
    got = list(dataio.iter_tfrecord(path))
    assert len(got) == 20
    assert got[3]["image"] == [b"img3"] and got[3]["label"] == [3] and got[3]["score"] == [0.5, 3.0]
    raw = list(dataio.iter_tfrecord(path, raw=True))
    assert all(isinstance(r, bytes) for r in raw)
    # Ours -> theirs.
    ours = str(tmp_path / "b.tfrecord")
    dataio.write_tfrecord(ours, [{"image": b"x" * i, "label": i, "w": [1.5, 2.5]} for i in range(5)])
    back = list(tfrecord.tfrecord_loader(ours, None, {"image": "byte", "label": "int", "w": "float"}))
    assert [int(b["label"][0]) for b in back] == list(range(5))
    assert bytes(back[4]["image"]) == b"xxxx" and list(back[1]["w"]) == [1.5, 2.5]


def test_tfrecord_gzip_and_pipeline_source(tmp_path: Path) -> None:
    path = str(tmp_path / "a.tfrecord.gz")
    dataio.write_tfrecord(path, [{"label": i, "payload": bytes([i]) * 3} for i in range(10)], gzip_compress=True)
    assert [e["label"] for e in dataio.iter_tfrecord(path)] == [[i] for i in range(10)]
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.slot("payload").decode_bytes(), dataio.batch(4))
    labels = [int(v) for b in pipe.bind(dataio.tfrecord_records(path)).run("numpy") for v in b["label"]]
    assert labels == list(range(10))


def test_damaged_tfrecords_are_typed_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    dataio.write_tfrecord(str(path), [{"label": i} for i in range(5)])
    raw = bytearray(path.read_bytes())
    (tmp_path / "trunc.tfrecord").write_bytes(bytes(raw[:-7]))
    with pytest.raises(CorruptDataError, match="truncated"):
        list(dataio.iter_tfrecord(str(tmp_path / "trunc.tfrecord")))
    raw[20] ^= 0xFF
    (tmp_path / "crc.tfrecord").write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="CRC") as info:
        list(dataio.iter_tfrecord(str(tmp_path / "crc.tfrecord")))
    assert "crc.tfrecord" in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=200), check=st.booleans())
def test_tfrecord_parser_fuzz(tmp_path: Path, blob: bytes, check: bool) -> None:
    path = tmp_path / "f.tfrecord"
    # Valid framing around random payloads exercises the Example parser.
    dataio.write_tfrecord(str(path), [blob])
    try:
        list(dataio.iter_tfrecord(str(path), check_crc=check))
    except CorruptDataError:
        pass
    path.write_bytes(blob)
    try:
        list(dataio.iter_tfrecord(str(path), check_crc=check))
    except CorruptDataError:
        pass


# -- tar shards ----------------------------------------------------------------


def _shard(path: Path, samples: int, gz: bool = False) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for i in range(samples):
            for ext, payload in (("cls", str(i % 4).encode()), ("txt", f"sample {i}".encode())):
                info = tarfile.TarInfo(f"part/{i:04d}.{ext}")
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
    data = raw.getvalue()
    path.write_bytes(gzip.compress(data) if gz else data)


def test_tar_shards_as_webdataset_records(tmp_path: Path) -> None:
    _shard(tmp_path / "a.tar", 6)
    _shard(tmp_path / "b.tar.gz", 4, gz=True)
    recs = list(dataio.tar_records([str(tmp_path / "a.tar"), str(tmp_path / "b.tar.gz")]))
    assert len(recs) == 10
    assert recs[2]["key"] == "part/0002" and recs[2]["cls"] == b"2" and recs[2]["txt"] == b"sample 2"
    pipe = dataio.pipeline(dataio.slot("txt").decode_bytes(), dataio.batch(5))
    keys = [k for b in pipe.bind(dataio.tar_records(str(tmp_path / "a.tar"))).run("numpy") for k in b.keys]
    assert keys == [f"part/{i:04d}" for i in range(6)]
