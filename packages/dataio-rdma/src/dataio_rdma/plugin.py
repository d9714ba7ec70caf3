"""Entry-point module of dataio-rdma: the ``rdma`` namespace (what
``dataio.rdma`` forwards to: this package) and its row of the capability
report.

The row is honest: status "ok" when libfabric loads and a provider offers
one-sided RMA (the detail names them), else status "unavailable" with the
reason as its detail (the report prints them side by side; the core's
report accepts these statuses, as for dataio-gds). It names no URI scheme;
the API is ``dataio.rdma``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from dataio.hookspecs import CapabilityRegistrar, NamespaceRegistrar, hookimpl


def api() -> ModuleType:
    """The object behind ``dataio.rdma``: this package, whose ``__all__`` is the API."""
    return sys.modules[__package__]


@hookimpl
def dataio_register_namespaces(register: NamespaceRegistrar) -> None:
    register("rdma", api, description="one-sided RDMA over libfabric")


def report() -> Mapping[str, Any]:
    from . import _native

    usable, detail = _native.status()
    if usable:
        return {"status": "ok", "detail": f"{detail}; exposed as dataio.rdma", "schemes": []}
    return {"status": "unavailable", "detail": f"{detail} (dataio.rdma)", "schemes": []}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-rdma", report)
