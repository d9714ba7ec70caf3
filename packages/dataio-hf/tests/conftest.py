"""Fixtures of the dataio-hf tests: a local Hub server (``_hub.FakeHub``)
started at collection time, because huggingface_hub reads ``HF_ENDPOINT``
once at import and the endpoint must be set before that."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _hub import FakeHub

HUB = FakeHub()
os.environ["HF_ENDPOINT"] = HUB.endpoint
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
os.environ.pop("HF_TOKEN", None)

import dataio  # noqa: E402 - after HF_ENDPOINT is set


@pytest.fixture(scope="session")
def hub() -> Iterator[FakeHub]:
    yield HUB
    HUB.stop()


@pytest.fixture
def hf(hub: FakeHub) -> Iterator[FakeHub]:
    dataio.config.reset("hf")
    dataio.configure_credentials("hf", method="anonymous")
    yield hub
    dataio.config.reset("hf")
