"""Entry-point module of dataio-hf: registers its schemes and its report row."""

from __future__ import annotations

from dataio.errors import UnsupportedOperationError
from dataio.hookspecs import hookimpl

from . import __version__


def _not_ready(scheme: str):
    def factory() -> object:
        raise UnsupportedOperationError(
            f"{scheme}:// is served by dataio-hf {__version__}, whose backend is not implemented yet"
        )

    return factory


@hookimpl
def dataio_register_backends(register) -> None:
    for scheme in ['hf']:
        register(scheme, _not_ready(scheme), description="hf:// (Hugging Face Hub models, datasets, spaces) (not implemented yet)")


@hookimpl
def dataio_register_capabilities(register) -> None:
    register("dataio-hf", lambda: {"status": "not implemented yet", "detail": "hf:// (Hugging Face Hub models, datasets, spaces)", "schemes": ['hf']})
