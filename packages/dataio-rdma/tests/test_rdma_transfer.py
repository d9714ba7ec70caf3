"""Moving bytes between processes: many chunks, several in flight, checked
by checksums computed on each side; every kind of caller buffer.

The servers run in their own process, in a network namespace of their own
where the sandbox allows it (see conftest.py; the run's header says which);
otherwise on loopback.
"""

from __future__ import annotations

import hashlib
import mmap
import random
import threading
import time

import numpy as np
import pytest

from dataio import rdma
from dataio.testing import require
from dataio_rdma import _native

MB = 1 << 20


def test_spec_example(libfabric: dict) -> None:
    with rdma.serve(bind="0.0.0.0:0", buffer_size=1 << 20) as server:
        addr = server.local_addr
        with rdma.connect(addr) as client:
            rdma.write(client, offset=0, data=b"hello rdma")
            assert rdma.read(client, offset=0, size=10) == b"hello rdma"
    assert server.closed and client.closed
    assert _native.live_registrations() == 0


@pytest.mark.parametrize(
    ("chunk_size", "max_inflight"),
    [(64 << 10, 1), (256 << 10, 8), (1 << 20, 16), (100_003, 7)],
    ids=["64KiB-x1", "256KiB-x8", "1MiB-x16", "odd-x7"],
)
def test_multi_megabyte_payload_round_trip(spawn_server, chunk_size: int, max_inflight: int) -> None:
    server = spawn_server(mode="serve", size=48 * MB)
    payload = random.Random(chunk_size).randbytes(40 * MB + 12_345)
    offset = 777
    with rdma.connect(server.addr, chunk_size=chunk_size, max_inflight=max_inflight, timeout=20) as client:
        assert client.chunk_size == chunk_size and client.max_inflight == max_inflight
        assert rdma.write(client, offset=offset, data=payload) == len(payload)
        # The bytes are in the other process's memory ...
        assert server.sha256(offset, len(payload)) == hashlib.sha256(payload).hexdigest()
        # ... and come back, into a numpy array.
        back = np.empty(len(payload), dtype=np.uint8)
        assert rdma.read_into(client, back, offset=offset) == len(payload)
        assert hashlib.sha256(back).hexdigest() == hashlib.sha256(payload).hexdigest()
    assert _native.live_registrations() == 0
    assert server.close()["live_registrations"] == 0


def test_reads_what_the_server_process_wrote(spawn_server) -> None:
    server = spawn_server(mode="serve", size=24 * MB)
    digest = server.cmd(cmd="fill", offset=0, seed=7, size=24 * MB)["sha256"]
    with rdma.connect(server.addr, chunk_size=512 << 10, max_inflight=6) as client:
        assert client.size == 24 * MB and client.writable
        data = rdma.read(client)  # the whole region
        assert hashlib.sha256(data).hexdigest() == digest
        # Unaligned ranges inside.
        assert rdma.read(client, offset=1, size=3) == data[1:4]
        assert rdma.read(client, offset=24 * MB - 5, size=5) == data[-5:]
        assert rdma.read(client, offset=24 * MB, size=0) == b""


def _buffers(n: int) -> dict[str, object]:
    torch = require("torch")
    return {
        "bytearray": bytearray(n),
        "numpy-uint8": np.zeros(n, dtype=np.uint8),
        "numpy-float32": np.zeros(n // 4, dtype=np.float32),
        "mmap": mmap.mmap(-1, n),
        "memoryview": memoryview(bytearray(n)),
        "torch-uint8": torch.zeros(n, dtype=torch.uint8),
        "torch-bfloat16": torch.zeros(n // 2, dtype=torch.bfloat16),
    }


def _as_bytes(buf: object) -> bytes:
    torch = require("torch")
    if isinstance(buf, torch.Tensor):
        return buf.view(torch.uint8).numpy().tobytes()
    if isinstance(buf, mmap.mmap):
        return buf[:]
    return bytes(memoryview(buf).cast("B"))


def test_read_into_every_kind_of_buffer(spawn_server) -> None:
    n = 3 * MB
    server = spawn_server(mode="serve", size=n)
    server.cmd(cmd="fill", offset=0, seed=3, size=n)
    with rdma.connect(server.addr, chunk_size=256 << 10, max_inflight=4) as client:
        expected = rdma.read(client, 0, n)
        for name, buf in _buffers(n).items():
            assert rdma.read_into(client, buf, offset=0) == n, name
            assert _as_bytes(buf) == expected, name
        # A prefix only.
        small = bytearray(10)
        assert rdma.read_into(client, small, offset=5, size=4) == 4
        assert bytes(small[:4]) == expected[5:9] and bytes(small[4:]) == bytes(6)


def test_torch_tensor_bytes_match_a_local_copy(spawn_server) -> None:
    torch = require("torch")
    server = spawn_server(mode="serve", size=4 * MB)
    src = torch.randn(1000, 250, dtype=torch.bfloat16)
    with rdma.connect(server.addr) as client:
        assert rdma.write(client, offset=4096, data=src) == src.numel() * 2
        dst = torch.empty_like(src)
        rdma.read_into(client, dst, offset=4096)
        assert torch.equal(dst, src)
        with pytest.raises(ValueError, match="contiguous"):
            rdma.read_into(client, torch.empty(500, 500, dtype=torch.bfloat16).t(), offset=0)


def test_write_from_every_kind_of_source(spawn_server) -> None:
    server = spawn_server(mode="serve", size=1 * MB)
    with rdma.connect(server.addr) as client:
        for data in (b"bytes", bytearray(b"bytearray"), memoryview(b"view"), np.arange(5, dtype=np.int64)):
            n = rdma.write(client, offset=100, data=data)
            assert rdma.read(client, 100, n) == bytes(memoryview(data).cast("B"))


def test_transfers_release_the_gil(spawn_server) -> None:
    server = spawn_server(mode="serve", size=32 * MB)
    buf = bytearray(32 * MB)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0)

    with rdma.connect(server.addr, chunk_size=64 << 10, max_inflight=1) as client:
        t = threading.Thread(target=count)
        t.start()
        started = time.monotonic()
        while time.monotonic() - started < 0.5:
            rdma.read_into(client, buf)
        done.set()
        t.join()
    assert ticks > 100, "another Python thread did not run while transfers were in progress"


def test_many_clients_and_threads_share_a_server(spawn_server) -> None:
    server = spawn_server(mode="serve", size=8 * MB)
    digest = server.cmd(cmd="fill", offset=0, seed=11, size=8 * MB)["sha256"]
    clients = [rdma.connect(server.addr, chunk_size=128 << 10, max_inflight=4) for _ in range(3)]
    assert server.cmd(cmd="clients")["clients"] == 3
    errors: list[BaseException] = []

    def worker(client: rdma.Client) -> None:
        try:
            for _ in range(3):
                assert hashlib.sha256(rdma.read(client)).hexdigest() == digest
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    # Two threads per client: transfers on one connection take turns.
    threads = [threading.Thread(target=worker, args=(c,)) for c in clients for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for c in clients:
        c.close()
    from conftest import wait_until

    assert wait_until(lambda: server.cmd(cmd="clients")["clients"] == 0)


def test_server_memoryview(libfabric: dict) -> None:
    with rdma.serve("127.0.0.1:0", buffer_size=4096) as server:
        view = memoryview(server)
        assert len(view) == 4096 and not view.readonly
        view[:5] = b"local"
        with rdma.connect(server.local_addr) as client:
            assert rdma.read(client, 0, 5) == b"local"
            rdma.write(client, 10, b"remote")
        assert bytes(view[10:16]) == b"remote"
    # The view outlives close(): the memory stays mapped until it is released.
    assert bytes(view[:5]) == b"local"
    view.release()


def test_sockets_provider_is_a_fallback_too(spawn_server) -> None:
    server = spawn_server(mode="serve", size=4 * MB, provider="sockets")
    assert server.provider == "sockets"
    payload = random.Random(5).randbytes(3 * MB)
    with rdma.connect(server.addr, chunk_size=256 << 10, max_inflight=4) as client:
        assert client.provider == "sockets"
        rdma.write(client, 0, payload)
        assert server.sha256(0, len(payload)) == hashlib.sha256(payload).hexdigest()
        assert rdma.read(client, 0, len(payload)) == payload


def test_fi_provider_selects_the_provider(spawn_server) -> None:
    server = spawn_server(mode="serve", size=MB, env={"FI_PROVIDER": "sockets"})
    assert server.provider == "sockets"
    with pytest.raises(ValueError, match='serves over libfabric provider "sockets"'):
        rdma.connect(server.addr, provider="tcp;ofi_rxm")
