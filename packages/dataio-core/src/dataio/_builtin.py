"""The core's built-in plugin: the local-file backend, the native ops, and the
core's rows of the capability report. Registered through the same hooks as
third-party plugins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from . import _native
from .hookspecs import BackendRegistrar, CapabilityRegistrar, OpRegistrar, hookimpl

VERSION: str = _native.__version__


@hookimpl
def dataio_register_backends(register: BackendRegistrar) -> None:
    register("file", _native.local_backend, description="local filesystem (plain paths and file:// URIs)")


@hookimpl
def dataio_register_ops(register: OpRegistrar) -> None:
    from ._ops import BUILTIN_OPS

    for spec in BUILTIN_OPS.values():
        kind = cast(Literal["decode", "transform"], spec.kind)  # BUILTIN_OPS leaves the batch ops out
        register(spec.name, None, kind=kind, params=spec.params, description=spec.description)


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    def core() -> Mapping[str, Any]:
        return {"status": "ok", "detail": f"native module {_native.__name__} {VERSION}", "schemes": ["file"]}

    register("dataio", core)
