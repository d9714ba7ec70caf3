"""fake-gcs-server (behind the XML-API front) through the native backend,
against the core's conformance suites. The emulator checks no credentials,
so for the refused-credentials check the front does, as GCS would."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import FakeGcs

import dataio
import dataio_gcs
from dataio.testing import ObjectStoreConformance, PluginConformance

TOKEN = "ya29.dataio-test-token-never-printed"


class TestGcsStore(ObjectStoreConformance):
    plugin = dataio_gcs.PLUGIN
    credentials, secrets = {"method": "token", "token": TOKEN}, (TOKEN,)  # any token passes the emulator

    @pytest.fixture
    def root(self, gcs: tuple[FakeGcs, str]) -> str:
        return f"gs://{gcs[1]}/{uuid.uuid4().hex}"

    @pytest.fixture
    def refused_credentials(self, gcs: tuple[FakeGcs, str]) -> Iterator[tuple[str, list[str]]]:
        server, bucket = gcs
        assert server.front is not None
        server.front.required_token = "ya29.the-only-token-the-front-accepts"
        dataio.configure_credentials("gs", method="token", token=TOKEN)
        yield f"gs://{bucket}/{uuid.uuid4().hex}", [TOKEN, server.front.required_token]
        server.front.required_token = None


class TestGcsPlugin(PluginConformance):
    entry_point, package, schemes = "gcs", "dataio-gcs", ("gs",)
