"""Every script under examples/ runs, on the small data it makes itself.

Each example runs in its own interpreter (as a user would run it) and must
exit 0 and print ``<name>: OK``. An example that needs a plugin says so with
a ``# requires-plugin: NAME`` line; it is skipped only while that plugin's
row in ``dataio.capabilities.report()`` is missing or not ``ok`` — the skip
message quotes the row — so it runs as soon as the plugin is available.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
REQUIRES = re.compile(r"^# requires-plugin: (\S+)\s*$", re.MULTILINE)


def required_plugins(path: Path) -> list[str]:
    return REQUIRES.findall(path.read_text())


def plugin_row(name: str) -> dict | None:
    import dataio

    return next((r for r in dataio.capabilities.report()["plugins"] if r["name"] == name), None)


def test_there_are_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert {"multi_slot_pipeline.py", "safetensors_latents.py", "conditional_slots.py", "sharded_resume.py", "s3_pipeline.py", "rdma_checkpoint.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, tmp_path: Path) -> None:
    for plugin in required_plugins(path):
        row = plugin_row(plugin)
        if row is None:
            pytest.skip(f"{path.name} needs {plugin}, which is not installed in this environment")
        if row["status"] != "ok":
            pytest.skip(f"{path.name} needs {plugin}, which reports itself {row['status']!r}: {row['detail']}")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{path.name} exited with {proc.returncode}:\n{out[-4000:]}"
    assert f"{path.stem}: OK" in proc.stdout, f"{path.name} did not report OK:\n{out[-4000:]}"
