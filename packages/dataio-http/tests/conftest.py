"""Fixtures of the dataio-http tests: a plain HTTP server and an HTTPS one
(a certificate from a throwaway CA, trusted through SSL_CERT_FILE) on
127.0.0.1, serving the same files (see _server.py)."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _server import Server, write_files

import dataio


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    root = tmp_path_factory.mktemp("www")
    data = write_files(root)
    # Four tar shards of 5 samples each.
    n = 0
    for s in range(4):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for _ in range(5):
                body = bytes([n]) * (100 + n)
                info = tarfile.TarInfo(f"{n:04d}.bin")
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
                n += 1
        (root / f"train-{s}.tar").write_bytes(buf.getvalue())
    return root, data


@pytest.fixture(scope="session")
def http_server(files: tuple[Path, dict[str, bytes]]) -> Iterator[Server]:
    s = Server(files[0])
    yield s
    s.stop()


@pytest.fixture(scope="session")
def https_server(files: tuple[Path, dict[str, bytes]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    import ssl

    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    os.environ["SSL_CERT_FILE"] = str(pem)  # read when the https backend is built
    s = Server(files[0], tls=ctx)
    yield s
    s.stop()


@pytest.fixture
def allow_local() -> Iterator[None]:
    """The tests' servers are on loopback: allow it (one host), as a user
    reaching an intranet server would; reset after."""
    dataio.configure_http(allow_hosts=["127.0.0.1", "localhost"], retries=3)
    yield
    dataio.config.reset("http")
