"""Entry-point module of dataio-gcs: registers gs:// and its report row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dataio.config
from dataio.hookspecs import BackendRegistrar, CapabilityRegistrar, hookimpl

from . import __version__

SCHEMES = {"gs": "Google Cloud Storage"}


def make_backend(scheme: str) -> object:
    """The native backend for ``scheme``, as a ``dataio.backend.v1`` capsule."""
    from . import _credentials, _native

    options, refresh = _credentials.resolve(scheme)
    return _native.backend(scheme, options, refresh)


def _factory(scheme: str):  # type: ignore[no-untyped-def]
    return lambda: make_backend(scheme)


@hookimpl
def dataio_register_backends(register: BackendRegistrar) -> None:
    for scheme, description in SCHEMES.items():
        register(scheme, _factory(scheme), description=description)


def report() -> Mapping[str, Any]:
    """Never shows a secret: only methods and endpoints (which hold none)."""
    from . import _native

    parts = [f"native object_store data path ({_native.__name__} {__version__})"]
    for scheme in SCHEMES:
        creds = dataio.config.get_credentials(scheme)
        endpoint = dataio.config.get_endpoint(scheme)
        method = creds.method if creds is not None else "default"
        parts.append(f"{scheme}: credentials {method}" + (f", endpoint {endpoint}" if endpoint else ""))
    return {"status": "ok", "detail": "; ".join(parts), "schemes": list(SCHEMES)}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-gcs", report)
