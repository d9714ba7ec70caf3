"""The stubs of dataio_rdma._native are the docs of the native layer: keep
them honest (mypy.stubtest, the same check the core's stubs get)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dataio.testing import require


def test_native_stubs_match_the_module() -> None:
    require("mypy")
    allowlist = Path(__file__).with_name("stubtest-allowlist.txt")
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "dataio_rdma._native", "--allowlist", str(allowlist)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
