"""dataio's backend conformance suite against fake-gcs-server, through the
native backend."""

from __future__ import annotations

import uuid

import dataio
import pytest
from conftest import FakeGcs
from dataio.testing import BackendConformance


class TestGcsConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, gcs: tuple[FakeGcs, str]) -> str:
        return f"gs://{gcs[1]}/{uuid.uuid4().hex}/"


def test_the_backend_is_native(gcs: tuple[FakeGcs, str]) -> None:
    name, caps = dataio._native.backend_info(f"gs://{gcs[1]}/x")
    assert name == "dataio-gcs" and {"write", "delete", "list", "ranged_read"} <= set(caps)
