"""dataio-gcs registers itself through the entry point and reports honestly."""

from __future__ import annotations

import importlib.metadata

import dataio
from dataio.plugins import list_plugins


def test_registered_through_the_entry_point() -> None:
    info = {p.name: p for p in list_plugins()}["gcs"]
    assert info.status == "loaded" and info.package == "dataio-gcs"
    assert info.version == importlib.metadata.version("dataio-gcs")


def test_reports_its_schemes() -> None:
    rows = [p for p in dataio.capabilities.report()["plugins"] if p["name"] == "dataio-gcs"]
    assert rows and rows[0]["status"] == "ok" and rows[0]["schemes"] == ["gs"]
