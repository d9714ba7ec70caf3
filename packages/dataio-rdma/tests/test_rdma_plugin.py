"""dataio-rdma registers itself (its report row and the ``rdma`` namespace
behind ``dataio.rdma``) and says honestly what it can do."""

from __future__ import annotations

import dataio
from dataio.testing import PluginConformance
from dataio_rdma import _native


class TestRdmaPlugin(PluginConformance):
    entry_point = "rdma"
    package = "dataio-rdma"
    namespaces = ("rdma",)

    def expected_status(self) -> str:
        usable, _ = _native.status()
        return "ok" if usable else "unavailable"


def test_the_report_row_says_what_it_found() -> None:
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
