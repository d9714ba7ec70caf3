"""Azurite through the native backend (shared key), against the core's
conformance suites; the storage contract also with ``container@account``
URIs."""

from __future__ import annotations

import base64
import uuid

import pytest
from conftest import ACCOUNT, KEY, Azurite

import dataio
import dataio_azure
from dataio.testing import BackendConformance, ObjectStoreConformance, PluginConformance

WRONG_KEY = base64.b64encode(b"dataio-wrong-key-that-must-never-be-printed!!").decode()


class TestAzureAccountInUri(BackendConformance):
    @pytest.fixture
    def base_uri(self, az: tuple[Azurite, str]) -> str:
        return f"az://{az[1]}@{ACCOUNT}/{uuid.uuid4().hex}/"


class TestAzureStore(ObjectStoreConformance):
    plugin = dataio_azure.PLUGIN
    credentials, secrets = {"method": "shared_key", "account": ACCOUNT, "account_key": KEY}, (KEY,)

    @pytest.fixture
    def root(self, az: tuple[Azurite, str]) -> str:
        return f"az://{az[1]}/{uuid.uuid4().hex}"

    @pytest.fixture
    def refused_credentials(self, az: tuple[Azurite, str]) -> tuple[str, list[str]]:
        dataio.configure_credentials("az", method="shared_key", account=ACCOUNT, account_key=WRONG_KEY)
        return f"az://{az[1]}/{uuid.uuid4().hex}", [WRONG_KEY, KEY]


class TestAzurePlugin(PluginConformance):
    entry_point, package, schemes = "azure", "dataio-azure", ("az",)
