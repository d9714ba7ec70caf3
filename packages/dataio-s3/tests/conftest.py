"""Fixtures of the dataio-s3 tests: a moto S3 server on 127.0.0.1 started by
the tests themselves, dataio configured against it, and a TCP proxy that a
test can cut to play a server dying mid-request."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import dataio
import dataio_s3
from dataio.testing import QUICK_RETRIES, require

ACCESS_KEY = "AKIADATAIOTESTKEY01"
SECRET_KEY = "dataio-test-secret-do-not-print-0123456789"


@dataclass
class S3Server:
    endpoint: str
    port: int
    bucket: str
    client: Any  # a boto3 client on the same server, to look behind dataio's back


@pytest.fixture(scope="session")
def moto_server() -> Iterator[tuple[str, int]]:
    server_mod = require("moto.server", "moto[server], the S3 emulator")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}", port
    server.stop()


def boto_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY
    )


def configure(scheme: str, endpoint: str, **tuning: Any) -> None:
    dataio.configure_endpoint(scheme, endpoint)
    dataio.configure_credentials(scheme, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)
    dataio_s3.configure(scheme, **QUICK_RETRIES, **tuning)


@pytest.fixture(scope="session")
def _bucket(moto_server: tuple[str, int]) -> str:
    name = f"dataio-{uuid.uuid4().hex[:12]}"
    boto_client(moto_server[0]).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3(moto_server: tuple[str, int], _bucket: str) -> Iterator[S3Server]:
    endpoint, port = moto_server
    configure("s3", endpoint)
    yield S3Server(endpoint, port, _bucket, boto_client(endpoint))
    unconfigure("s3")


def unconfigure(scheme: str) -> None:
    dataio.config.reset(scheme)
    dataio_s3.PLUGIN.reset(scheme)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def authenticating_moto() -> Iterator[str]:
    """A moto server in its own process with request authentication on: it
    refuses keys it does not know, as AWS does."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("moto server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


class CuttableProxy:
    """Forwards TCP connections to 127.0.0.1:``port`` until ``cut()``, which
    drops every open connection and refuses new ones — to the client, the
    server has died."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.bytes_up = 0
        #: HTTP requests seen going up, by method (request lines counted in
        #: the client's bytes: enough for requests without bodies).
        self.requests: dict[str, int] = {"GET": 0, "HEAD": 0}
        self.alive = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.alive:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                if not self.alive:
                    client.close()
                    upstream.close()
                    return
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if up:
                    self.bytes_up += len(data)
                    for method in self.requests:
                        self.requests[method] += data.count(method.encode() + b" /")
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            self.alive = False
            self.listener.close()
            for s in self.sockets:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    s.close()  # RST: the connection dies mid-request
                except OSError:
                    pass
