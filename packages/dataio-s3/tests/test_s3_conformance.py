"""moto's S3 server through the native backend, against the core's
conformance suites: the object-store suite (storage contract, formats,
errors, secrets) as s3://, the storage contract again as r2:// (an
S3-compatible store reached through configure_endpoint), and the plugin's
registration and report row."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import ACCESS_KEY, SECRET_KEY, S3Server, configure, unconfigure

import dataio_s3
from dataio.testing import BackendConformance, ObjectStoreConformance, PluginConformance


class TestR2Conformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, s3: S3Server) -> Iterator[str]:
        configure("r2", s3.endpoint)
        yield f"r2://{s3.bucket}/{uuid.uuid4().hex}/"
        unconfigure("r2")


class TestS3Store(ObjectStoreConformance):
    plugin = dataio_s3.PLUGIN
    credentials = {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY}
    secrets = (SECRET_KEY, ACCESS_KEY)

    @pytest.fixture
    def root(self, s3: S3Server) -> str:
        return f"s3://{s3.bucket}/{uuid.uuid4().hex}"

    @pytest.fixture
    def refused_credentials(self, authenticating_moto: str) -> Iterator[tuple[str, list[str]]]:
        configure("s3", authenticating_moto)  # keys this server has never heard of
        yield "s3://some-bucket/some", [SECRET_KEY]
        unconfigure("s3")


class TestS3Plugin(PluginConformance):
    entry_point, package, schemes = "s3", "dataio-s3", ("s3", "r2")
