"""Entry-point module of dataio-gcs: registers its schemes and its report row."""

from __future__ import annotations

from dataio.errors import UnsupportedOperationError
from dataio.hookspecs import hookimpl

from . import __version__


def _not_ready(scheme: str):
    def factory() -> object:
        raise UnsupportedOperationError(
            f"{scheme}:// is served by dataio-gcs {__version__}, whose backend is not implemented yet"
        )

    return factory


@hookimpl
def dataio_register_backends(register) -> None:
    for scheme in ['gs']:
        register(scheme, _not_ready(scheme), description="gs:// (Google Cloud Storage) (not implemented yet)")


@hookimpl
def dataio_register_capabilities(register) -> None:
    register("dataio-gcs", lambda: {"status": "not implemented yet", "detail": "gs:// (Google Cloud Storage)", "schemes": ['gs']})
