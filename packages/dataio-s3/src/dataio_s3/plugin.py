"""Entry-point module of dataio-s3: registers its schemes and its report row."""

from __future__ import annotations

from dataio.errors import UnsupportedOperationError
from dataio.hookspecs import hookimpl

from . import __version__


def _not_ready(scheme: str):
    def factory() -> object:
        raise UnsupportedOperationError(
            f"{scheme}:// is served by dataio-s3 {__version__}, whose backend is not implemented yet"
        )

    return factory


@hookimpl
def dataio_register_backends(register) -> None:
    for scheme in ['s3', 'r2']:
        register(scheme, _not_ready(scheme), description="s3:// and S3-compatible stores (R2, custom endpoints) (not implemented yet)")


@hookimpl
def dataio_register_capabilities(register) -> None:
    register("dataio-s3", lambda: {"status": "not implemented yet", "detail": "s3:// and S3-compatible stores (R2, custom endpoints)", "schemes": ['s3', 'r2']})
