"""Loading: libfabric is found with dlopen at first use, so importing
dataio.rdma works without it and every entry point says why it cannot run;
dataio.rdma without the plugin names the package to install. info() and
diagnose() report what the host offers."""

from __future__ import annotations

import json
import subprocess
import sys

from dataio import rdma
from dataio.plugins import install_hint


def _python(code: str, **env: str) -> dict:
    import os

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_libfabric_everything_says_why() -> None:
    # DATAIO_LIBFABRIC names the only library file to try: a missing one
    # stands for a host without libfabric.
    result = _python(
        """
import json
import dataio, dataio.rdma as rdma
from dataio.errors import UnsupportedOperationError
out = {"available": rdma.available(), "info": rdma.info(), "summary": rdma.diagnose()["summary"]}
try:
    rdma.serve("127.0.0.1:0", buffer_size=10)
except UnsupportedOperationError as e:
    out["serve"] = [type(e).__name__, str(e)]
try:
    rdma.connect("127.0.0.1:1")
except UnsupportedOperationError as e:
    out["connect"] = type(e).__name__
out["row"] = [r for r in dataio.capabilities.report()["plugins"] if r["name"] == "dataio-rdma"][0]
print(json.dumps(out))
""",
        DATAIO_LIBFABRIC="/nonexistent/libfabric.so.1",
    )
    assert result["available"] is False
    assert result["info"]["libfabric"]["loaded"] is False
    assert "/nonexistent/libfabric.so.1" in result["info"]["libfabric"]["reason"]
    assert result["summary"][0].startswith("libfabric: not loaded")
    assert any(line.startswith("plain RMA: no") for line in result["summary"])
    assert result["serve"][0] == "RdmaUnavailableError" and "libfabric could not be loaded" in result["serve"][1]
    assert result["connect"] == "RdmaUnavailableError"
    assert result["row"]["status"] == "unavailable"
    assert result["row"]["detail"].startswith("libfabric could not be loaded")


def test_dataio_rdma_without_the_plugin_names_the_package() -> None:
    result = _python(
        """
import json, sys
sys.modules["dataio_rdma"] = None  # as if dataio-rdma were not installed
import dataio.rdma as rdma  # importing still works
try:
    rdma.serve
except ImportError as e:
    print(json.dumps({"error": str(e)}))
"""
    )
    assert install_hint("dataio-rdma") in result["error"]


def test_info_lists_providers(libfabric: dict) -> None:
    info = rdma.info()
    assert info["libfabric"]["loaded"] and info["libfabric"]["version"] == libfabric["version"]
    names = {p["name"] for p in info["providers"]}
    assert "tcp;ofi_rxm" in names
    tcp = next(p for p in info["providers"] if p["name"] == "tcp;ofi_rxm")
    assert tcp["rma"] and not tcp["hardware"] and tcp["ep_type"] == "FI_EP_RDM"
    assert {"FI_RMA", "FI_READ", "FI_WRITE", "FI_REMOTE_READ", "FI_REMOTE_WRITE"} <= set(tcp["caps"])
    assert rdma.available() == any(p["hardware"] for p in info["providers"])


def test_diagnose_runs_the_real_opens(libfabric: dict) -> None:
    d = rdma.diagnose()
    lines = d["summary"]
    assert lines[0].startswith(f"libfabric {libfabric['version']} loaded from")
    rma_line = next(line for line in lines if line.startswith("plain RMA:"))
    assert d["rma"]["ok"], rma_line
    assert "wrote and read it back" in rma_line
    hmem_line = next(line for line in lines if line.startswith("HMEM (GPUDirect):"))
    assert ("works" in hmem_line) == d["hmem"]["ok"]
    if not d["hmem"]["ok"]:
        assert d["hmem"]["reason"] and d["hmem"]["reason"] in hmem_line
    assert any(line.startswith("available(): ") for line in lines)


def test_fi_provider_restricts_the_choice(libfabric: dict) -> None:
    result = _python(
        "import json, dataio.rdma as rdma; i = rdma.info(); print(json.dumps([i['selected'], i['fi_provider']]))",
        FI_PROVIDER="sockets",
    )
    assert result == ["sockets", "sockets"]
