"""Entry-point module of dataio-hf: registers hf:// and its report row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataio.config import get_settings
from dataio.errors import InvalidArgumentError
from dataio.hookspecs import BackendRegistrar, CapabilityRegistrar, hookimpl

from . import __version__


def make_backend() -> object:
    """Token: ``configure_credentials("hf", token=...)`` (or ``method="token"``);
    ``method="default"`` (or nothing) uses huggingface_hub's standard places
    (``HF_TOKEN``, the token file of ``hf auth login``); ``"anonymous"`` sends
    none. Endpoint: ``configure_endpoint("hf", url)``, else ``HF_ENDPOINT``."""
    from .backend import HfBackend

    settings = get_settings("hf")
    token: str | bool | None
    if settings.method == "anonymous":
        token = False
    elif settings.method in ("token", "explicit"):
        token = settings.values.get("token")
        if not token:
            raise InvalidArgumentError("hf:// credentials need token=")
    elif settings.method == "default":
        token = None
    else:
        raise settings.unsupported_method()
    return HfBackend(settings.endpoint, token)


@hookimpl
def dataio_register_backends(register: BackendRegistrar) -> None:
    register("hf", make_backend, description="Hugging Face Hub: models, datasets, spaces; @revision")


def report() -> Mapping[str, Any]:
    from .backend import HfBackend  # noqa: F401 - checks huggingface_hub imports

    settings = get_settings("hf")
    detail = f"huggingface_hub backend (dataio-hf {__version__}); credentials {settings.method}"
    if settings.endpoint:
        detail += f", endpoint {settings.endpoint}"
    return {"status": "ok", "detail": detail, "schemes": ["hf"]}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-hf", report)
