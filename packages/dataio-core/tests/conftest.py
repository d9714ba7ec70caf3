from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:12]


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)
