"""Ranged reads: coalescing of neighbouring ranges and splitting of long ones,
observed through a Python backend that records every request it serves, and
the same bytes as a plain read on local files."""

from __future__ import annotations

import threading
import uuid

import numpy as np
import pytest

import dataio
from dataio.plugins import register_backend


class RecordingStore:
    """A read-only in-memory store that logs each ranged request."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects
        self.requests: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def head(self, uri: str) -> dict:
        return {"uri": uri, "size": len(self.objects[uri])}

    def read_range(self, uri: str, offset: int, size: int) -> bytes:
        data = self.objects[uri]
        if offset + size > len(data):
            raise ValueError(f"range [{offset}, {offset + size}) beyond the end of {uri}")
        with self._lock:
            self.requests.append((offset, size))
        return data[offset : offset + size]

    def read_all(self, uri: str) -> bytes:
        return self.objects[uri]

    def list(self, prefix: str, recursive: bool = False) -> list:
        return []

    def exists(self, uri: str) -> bool:
        return uri in self.objects


@pytest.fixture
def store() -> tuple[RecordingStore, str]:
    scheme = "rec" + uuid.uuid4().hex[:8]
    uri = f"{scheme}://b/blob"
    data = np.random.default_rng(1).integers(0, 256, 40 << 20, dtype=np.uint8).tobytes()
    s = RecordingStore({uri: data})
    register_backend(scheme, s)
    return s, uri


def test_neighbouring_ranges_share_one_request(store) -> None:
    s, uri = store
    data = s.objects[uri]
    ranges = [(1000 + i * 4096, 100 + i) for i in range(50)]  # 50 small ranges, ~4 KB apart
    got = dataio.read_ranges(uri, ranges)
    assert got == [data[o : o + n] for o, n in ranges]
    assert s.requests == [(1000, ranges[-1][0] + ranges[-1][1] - 1000)]


def test_far_apart_ranges_are_separate_requests_and_order_is_kept(store) -> None:
    s, uri = store
    data = s.objects[uri]
    ranges = [(30 << 20, 10), (0, 10), (10 << 20, 10)]
    got = dataio.read_ranges(uri, ranges)
    assert got == [data[o : o + n] for o, n in ranges]
    assert sorted(s.requests) == [(0, 10), (10 << 20, 10), (30 << 20, 10)]


def test_gap_and_part_size_are_honoured(store) -> None:
    s, uri = store
    dataio.read_ranges(uri, [(0, 10), (20, 10)], gap=5)
    assert sorted(s.requests) == [(0, 10), (20, 10)]
    s.requests.clear()
    dataio.read_ranges(uri, [(0, 10), (20, 10)], gap=10)
    assert s.requests == [(0, 30)]
    s.requests.clear()
    dataio.read_ranges(uri, [(0, 100), (100, 100)], part_size=150)
    assert sorted(s.requests) == [(0, 100), (100, 100)]


def test_a_long_fetch_into_goes_out_as_parallel_parts(store) -> None:
    s, uri = store
    data = s.objects[uri]
    buf = np.empty(20 << 20, dtype=np.uint8)
    assert dataio.fetch_into(uri, buf, offset=5, size=buf.size) == buf.size
    assert buf.tobytes() == data[5 : 5 + buf.size]
    part = 8 << 20
    assert sorted(s.requests) == [(5, part), (5 + part, part), (5 + 2 * part, (20 << 20) - 2 * part)]


def test_remote_safetensors_coalesce_small_tensors(store, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    s, uri = store
    tensors = {f"norm.{i}.bias": torch.arange(64, dtype=torch.float32) + i for i in range(40)}
    tensors["big"] = torch.arange(3 << 20, dtype=torch.float32)  # 12 MiB: two parts
    local = tmp_path / "m.safetensors"
    dataio.write_safetensors(str(local), tensors)
    st_uri = uri.replace("/blob", "/m.safetensors")
    s.objects[st_uri] = local.read_bytes()
    got = dataio.read_safetensors(st_uri)
    assert got.keys() == tensors.keys()
    for k, t in tensors.items():
        assert torch.equal(got[k], t), k
    data_start = 8 + int.from_bytes(s.objects[st_uri][:8], "little")
    ranged = [r for r in s.requests if r[0] >= data_start]
    # The 40 small tensors in one request, the 12 MiB one in two parts.
    assert len(ranged) == 3, ranged


def test_local_ranges_match_plain_reads(tmp_path) -> None:
    p = tmp_path / "f.bin"
    data = bytes(range(256)) * 1000
    p.write_bytes(data)
    ranges = [(0, 0), (5, 10), (100_000, 1000), (3, 4)]
    assert dataio.read_ranges(str(p), ranges) == [data[o : o + n] for o, n in ranges]


def test_a_range_past_the_end_is_an_error_naming_the_uri(tmp_path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * 100)
    with pytest.raises(dataio.errors.OutOfRangeError, match="f.bin"):
        dataio.read_ranges(str(p), [(0, 10), (95, 10)])
    with pytest.raises(ValueError, match="size must be >= 0"):
        dataio.read_ranges(str(p), [(0, -1)])
