"""dataio-rdma registers itself and says honestly what it can do."""

from __future__ import annotations

import importlib.metadata

import dataio
from dataio.plugins import list_plugins
from dataio_rdma import _native


def test_registered_through_the_entry_point() -> None:
    names = {p.name: p for p in list_plugins()}
    info = names["rdma"]
    assert info.status == "loaded" and info.package == "dataio-rdma"
    assert info.version == importlib.metadata.version("dataio-rdma")


def test_reports_an_honest_status() -> None:
    rows = [p for p in dataio.capabilities.report()["plugins"] if p["name"] == "dataio-rdma"]
    assert rows
    usable, detail = _native.status()
    if usable:
        # libfabric loaded and a provider offers RMA: say which.
        assert rows[0]["status"] == "ok"
        assert "libfabric" in rows[0]["detail"] and "dataio.rdma" in rows[0]["detail"]
    else:
        assert rows[0]["status"] == "unavailable" and detail in rows[0]["detail"]
    assert rows[0]["schemes"] == []


def test_dataio_rdma_is_the_plugin_api() -> None:
    import dataio_rdma
    from dataio import rdma

    for name in dataio_rdma.__all__:
        if name != "__version__":
            assert getattr(rdma, name) is getattr(dataio_rdma, name)
    assert set(rdma.__all__) == set(dataio_rdma.__all__) - {"__version__"}
