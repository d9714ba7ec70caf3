"""The backend suite: :class:`BackendConformance`, the behaviour every
backend must show (writes, reads, ranges, ``fetch_into``, streaming writes,
listing, globbing, delete, the readers), against any scheme."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterable

import pytest

import dataio
from dataio import _native
from dataio.errors import OutOfRangeError

from .helpers import require

__all__ = ["BackendConformance"]


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
        assert bytes(memoryview(r)) == data  # type: ignore[arg-type]  # the stub cannot say buffer (__buffer__ is 3.12+)
