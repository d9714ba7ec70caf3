"""dataio's backend conformance suite against moto's S3 server, through the
native backend: once as s3:// and once as r2:// (an S3-compatible store
reached through configure_endpoint)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import dataio
import dataio_s3
import pytest
from conftest import S3Server, configure
from dataio.testing import BackendConformance


class TestS3Conformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, s3: S3Server) -> str:
        return f"s3://{s3.bucket}/{uuid.uuid4().hex}/"


class TestR2Conformance(BackendConformance):
    @pytest.fixture
    def base_uri(self, s3: S3Server) -> Iterator[str]:
        configure("r2", s3.endpoint)
        yield f"r2://{s3.bucket}/{uuid.uuid4().hex}/"
        dataio.config.reset("r2")
        dataio_s3.configure("r2", **dict.fromkeys(dataio_s3._settings.TUNING))


def test_the_backend_is_native(s3: S3Server) -> None:
    name, caps = dataio._native.backend_info(f"s3://{s3.bucket}/x")
    assert name == "dataio-s3"
    assert {"write", "streaming_write", "delete", "list", "glob", "ranged_read"} <= set(caps)
