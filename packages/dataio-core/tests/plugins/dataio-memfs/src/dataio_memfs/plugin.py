"""The plugin module named by the ``dataio`` entry point."""

from __future__ import annotations

import dataio

from . import STORE


@dataio.hookimpl
def dataio_register_backends(register):
    register("mem", lambda: STORE, description="process-local memory (test fixture)")


@dataio.hookimpl
def dataio_register_capabilities(register):
    register("dataio-memfs", lambda: {"status": "ok", "detail": "pure-Python backend", "schemes": ["mem"]})
