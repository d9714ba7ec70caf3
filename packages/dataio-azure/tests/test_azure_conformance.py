"""dataio's backend conformance suite against Azurite, through the native
backend (shared key), plus the ``container@account`` URI form."""

from __future__ import annotations

import uuid

import dataio
import pytest
from conftest import ACCOUNT, Azurite
from dataio.testing import BackendConformance


class TestAzureConformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, az: tuple[Azurite, str]) -> str:
        return f"az://{az[1]}/{uuid.uuid4().hex}/"


class TestAzureAccountInUri(BackendConformance):
    @pytest.fixture
    def base_uri(self, az: tuple[Azurite, str]) -> str:
        return f"az://{az[1]}@{ACCOUNT}/{uuid.uuid4().hex}/"


def test_the_backend_is_native(az: tuple[Azurite, str]) -> None:
    name, caps = dataio._native.backend_info(f"az://{az[1]}/x")
    assert name == "dataio-azure" and {"write", "delete", "list", "ranged_read"} <= set(caps)
