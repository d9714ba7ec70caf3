"""Bad input and bad peers: out-of-range offsets, writes to a served file,
wrong tokens, strangers on the port, and a server that dies mid-transfer
must all raise clear errors, within a bound, never touch memory out of range
or hang.

Servers run in their own process (in their own network namespace where the
sandbox allows it; see conftest.py).
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from dataio import rdma
from dataio.errors import (
    AccessDeniedError,
    InvalidArgumentError,
    OutOfRangeError,
    StorageError,
    TimeoutError,  # noqa: A004 - dataio's, a subclass of the builtin
)
from dataio_rdma import RdmaDisconnectedError, _native

MB = 1 << 20


def test_ranges_outside_the_region_are_refused_before_posting(spawn_server) -> None:
    server = spawn_server(mode="serve", size=MB)
    with rdma.connect(server.addr) as client:
        for offset, size in [(MB, 1), (MB - 4, 5), (2 * MB, 0), (2**63, 10), (2**64 - 5, 10)]:
            with pytest.raises(OutOfRangeError, match="outside the server's 1048576-byte region") as e:
                rdma.read(client, offset=offset, size=size)
            assert e.value.offset == offset and e.value.length == MB
        with pytest.raises(OutOfRangeError):
            rdma.write(client, offset=MB - 2, data=b"abc")
        with pytest.raises(OutOfRangeError):
            rdma.read_into(client, bytearray(MB + 1), offset=0)
        with pytest.raises(InvalidArgumentError, match="offset must be >= 0"):
            rdma.read(client, offset=-1, size=1)
        # None of that broke the connection.
        assert client.broken is None
        assert rdma.read(client, offset=MB - 1, size=1) == b"\0"


def test_served_files_are_read_only(spawn_server, tmp_path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * 4096)
    server = spawn_server(mode="file", path=str(path))
    with rdma.connect(server.addr) as client:
        assert not client.writable and client.size == 256 * 4096
        with pytest.raises(AccessDeniedError, match="read-only"):
            rdma.write(client, offset=0, data=b"overwrite")
        assert rdma.read(client, 0, 4) == bytes([0, 1, 2, 3])
    assert path.read_bytes() == bytes(range(256)) * 4096


def test_serving_a_file_locally_is_read_only_too(libfabric: dict, tmp_path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"0123456789")
    with rdma.serve_file(path, bind="127.0.0.1:0") as server:
        assert server.readonly and server.path == str(path) and server.size == 10
        view = memoryview(server)
        assert view.readonly and bytes(view) == b"0123456789"
        with pytest.raises(TypeError):
            view[0] = 0
        view.release()
    for bad, err in [(tmp_path / "missing.bin", InvalidArgumentError), (tmp_path, InvalidArgumentError)]:
        with pytest.raises(err):
            rdma.serve_file(bad, bind="127.0.0.1:0")
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(InvalidArgumentError, match="empty"):
        rdma.serve_file(tmp_path / "empty.bin", bind="127.0.0.1:0")


def test_a_token_refuses_strangers(spawn_server) -> None:
    server = spawn_server(mode="serve", size=MB, token="s3cret")
    with pytest.raises(AccessDeniedError, match="wrong token") as e:
        rdma.connect(server.addr, token="guess")
    assert "s3cret" not in str(e.value) and "guess" not in str(e.value)
    with pytest.raises(AccessDeniedError, match="requires a token"):
        rdma.connect(server.addr)
    with rdma.connect(server.addr, token=b"s3cret") as client:
        rdma.write(client, 0, b"ok")
        assert rdma.read(client, 0, 2) == b"ok"


def test_strangers_on_the_port_do_not_hurt_the_server(spawn_server) -> None:
    server = spawn_server(mode="serve", size=MB, timeout=2.0)
    host, port = server.addr.rsplit(":", 1)
    # Garbage, a silent connection, and one that hangs up at once.
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\n\r\n")
        try:
            assert s.recv(100) == b""  # closed without an answer ...
        except ConnectionResetError:
            pass  # ... or reset, the request still unread
    silent = socket.create_connection((host, int(port)), timeout=5)
    socket.create_connection((host, int(port)), timeout=5).close()
    with rdma.connect(server.addr) as client:
        rdma.write(client, 0, b"still serving")
        assert rdma.read(client, 0, 13) == b"still serving"
    silent.close()


def test_connecting_to_a_stranger_is_a_clear_error(libfabric: dict) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def answer() -> None:
        conn, _ = listener.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        time.sleep(0.5)
        conn.close()

    t = threading.Thread(target=answer)
    t.start()
    with pytest.raises(StorageError, match="does not speak the dataio-rdma handshake"):
        rdma.connect(f"127.0.0.1:{port}", timeout=5)
    t.join()
    listener.close()
    # Nobody listening at all.
    with pytest.raises(RdmaDisconnectedError, match="connection refused"):
        rdma.connect(f"127.0.0.1:{port}", timeout=5)


def test_a_silent_server_times_out(libfabric: dict) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="timed out"):
        rdma.connect(f"127.0.0.1:{listener.getsockname()[1]}", timeout=1.0)
    assert time.monotonic() - started < 10
    listener.close()


def test_server_killed_mid_transfer_raises_within_the_timeout(spawn_server) -> None:
    server = spawn_server(mode="serve", size=64 * MB)
    client = rdma.connect(server.addr, chunk_size=64 << 10, max_inflight=2, timeout=5.0)
    buf = bytearray(64 * MB)
    rdma.read_into(client, buf)  # the connection works
    outcome: list[BaseException] = []
    reading = threading.Event()

    def keep_reading() -> None:
        try:
            while True:
                reading.set()
                rdma.read_into(client, buf)
        except BaseException as e:  # noqa: BLE001
            outcome.append(e)

    t = threading.Thread(target=keep_reading)
    t.start()
    assert reading.wait(10)
    time.sleep(0.2)
    killed = time.monotonic()
    server.kill()  # SIGKILL: no goodbye
    t.join(timeout=30)
    assert not t.is_alive(), "the transfer hung after the server died"
    elapsed = time.monotonic() - killed
    assert elapsed < 15, f"took {elapsed:.1f}s to notice"
    (err,) = outcome
    assert isinstance(err, (RdmaDisconnectedError, TimeoutError)), repr(err)
    assert "server" in str(err)
    # The connection is broken for good and says why; the registration of
    # the buffer was released.
    assert client.broken
    with pytest.raises(RdmaDisconnectedError, match="broke earlier"):
        rdma.read(client, 0, 10)
    assert _native.live_registrations() == 0
    client.close()


def test_server_close_disconnects_its_clients(libfabric: dict) -> None:
    server = rdma.serve("127.0.0.1:0", buffer_size=MB)
    client = rdma.connect(server.local_addr, timeout=5.0)
    rdma.write(client, 0, b"x")
    server.close()
    started = time.monotonic()
    with pytest.raises((RdmaDisconnectedError, TimeoutError)):
        rdma.read_into(client, bytearray(MB))
    assert time.monotonic() - started < 10
    client.close()
    assert _native.live_registrations() == 0


def test_closed_handles(libfabric: dict) -> None:
    with rdma.serve("127.0.0.1:0", buffer_size=MB) as server:
        client = rdma.connect(server.local_addr)
        client.close()
        client.close()  # idempotent
        with pytest.raises(InvalidArgumentError, match="closed"):
            rdma.read(client, 0, 1)
    server.close()
    assert server.closed and _native.live_registrations() == 0


def test_bad_arguments(libfabric: dict) -> None:
    with pytest.raises(InvalidArgumentError, match="buffer_size"):
        rdma.serve("127.0.0.1:0", buffer_size=0)
    with pytest.raises(InvalidArgumentError, match="cannot resolve"):
        rdma.serve("no-such-host.invalid:0", buffer_size=10)
    with rdma.serve("127.0.0.1:0", buffer_size=MB) as server:
        for kwargs, match in [
            ({"chunk_size": 0}, "chunk_size"),
            ({"max_inflight": 0}, "max_inflight"),
            ({"max_inflight": 10**6}, "max_inflight"),
            ({"timeout": 0}, "timeout"),
        ]:
            with pytest.raises(InvalidArgumentError, match=match):
                rdma.connect(server.local_addr, **kwargs)
        with rdma.connect(server.local_addr) as client:
            with pytest.raises(ValueError, match="read-only"):
                rdma.read_into(client, b"immutable")
            with pytest.raises(TypeError, match="str"):
                rdma.write(client, 0, "text")
            with pytest.raises(TypeError, match="data="):
                rdma.write(client, 0)
    with pytest.raises(InvalidArgumentError, match="no port"):
        rdma.connect("127.0.0.1")


def test_cuda_needs_an_hmem_provider_and_a_cuda_client(libfabric: dict) -> None:
    from dataio_rdma import RdmaUnavailableError

    with rdma.serve("127.0.0.1:0", buffer_size=MB) as server:
        if not _native.hmem_offered():
            # This libfabric build offers no FI_HMEM on a network provider:
            # cuda=True says so instead of staging through host memory.
            with pytest.raises(RdmaUnavailableError, match="FI_HMEM") as e:
                rdma.connect(server.local_addr, cuda=True)
            assert "diagnose()" in str(e.value)
        # A device pointer on a host-memory client is refused before any
        # registration (the pointer is never touched).
        with rdma.connect(server.local_addr) as client, pytest.raises(InvalidArgumentError, match="cuda=True"):
            client._transfer_ptr(False, 0xDEAD0000, 4096, 0, 0)


def test_a_lying_server_cannot_make_the_client_overread(libfabric: dict) -> None:
    """A peer that speaks the handshake but sends a 2-byte fabric address
    (fi_av_insert would read a whole sockaddr from it) is refused."""
    import struct

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def lie() -> None:
        conn, _ = listener.accept()
        conn.recv(64)
        provider = b"tcp;ofi_rxm"
        hello = b"DIORDMA\x01" + b"\x00" + struct.pack("<H", len(provider)) + provider
        hello += struct.pack("<I", 2) + struct.pack("<H", 2) + b"\x7f\x00"  # FI_SOCKADDR_IN, 2 bytes
        hello += struct.pack("<QQQB", 1 << 20, 0, 1234, 3)
        conn.sendall(hello)
        time.sleep(1)
        conn.close()

    t = threading.Thread(target=lie)
    t.start()
    with pytest.raises(StorageError, match="fabric address of format 2 and 2 bytes"):
        rdma.connect(f"127.0.0.1:{listener.getsockname()[1]}", timeout=5)
    t.join()
    listener.close()
