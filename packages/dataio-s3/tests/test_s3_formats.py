"""Formats end to end against moto: a sharded safetensors checkpoint written
to s3:// reads back equal to the local one tensor for tensor (and the files
are byte-identical), ``get_slice`` reads rows of a remote tensor, and
``glob("**/*.parquet")`` + ``read_parquet`` give what pyarrow gives on the
local files."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import S3Server

torch = pytest.importorskip("torch")
from dataio.testing import FormatsConformance


class TestS3Formats(FormatsConformance):
    @pytest.fixture
    def root(self, s3: S3Server) -> str:
        return f"s3://{s3.bucket}/{uuid.uuid4().hex}"
