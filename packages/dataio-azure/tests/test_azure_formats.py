"""Formats end to end against Azurite: a sharded safetensors checkpoint
written to az:// reads back equal to the local one tensor for tensor (and the
files are byte-identical), ``get_slice`` reads rows of a remote tensor, and
``glob("**/*.parquet")`` + ``read_parquet`` give what pyarrow gives on the
local files."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Azurite

torch = pytest.importorskip("torch")
from dataio.testing import FormatsConformance


class TestAzureFormats(FormatsConformance):
    @pytest.fixture
    def root(self, az: tuple[Azurite, str]) -> str:
        return f"az://{az[1]}/{uuid.uuid4().hex}"
