"""Entry-point module of dataio-hf: registers hf:// and its report row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dataio.config
from dataio.errors import InvalidArgumentError
from dataio.hookspecs import BackendRegistrar, CapabilityRegistrar, hookimpl

from . import __version__


def make_backend() -> object:
    """Token: ``configure_credentials("hf", token=...)`` (or ``method="token"``);
    ``method="default"`` (or nothing) uses huggingface_hub's standard places
    (``HF_TOKEN``, the token file of ``hf auth login``); ``"anonymous"`` sends
    none. Endpoint: ``configure_endpoint("hf", url)``, else ``HF_ENDPOINT``."""
    from .backend import HfBackend

    creds = dataio.config.get_credentials("hf")
    method = creds.method if creds is not None else "default"
    token: str | bool | None
    if method == "anonymous":
        token = False
    elif method in ("token", "explicit"):
        token = creds.get("token") if creds is not None else None
        if not token:
            raise InvalidArgumentError("hf:// credentials need token=")
    elif method == "default":
        token = None
    else:
        raise InvalidArgumentError(f"hf:// does not support credentials method {method!r}")
    return HfBackend(dataio.config.get_endpoint("hf"), token)


@hookimpl
def dataio_register_backends(register: BackendRegistrar) -> None:
    register("hf", make_backend, description="Hugging Face Hub: models, datasets, spaces; @revision")


def report() -> Mapping[str, Any]:
    from .backend import HfBackend  # noqa: F401 - checks huggingface_hub imports

    creds = dataio.config.get_credentials("hf")
    endpoint = dataio.config.get_endpoint("hf")
    detail = f"huggingface_hub backend (dataio-hf {__version__}); credentials {creds.method if creds else 'default'}"
    if endpoint:
        detail += f", endpoint {endpoint}"
    return {"status": "ok", "detail": detail, "schemes": ["hf"]}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-hf", report)
