"""Formats end to end against fake-gcs-server (behind the XML-API front): a
sharded safetensors checkpoint written to gs:// reads back equal to the local
one tensor for tensor (and the files are byte-identical), ``get_slice`` reads
rows of a remote tensor, and ``glob("**/*.parquet")`` + ``read_parquet`` give
what pyarrow gives on the local files."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import FakeGcs

torch = pytest.importorskip("torch")
from dataio.testing import FormatsConformance


class TestGCSFormats(FormatsConformance):
    @pytest.fixture
    def root(self, gcs: tuple[FakeGcs, str]) -> str:
        return f"gs://{gcs[1]}/{uuid.uuid4().hex}"
