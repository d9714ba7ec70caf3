"""The conformance suites, shipped so every plugin can run them against its
own server.

Subclass :class:`BackendConformance` in a test module and give it a
``base_uri`` fixture returning an empty, writable prefix ending in ``/``::

    import pytest
    from dataio.testing import BackendConformance

    class TestMyStore(BackendConformance):
        @pytest.fixture
        def base_uri(self, my_server):
            return f"mystore://bucket/{uuid.uuid4().hex}/"

The other suites follow the same pattern: :class:`PluginConformance` (the
plugin is found through its entry point and reports honestly: class
attributes, no fixture), :class:`FormatsConformance` (the format helpers
and the image pipeline on the plugin's scheme: a ``root`` fixture) and
:class:`ObjectStoreConformance` (typed errors, secrets kept out of every
message, tuning options: for plugins built on
:class:`dataio.plugins.ObjectStorePlugin`).

One skip policy everywhere: a test is skipped only when the backend
*declares* it cannot do the thing (its capabilities lack ``write``,
``delete``, ``list`` or ``ranged_read``), or when hardware is absent (a GPU,
an RDMA NIC), and the skip message says so. A test dependency or emulator the
package declares is required: :func:`require` imports one and fails the test
when it is missing, since a missing one is a broken environment, not a
reason to pass.

:class:`PythonBackend` documents the methods a pure-Python backend provides.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.metadata
import importlib.util
import io
import json
import os
import tarfile
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pytest

import dataio
from dataio import _native
from dataio import cond as c
from dataio.errors import OutOfRangeError

if TYPE_CHECKING:
    from dataio.plugins import ObjectStorePlugin

__all__ = [
    "BackendConformance",
    "FormatsConformance",
    "ObjectStoreConformance",
    "PluginConformance",
    "PythonBackend",
    "PythonWriter",
    "QUICK_RETRIES",
    "assert_no_secret",
    "pipeline_images",
    "require",
]


def require(module: str, why: str = "") -> Any:
    """Imports ``module``, a test dependency the package declares (its test
    group, the core's test group). When it is missing the test fails, saying
    what to install: only absent hardware may skip a test, never a missing
    dependency or emulator."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f" ({why})" if why else ""
        pytest.fail(
            f"{module} is a declared test dependency{reason} but cannot be imported: {exc}; "
            "install the package's test group (noxfile.py does)",
            pytrace=False,
        )


#: Tuning for tests against an emulator that fails on purpose: a few quick
#: retries, so a test of a failing server takes seconds, not minutes.
QUICK_RETRIES: dict[str, Any] = {"max_retries": 2, "retry_timeout": 10, "backoff_initial": 0.05, "backoff_max": 0.2}


def assert_no_secret(secrets: Iterable[str], *things: object) -> None:
    """Asserts that no secret shows in the str or repr of any of ``things``
    (for an exception, of its cause and context too)."""
    texts = []
    for thing in things:
        texts += [str(thing), repr(thing)]
        if isinstance(thing, BaseException):
            for linked in (thing.__cause__, thing.__context__):
                if linked is not None:
                    texts += [str(linked), repr(linked)]
    for secret in secrets:
        for text in texts:
            assert secret not in text, "a secret shows in a message or repr"


@runtime_checkable
class PythonWriter(Protocol):
    def write(self, data: bytes) -> None: ...
    def commit(self) -> str | None:
        """Make the object visible atomically; return its etag."""
    def abort(self) -> None:
        """Discard everything written; nothing becomes visible."""


@runtime_checkable
class PythonBackend(Protocol):
    """What a pure-Python backend implements. URIs are full (``mem://b/k``).

    Raise ``FileNotFoundError`` for missing objects, ``PermissionError`` for
    refusals, ``IsADirectoryError`` for prefixes read as files, ``TimeoutError``
    and ``ConnectionError`` for a store that did not answer, and
    ``ValueError`` for bad arguments; dataio maps them into its tree (each
    to the dataio class that also derives from that built-in). Optional:
    ``name`` (str), ``capabilities`` (iterable of ``"write"``, ``"delete"``,
    ``"list"``, ``"ranged_read"``), ``read_all(uri)``.
    """

    def head(self, uri: str) -> Any:
        """A mapping (or object) with ``size`` and optionally ``mtime``, ``etag``, ``is_dir``."""
    def read_range(self, uri: str, offset: int, size: int) -> bytes: ...
    def open_writer(self, uri: str) -> PythonWriter: ...
    def list(self, prefix: str, recursive: bool) -> Iterable[Any]:
        """Direct children (directories with ``is_dir=True``) or, when recursive, every object below."""
    def exists(self, uri: str) -> bool: ...
    def delete(self, uri: str) -> None: ...


def _payload(n: int, seed: int = 7) -> bytes:
    return bytes((i * 31 + seed) % 251 for i in range(n))


class BackendConformance:
    """The behaviour every backend must show. Needs a ``base_uri`` fixture."""

    @pytest.fixture
    def base_uri(self) -> str:  # pragma: no cover - subclasses override
        raise pytest.UsageError("define a base_uri fixture returning an empty writable prefix ending in '/'")

    @pytest.fixture
    def caps(self, base_uri: str) -> set[str]:
        _, caps = _native.backend_info(base_uri)
        return set(caps)

    def need(self, caps: set[str], what: str) -> None:
        if what not in caps:
            pytest.skip(f"the backend declares no {what!r} support")

    @pytest.fixture
    def obj(self, base_uri: str, caps: set[str]) -> tuple[str, bytes]:
        self.need(caps, "write")
        uri = base_uri + "dir/object.bin"
        data = _payload(10_000)
        dataio.write(uri, data)
        return uri, data

    # -- writes and whole reads ---------------------------------------------

    def test_write_returns_an_etag_and_reads_back(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "a.bin"
        data = _payload(1234)
        etag = dataio.write(uri, data)
        assert isinstance(etag, str)
        assert dataio.read(uri) == data
        assert dataio.reader(uri).read_all() == data

    def test_overwrite_replaces_the_content(self, obj: tuple[str, bytes]) -> None:
        uri, _ = obj
        dataio.write(uri, b"second version")
        assert dataio.read(uri) == b"second version"

    def test_empty_object(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "empty"
        dataio.write(uri, b"")
        assert dataio.read(uri) == b""
        assert dataio.head(uri).size == 0

    def test_any_buffer_can_be_written(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        np = require("numpy")
        arr = np.arange(100, dtype=np.float32)
        dataio.write(base_uri + "arr", arr)
        dataio.write(base_uri + "mv", memoryview(b"view"))
        dataio.write(base_uri + "ba", bytearray(b"ba"))
        assert dataio.read(base_uri + "arr") == arr.tobytes()
        assert dataio.read(base_uri + "mv") == b"view"
        assert dataio.read(base_uri + "ba") == b"ba"

    def test_str_data_is_refused(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        with pytest.raises(TypeError, match="str"):
            dataio.write(base_uri + "s", "text")  # type: ignore[arg-type]

    def test_names_with_spaces_and_unicode(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "with space/ünï código.txt"
        dataio.write(uri, b"x")
        assert dataio.read(uri) == b"x"
        assert uri in dataio.ls(base_uri + "with space/")

    def test_large_object_round_trip(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        data = _payload(3 * 1024 * 1024 + 17, seed=3)
        uri = base_uri + "large.bin"
        dataio.write(uri, data)
        assert dataio.head(uri).size == len(data)
        assert dataio.read(uri) == data

    # -- metadata -----------------------------------------------------------

    def test_head_reports_size(self, obj: tuple[str, bytes]) -> None:
        uri, data = obj
        meta = dataio.head(uri)
        assert isinstance(meta, dataio.ObjectMeta)
        assert meta.size == len(data)
        assert not meta.is_dir

    def test_missing_objects_raise_file_not_found_naming_the_uri(self, base_uri: str) -> None:
        missing = base_uri + "missing/nothing.bin"
        for call in (dataio.head, dataio.read, lambda u: dataio.reader(u).read_all()):
            with pytest.raises(FileNotFoundError) as info:
                call(missing)
            assert "missing/nothing.bin" in str(info.value)
            assert isinstance(info.value, dataio.DataioError)

    def test_exists(self, obj: tuple[str, bytes], base_uri: str) -> None:
        uri, _ = obj
        assert dataio.exists(uri)
        assert not dataio.exists(base_uri + "nope")

    # -- ranged reads -------------------------------------------------------

    def test_ranged_reads_are_exact(self, obj: tuple[str, bytes], caps: set[str]) -> None:
        self.need(caps, "ranged_read")
        uri, data = obj
        assert dataio.read(uri, offset=100, size=50) == data[100:150]
        assert dataio.read(uri, offset=9990) == data[9990:]
        assert dataio.read(uri, offset=0, size=0) == b""
        r = dataio.reader(uri)
        assert r.read(10, 5) == data[10:15]
        assert r.size == len(data)

    def test_ranges_beyond_the_end_are_refused(self, obj: tuple[str, bytes], caps: set[str]) -> None:
        self.need(caps, "ranged_read")
        uri, data = obj
        with pytest.raises(OutOfRangeError):
            dataio.read(uri, offset=len(data) + 1)
        with pytest.raises(ValueError):
            dataio.read(uri, offset=len(data) - 10, size=20)
        with pytest.raises(ValueError, match=">= 0"):
            dataio.read(uri, offset=-1)
        with pytest.raises(ValueError, match=">= 0"):
            dataio.read(uri, size=-5)

    # -- fetch_into ---------------------------------------------------------

    def test_fetch_into_fills_caller_buffers(self, obj: tuple[str, bytes]) -> None:
        uri, data = obj
        buf = bytearray(len(data) + 100)
        n = dataio.fetch_into(uri, buf)
        assert n == len(data)
        assert bytes(buf[:n]) == data
        np = require("numpy")
        arr = np.zeros(len(data), dtype=np.uint8)
        assert dataio.fetch_into(uri, arr) == len(data)
        assert arr.tobytes() == data
        part = bytearray(10)
        assert dataio.fetch_into(uri, part, offset=20, size=10) == 10
        assert bytes(part) == data[20:30]

    def test_fetch_into_refuses_small_and_read_only_buffers(self, obj: tuple[str, bytes]) -> None:
        uri, data = obj
        with pytest.raises(ValueError, match="buffer"):
            dataio.fetch_into(uri, bytearray(10))
        with pytest.raises(ValueError, match="read-only"):
            dataio.fetch_into(uri, bytes(len(data)))

    # -- streaming writes ---------------------------------------------------

    def test_streaming_write_is_invisible_until_close(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "stream.bin"
        chunks = [_payload(100_000, seed=i) for i in range(5)]
        with dataio.writer(uri) as w:
            w.write(chunks[0])
            assert not dataio.exists(uri)
            w.write_chunks(iter(chunks[1:]))
        assert w.closed and w.bytes_written == 500_000
        assert dataio.read(uri) == b"".join(chunks)

    def test_an_exception_in_the_writer_block_leaves_nothing(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "aborted.bin"
        with pytest.raises(RuntimeError):
            with dataio.writer(uri) as w:
                w.write(b"partial")
                raise RuntimeError("boom")
        assert not dataio.exists(uri)

    def test_a_failing_chunk_source_aborts_the_write(self, obj: tuple[str, bytes]) -> None:
        uri, data = obj

        def chunks() -> Iterable[bytes]:
            yield b"new start"
            raise OSError("source died")

        with pytest.raises(OSError, match="source died"):
            with dataio.writer(uri) as w:
                w.write_chunks(chunks())
        assert dataio.read(uri) == data, "the old object must survive a failed overwrite"

    def test_closed_writer_refuses_more_data(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        w = dataio.writer(base_uri + "w")
        w.write(b"a")
        w.close()
        with pytest.raises(ValueError, match="closed"):
            w.write(b"b")

    # -- listing ------------------------------------------------------------

    def test_ls_lists_direct_children(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        self.need(caps, "list")
        for name in ("x/1.txt", "x/2.txt", "x/sub/3.txt"):
            dataio.write(base_uri + name, b"-")
        names = dataio.ls(base_uri + "x/")
        assert [n.rstrip("/").rsplit("/", 1)[-1] for n in names] == ["1.txt", "2.txt", "sub"]
        detail = {m.uri.rstrip("/").rsplit("/", 1)[-1]: m for m in dataio.ls(base_uri + "x/", detail=True)}
        assert detail["sub"].is_dir and not detail["1.txt"].is_dir
        assert detail["1.txt"].size == 1
        assert len(dataio.ls(base_uri + "x/", recursive=True)) == 3

    def test_glob(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        self.need(caps, "list")
        for name in ("g/a.st", "g/b.bin", "g/deep/c.st", "g/deep/er/d.st"):
            dataio.write(base_uri + name, b"-")
        assert dataio.glob(base_uri + "g/*.st") == [base_uri + "g/a.st"]
        assert dataio.glob(base_uri + "g/**/*.st") == [base_uri + n for n in ("g/a.st", "g/deep/c.st", "g/deep/er/d.st")]
        assert dataio.glob(base_uri + "g/*/c.st") == [base_uri + "g/deep/c.st"]
        assert dataio.glob(base_uri + "nothing/**/*.st") == []
        metas = dataio.glob(base_uri + "g/*.bin", detail=True)
        assert [m.size for m in metas] == [1]

    # -- delete -------------------------------------------------------------

    def test_delete(self, obj: tuple[str, bytes], base_uri: str, caps: set[str]) -> None:
        self.need(caps, "delete")
        uri, _ = obj
        dataio.delete(uri)
        assert not dataio.exists(uri)
        with pytest.raises(FileNotFoundError):
            dataio.delete(base_uri + "never-was")

    # -- readers ------------------------------------------------------------

    def test_reader_gunzip_and_tar_entries(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tf:
            for name, payload in (("0001.jpg", b"jpeg-bytes"), ("0001.cls", b"3")):
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
        uri = base_uri + "shard.tar.gz"
        dataio.write(uri, gzip.compress(raw.getvalue()))
        src = dataio.reader(uri)
        assert src.gunzip().tar_entry("0001.jpg").read_all() == b"jpeg-bytes"
        assert [n for n, _ in src.gunzip().tar_entries()] == ["0001.jpg", "0001.cls"]
        with pytest.raises(FileNotFoundError, match="0002.jpg"):
            src.gunzip().tar_entry("0002.jpg")

    def test_truncated_gzip_is_a_typed_error(self, base_uri: str, caps: set[str]) -> None:
        self.need(caps, "write")
        uri = base_uri + "bad.gz"
        dataio.write(uri, gzip.compress(_payload(50_000))[:200])
        with pytest.raises(dataio.errors.CorruptDataError, match="truncated") as info:
            dataio.reader(uri).gunzip()
        assert uri in str(info.value)

    def test_reader_chunks_and_buffer_protocol(self, obj: tuple[str, bytes]) -> None:
        uri, data = obj
        r = dataio.reader(uri)
        assert b"".join(r.iter_chunks(3000)) == data
        assert [len(c) for c in r.iter_chunks(3000)] == [3000, 3000, 3000, 1000]
        assert bytes(memoryview(r)) == data


# -- formats over a backend ----------------------------------------------------
#
# The format helpers end to end on any scheme: the same checks every cloud
# plugin runs against its emulator. Needs torch, pyarrow, safetensors and
# pillow (the core's test group).

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


def pipeline_images(records: Sequence[dict[str, str]]) -> tuple[list[str], Any]:
    """Runs the image pipeline the conformance suites use (decode, resize the
    short side to 32, center-crop 32x32, normalize, batches of 5) over
    ``records`` (``key`` and ``image`` URI) and returns the keys and the
    images as one numpy array, in delivery order."""
    torch = require("torch")
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(32).center_crop(h=32, w=32).normalize("imagenet"),
        dataio.batch(5),
    )
    keys: list[str] = []
    tensors = []
    with pipe.bind(list(records)).run("torch", concurrency=8) as loader:
        for batch in loader:
            keys.extend(batch.keys)
            tensors.append(batch["image"].clone())
    return keys, torch.cat(tensors).numpy()


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


# -- how a plugin presents itself ------------------------------------------------


class PluginConformance:
    """A plugin is found through its entry point, registers what it declares
    under its own name, and reports itself honestly. Set the class
    attributes; no fixture is needed.

    ``entry_point`` is the name under ``[project.entry-points.dataio]``,
    ``package`` the distribution (also its report row's name); ``schemes``,
    ``device_types`` and ``namespaces`` are what it registers. Override
    :meth:`expected_status` where the status depends on the host (a plugin
    for hardware reports ``"unavailable"``, with the reason, without it)."""

    entry_point: str
    package: str
    schemes: Sequence[str] = ()
    device_types: Sequence[str] = ()
    namespaces: Sequence[str] = ()

    def expected_status(self) -> str:
        return "ok"

    def _row(self) -> dict[str, Any]:
        from dataio.capabilities import report

        rows = [p for p in report()["plugins"] if p["name"] == self.package]
        assert len(rows) == 1, f"{self.package} must have exactly one row in the capability report, has {len(rows)}"
        return rows[0]

    def test_registered_through_the_entry_point(self) -> None:
        from dataio.plugins import list_plugins

        info = {p.name: p for p in list_plugins()}[self.entry_point]
        assert info.status == "loaded", info.detail
        assert info.package == self.package
        assert info.version == importlib.metadata.version(self.package)

    def test_registers_what_it_declares_under_its_own_name(self) -> None:
        from dataio.plugins import list_backends, list_device_readers, list_namespaces

        for registered, declared in (
            (list_backends(), self.schemes),
            (list_device_readers(), self.device_types),
            (list_namespaces(), self.namespaces),
        ):
            mine = sorted(name for name, reg in registered.items() if reg.plugin == self.entry_point)
            assert mine == sorted(declared)

    def test_reports_its_row(self) -> None:
        row = self._row()
        assert row["status"] == self.expected_status(), row
        assert row["schemes"] == list(self.schemes)
        if row["status"] != "ok":
            assert row["detail"], "a plugin that is not ok must say why"


# -- plugins on the shared object-store backend ---------------------------------------


class ObjectStoreConformance(BackendConformance, FormatsConformance):
    """What every plugin built on :class:`dataio.plugins.ObjectStorePlugin`
    shows against its emulator: the backend and formats suites (under
    ``root``), a native backend, typed errors that name scheme, bucket and
    key, secrets in no message, repr or report row, credentials the store
    refuses as ``PermissionError``, and checked tuning options.

    Set the class attributes ``plugin`` (the plugin's ``ObjectStorePlugin``),
    ``credentials`` (keyword arguments for
    ``dataio.configure_credentials(scheme, ...)`` that the emulator accepts)
    and ``secrets`` (the strings among them that must never show), and give
    two fixtures:

    * ``root`` — an empty prefix in an existing bucket (no trailing slash),
      with the emulator configured;
    * ``refused_credentials`` — ``(root, secrets)``: a prefix on a server
      that checks credentials, with credentials it refuses configured.
    """

    plugin: ObjectStorePlugin
    credentials: dict[str, Any]
    secrets: Sequence[str]

    @pytest.fixture
    def root(self) -> str:  # pragma: no cover - subclasses override
        raise pytest.UsageError("define a root fixture returning an empty prefix in an existing bucket")

    @pytest.fixture
    def base_uri(self, root: str) -> str:
        return root + "/"

    @staticmethod
    def _split(root: str) -> tuple[str, str]:
        scheme, rest = root.split("://", 1)
        return scheme, rest.split("/", 1)[0].split("@", 1)[0]

    @pytest.fixture
    def accepted(self, root: str) -> tuple[str, str, Sequence[str]]:
        """``(scheme, bucket, secrets)`` with the accepted credentials configured."""
        scheme, bucket = self._split(root)
        dataio.configure_credentials(scheme, **self.credentials)
        return scheme, bucket, self.secrets

    def test_the_backend_is_native(self, root: str) -> None:
        name, caps = _native.backend_info(root + "/x")
        assert name == self.plugin.package
        assert {"write", "streaming_write", "delete", "list", "glob", "ranged_read"} <= set(caps)

    def test_a_missing_key_is_file_not_found_naming_scheme_bucket_and_key(
        self, root: str, accepted: tuple[str, str, Sequence[str]]
    ) -> None:
        scheme, bucket, secrets = accepted
        uri = f"{root}/no/such/key.bin"
        for call in (dataio.head, dataio.read, lambda u: dataio.fetch_into(u, bytearray(10)), dataio.delete):
            with pytest.raises(FileNotFoundError) as info:
                call(uri)
            assert isinstance(info.value, dataio.errors.NotFoundError)
            message = str(info.value)
            assert f"{scheme}://" in message and bucket in message and "no/such/key.bin" in message, message
            assert_no_secret(secrets, info.value)
        assert not dataio.exists(uri)

    def test_a_missing_bucket_is_file_not_found_naming_the_bucket(self, accepted: tuple[str, str, Sequence[str]]) -> None:
        scheme, _, secrets = accepted
        bucket = f"dataio-no-such-bucket-{uuid.uuid4().hex[:8]}"
        with pytest.raises(FileNotFoundError, match="no such") as info:
            dataio.head(f"{scheme}://{bucket}/key.bin")
        assert bucket in str(info.value)
        assert_no_secret(secrets, info.value)
        with pytest.raises(FileNotFoundError, match=bucket):
            dataio.ls(f"{scheme}://{bucket}/")
        with pytest.raises(FileNotFoundError):
            dataio.write(f"{scheme}://{bucket}/key.bin", b"x")

    def test_secrets_stay_out_of_reprs_and_the_capability_report(
        self, root: str, accepted: tuple[str, str, Sequence[str]]
    ) -> None:
        from dataio.capabilities import report

        scheme, _, secrets = accepted
        uri = f"{root}/secret-check.bin"
        dataio.write(uri, b"with the accepted credentials")  # they are the ones in use
        assert dataio.read(uri) == b"with the accepted credentials"
        settings = dataio.config.get_settings(scheme)
        assert_no_secret(secrets, dataio.config.get_credentials(scheme), settings, report())
        row = next(p for p in report()["plugins"] if p["name"] == self.plugin.package)
        assert row["status"] == "ok" and f"{scheme}: credentials {settings.method}" in row["detail"]
        if settings.endpoint is not None:
            assert settings.endpoint in row["detail"]

    def test_refused_credentials_are_permission_denied_without_the_secret(
        self, refused_credentials: tuple[str, list[str]]
    ) -> None:
        root, secrets = refused_credentials
        scheme, bucket = self._split(root)
        for name, call in (("key.bin", dataio.read), ("out.bin", lambda u: dataio.write(u, b"data"))):
            with pytest.raises(PermissionError) as info:
                call(f"{root}/{name}")
            assert isinstance(info.value, dataio.errors.AccessDeniedError)
            assert bucket in str(info.value) and name in str(info.value), str(info.value)
            assert_no_secret(secrets, info.value)
        from dataio.capabilities import report

        assert_no_secret(secrets, dataio.config.get_credentials(scheme), report())

    def test_unknown_tuning_options_are_refused(self, root: str) -> None:
        scheme, _ = self._split(root)
        with pytest.raises(ValueError, match=f"unknown {self.plugin.package} options"):
            self.plugin.configure(scheme, retries=3)
        assert "retries" not in self.plugin.configure(scheme)
