"""dataio-hf registers itself and says honestly what it can do."""

from __future__ import annotations

import importlib.metadata

import pytest

import dataio
from dataio.plugins import list_plugins


def test_registered_through_the_entry_point() -> None:
    names = {p.name: p for p in list_plugins()}
    info = names["hf"]
    assert info.status == "loaded" and info.package == "dataio-hf"
    assert info.version == importlib.metadata.version("dataio-hf")


def test_reports_an_honest_status() -> None:
    rows = [p for p in dataio.capabilities.report()["plugins"] if p["name"] == "dataio-hf"]
    assert rows and rows[0]["status"] == "not implemented yet"


@pytest.mark.parametrize("scheme", ['hf'])
def test_schemes_fail_clearly_until_implemented(scheme: str) -> None:
    with pytest.raises(dataio.errors.UnsupportedOperationError, match="not implemented yet"):
        dataio.read(f"{scheme}://bucket/key")
