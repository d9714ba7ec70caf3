"""Fixtures of the dataio-azure tests: Azurite (npm) on 127.0.0.1, started
and stopped by the tests, with its well-known development account.

Azurite is looked up on PATH, then in ``<repo>/.cache/azurite`` (where
noxfile.py installs it); when it is missing and npm is available the fixture
installs it there itself (``npm install azurite@3``). When neither works the
tests fail: the emulator is a declared test dependency, not hardware."""

from __future__ import annotations

import base64
import hashlib
import hmac
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

import pytest

import dataio
import dataio_azure
from dataio.testing import QUICK_RETRIES

ACCOUNT = "devstoreaccount1"
# Azurite's published development key (not a secret; Azure documents it).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache" / "azurite"


def azurite_binary() -> str:
    found = shutil.which("azurite-blob") or (
        str(CACHE / "node_modules" / ".bin" / "azurite-blob") if (CACHE / "node_modules" / ".bin" / "azurite-blob").exists() else None
    )
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        # Not hardware: a missing emulator must fail the run, not hide it.
        pytest.fail("Azurite is not installed and npm is missing: install Node.js/npm (the noxfile installs azurite@3)")
    result = subprocess.run([npm, "install", "--prefix", str(CACHE), "azurite@3"], capture_output=True, timeout=600)
    binary = CACHE / "node_modules" / ".bin" / "azurite-blob"
    if result.returncode != 0 or not binary.exists():
        pytest.fail(f"Azurite could not be installed with npm: {result.stderr.decode(errors='replace')[-300:]}")
    return str(binary)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Azurite:
    def __init__(self, location: Path | None = None) -> None:
        self.port = free_port()
        self.location = location
        self.endpoint = f"http://127.0.0.1:{self.port}/{ACCOUNT}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.location is not None:
            self.location.mkdir(parents=True, exist_ok=True)
        storage = ["--location", str(self.location)] if self.location else ["--inMemoryPersistence"]
        self.proc = subprocess.Popen(
            [azurite_binary(), "--blobHost", "127.0.0.1", "--blobPort", str(self.port), *storage,
             "--skipApiVersionCheck", "--disableTelemetry", "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.2)
        self.kill()
        pytest.fail("Azurite did not start")

    def stop(self) -> None:
        """A graceful stop: Azurite saves its metadata (a kill may lose what it has not saved yet)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _signed(self, method: str, path: str, query: dict[str, str]) -> urllib.request.Request:
        date = formatdate(usegmt=True)
        headers = {"x-ms-date": date, "x-ms-version": "2021-08-06"}
        canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        resource = f"/{ACCOUNT}/{ACCOUNT}/{path}" + "".join(f"\n{k}:{v}" for k, v in sorted(query.items()))
        to_sign = f"{method}\n\n\n\n\n\n\n\n\n\n\n\n{canonical_headers}{resource}"
        sig = base64.b64encode(hmac.new(base64.b64decode(KEY), to_sign.encode(), hashlib.sha256).digest()).decode()
        qs = "&".join(f"{k}={v}" for k, v in query.items())
        url = f"{self.endpoint}/{path}" + (f"?{qs}" if qs else "")
        return urllib.request.Request(url, method=method, headers={**headers, "Authorization": f"SharedKey {ACCOUNT}:{sig}"})

    def create_container(self, name: str) -> None:
        urllib.request.urlopen(self._signed("PUT", name, {"restype": "container"}), timeout=10).read()

    def blob_names(self, container: str) -> list[str]:
        import re

        req = self._signed("GET", container, {"comp": "list", "restype": "container"})
        body = urllib.request.urlopen(req, timeout=10).read().decode()
        return re.findall(r"<Name>([^<]*)</Name>", body)


def configure(endpoint: str, **tuning: object) -> None:
    dataio.configure_endpoint("az", endpoint)
    dataio.configure_credentials("az", method="shared_key", account=ACCOUNT, account_key=KEY)
    dataio_azure.configure("az", **QUICK_RETRIES, **tuning)


def unconfigure() -> None:
    dataio.config.reset("az")
    dataio_azure.PLUGIN.reset("az")


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    server = Azurite()
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="session")
def _container(azurite: Azurite) -> str:
    name = f"dataio-{uuid.uuid4().hex[:12]}"
    azurite.create_container(name)
    return name


@pytest.fixture
def az(azurite: Azurite, _container: str) -> Iterator[tuple[Azurite, str]]:
    configure(azurite.endpoint)
    yield azurite, _container
    unconfigure()
