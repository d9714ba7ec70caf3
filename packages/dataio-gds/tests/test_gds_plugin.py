"""dataio-gds on a host without a GPU: honest status, clear refusals.
(The GPU paths are in test_gpu.py, which runs where CUDA is present.)"""

from __future__ import annotations

import torch

import dataio
from dataio.plugins import list_plugins


def test_registered_through_the_entry_point() -> None:
    info = {p.name: p for p in list_plugins()}["gds"]
    assert info.status == "loaded" and info.package == "dataio-gds"


def test_report_row_is_honest() -> None:
    row = [p for p in dataio.capabilities.report()["plugins"] if p["name"] == "dataio-gds"][0]
    from dataio_gds.cufile import probe

    p = probe()
    assert row["status"] == ("ok" if p["available"] else "unavailable")
    if not p["available"]:
        assert row["detail"], "an unavailable plugin must say why"


def test_gds_info_names_what_is_missing() -> None:
    info = dataio.gds_info()
    if torch.cuda.is_available():
        return
    assert info["available"] is False and dataio.gds_available() is False
    assert "CUDA" in info["reason"] or "cuFile" in info["reason"]
