"""Local files through the flat verbs: the conformance suite plus what only a
filesystem can show (directories, permissions, temp files, memory maps)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

import dataio
from dataio.errors import CorruptDataError, InvalidURIError, OutOfRangeError
from dataio.plugins import install_hint
from dataio.testing import BackendConformance


class TestLocalPaths(BackendConformance):
    @pytest.fixture
    def base_uri(self, tmp_path: Path) -> str:
        return str(tmp_path) + "/"


class TestFileURIs(BackendConformance):
    @pytest.fixture
    def base_uri(self, tmp_path: Path) -> str:
        return "file://" + str(tmp_path) + "/"


def test_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    dataio.write("rel/a.txt", b"abc")
    assert dataio.read("rel/a.txt") == b"abc"
    assert dataio.glob("rel/*.txt") == ["rel/a.txt"]
    assert dataio.ls("rel") == ["rel/a.txt"]


def test_a_directory_read_as_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as info:
        dataio.read(str(tmp_path))
    assert str(tmp_path) in str(info.value)
    with pytest.raises(IsADirectoryError):
        dataio.write(str(tmp_path), b"x")
    with pytest.raises(IsADirectoryError):
        dataio.fetch_into(str(tmp_path), bytearray(10))
    assert dataio.head(str(tmp_path)).is_dir


def test_a_file_used_as_a_directory(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        dataio.read(str(f / "child"))


def test_unwritable_destination_is_a_permission_error_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(PermissionError) as info:
        dataio.write("/sys/dataio-cannot-write-here", b"x")
    assert "/sys/dataio-cannot-write-here" in str(info.value)


def test_failed_writes_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "t.bin"
    with pytest.raises(ZeroDivisionError):
        with dataio.writer(str(target)) as w:
            w.write(b"a" * 1000)
            raise ZeroDivisionError("the block fails mid-write")
    assert list(tmp_path.iterdir()) == []
    w = dataio.writer(str(target))
    w.write(b"abandoned")
    del w
    assert list(tmp_path.iterdir()) == []


def test_write_is_atomic_for_concurrent_readers(tmp_path: Path) -> None:
    target = tmp_path / "t.bin"
    dataio.write(str(target), b"old" * 1000)
    with dataio.writer(str(target)) as w:
        w.write(b"new" * 500)
        assert target.read_bytes() == b"old" * 1000
        w.write(b"new" * 500)
    assert target.read_bytes() == b"new" * 1000


def test_write_returns_a_content_hash(tmp_path: Path) -> None:
    a = dataio.write(str(tmp_path / "a"), b"same")
    b = dataio.write(str(tmp_path / "b"), b"same")
    c = dataio.write(str(tmp_path / "c"), b"other")
    assert a == b != c
    assert len(a) == 32


def test_malformed_uris(tmp_path: Path) -> None:
    for bad in ("", "://x", "1s3://b/k", "file://relative/path"):
        with pytest.raises(InvalidURIError):
            dataio.read(bad)
    with pytest.raises(ValueError):
        dataio.read("s3://")


def test_unknown_schemes_name_the_package_to_install() -> None:
    for scheme, extra in (("s3", "s3"), ("gs", "gcs"), ("az", "azure"), ("hf", "hf"), ("r2", "s3")):
        try:
            dataio.read(f"{scheme}://bucket/key")
        except dataio.errors.UnsupportedSchemeError as e:
            assert install_hint(f"dataio-{extra}") in str(e)
        except dataio.DataioError:
            pass  # the plugin is installed: then it is not an unknown scheme
    with pytest.raises(dataio.errors.UnsupportedSchemeError, match="weird"):
        dataio.read("weird://x/y")


def test_reader_buffer_is_a_view_of_the_map(tmp_path: Path) -> None:
    data = os.urandom(1 << 20)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    r = dataio.reader(str(path))
    a = np.frombuffer(r, dtype=np.uint8)
    b = np.frombuffer(r, dtype=np.uint8)
    assert a.ctypes.data == b.ctypes.data, "both views must share the reader's memory"
    assert a.tobytes() == data
    assert not a.flags.writeable
    assert memoryview(r).readonly


def test_fetch_into_an_mmap(tmp_path: Path) -> None:
    import mmap

    src = tmp_path / "src"
    src.write_bytes(b"0123456789" * 100)
    with mmap.mmap(-1, 1000) as m:
        assert dataio.fetch_into(str(src), m) == 1000
        assert m[:10] == b"0123456789"


def test_fetch_into_rejects_non_buffers(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(b"abc")
    with pytest.raises(TypeError, match="writable"):
        dataio.fetch_into(str(src), [0, 0, 0])


def test_offset_past_the_end(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(b"abc")
    with pytest.raises(OutOfRangeError) as info:
        dataio.read(str(src), offset=10)
    assert info.value.length == 3


def _tar_with(names: list[str]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    return raw.getvalue()


def test_tar_entries_escaping_the_archive_are_refused(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar"
    evil.write_bytes(_tar_with(["ok.txt", "../../etc/passwd"]))
    with pytest.raises(CorruptDataError, match="escape") as info:
        dataio.reader(str(evil)).tar_entries()
    assert str(evil) in str(info.value)
    with pytest.raises(ValueError, match="safe"):
        dataio.reader(str(evil)).tar_entry("../x")


def test_truncated_tar_gz(tmp_path: Path) -> None:
    p = tmp_path / "t.tar.gz"
    p.write_bytes(gzip.compress(_tar_with(["a", "b"]))[:-30])
    with pytest.raises(CorruptDataError):
        dataio.reader(str(p)).gunzip()


def test_gunzip_size_cap_refuses_bombs(tmp_path: Path) -> None:
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(b"\0" * 10_000_000))
    with pytest.raises(CorruptDataError, match="more than"):
        dataio.reader(str(p)).gunzip(max_size=1_000_000)


def test_reprs_are_readable(tmp_path: Path) -> None:
    p = tmp_path / "x"
    p.write_bytes(b"abc")
    assert "dataio.Reader" in repr(dataio.reader(str(p)))
    assert "ObjectMeta(" in repr(dataio.head(str(p)))
    import pickle

    meta = dataio.head(str(p))
    assert pickle.loads(pickle.dumps(meta)) == meta
