"""Entry-point module of dataio-gds: registers its schemes and its report row."""

from __future__ import annotations

from dataio.errors import UnsupportedOperationError
from dataio.hookspecs import hookimpl

from . import __version__


@hookimpl
def dataio_register_capabilities(register) -> None:
    register("dataio-gds", lambda: {"status": "not implemented yet", "detail": "GPUDirect Storage (cuFile) reads for device='cuda:N'", "schemes": []})
