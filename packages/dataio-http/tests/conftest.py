"""Fixtures of the dataio-http tests: a plain HTTP server and an HTTPS one
(a certificate from a throwaway CA, trusted through SSL_CERT_FILE) on
127.0.0.1, serving the same files (see _server.py), and nginx serving a
site of every format (see _nginx.py and _site.py)."""

from __future__ import annotations

import io
import os
import ssl
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from _nginx import NGINX, Nginx
from _server import Server, write_files
from _site import write_site

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


@dataclass(frozen=True)
class TlsFiles:
    """A throwaway CA (its PEM trusted through SSL_CERT_FILE) and a
    certificate it issued for localhost and 127.0.0.1."""

    ca: trustme.CA
    cert: trustme.LeafCert
    ca_pem: Path
    cert_pem: Path
    key_pem: Path


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """One CA for every HTTPS server of the session: SSL_CERT_FILE is read
    when the https backend is built (once per process), so it is set before
    the first https use and never changes."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    folder = tmp_path_factory.mktemp("ca")
    files = TlsFiles(ca, cert, folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
    ca.cert_pem.write_to_path(str(files.ca_pem))
    cert.cert_chain_pems[0].write_to_path(str(files.cert_pem))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(files.cert_pem), append=True)
    cert.private_key_pem.write_to_path(str(files.key_pem))
    os.environ["SSL_CERT_FILE"] = str(files.ca_pem)
    return files


@pytest.fixture(scope="session")
def https_server(files: tuple[Path, dict[str, bytes]], tls_files: TlsFiles) -> Iterator[Server]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls_files.cert.configure_cert(ctx)
    s = Server(files[0], tls=ctx)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What nginx serves (see _site.py)."""
    root = tmp_path_factory.mktemp("site")
    write_site(root)
    return root


@pytest.fixture(scope="session")
def nginx(site: Path, tls_files: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    """nginx on 127.0.0.1 (plain and TLS ports) serving ``site``; skipped
    where nginx is not installed (noxfile.py installs it for CI)."""
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (apt-get install nginx; `nox -s tests` installs it)")
    server = Nginx(site, tmp_path_factory.mktemp("nginx"), tls_files.cert_pem, tls_files.key_pem)
    yield server
    server.stop()


@pytest.fixture
def allow_local() -> Iterator[None]:
    """The tests' servers are on loopback: allow it (one host), as a user
    reaching an intranet server would; reset after."""
    dataio.configure_http(allow_hosts=["127.0.0.1", "localhost"], retries=3)
    yield
    dataio.config.reset("http")
