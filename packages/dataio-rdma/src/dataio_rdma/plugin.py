"""Entry-point module of dataio-rdma: its row of the capability report.

The row is honest: status "ok" when libfabric loads and a provider offers
one-sided RMA (the detail names them), else status "unavailable" with the
reason as its detail (the report prints them side by side; the core's
report accepts these statuses, as for dataio-gds). It names no URI scheme;
the API is ``dataio.rdma``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataio.hookspecs import CapabilityRegistrar, hookimpl


def report() -> Mapping[str, Any]:
    from . import _native

    usable, detail = _native.status()
    if usable:
        return {"status": "ok", "detail": f"{detail}; exposed as dataio.rdma", "schemes": []}
    return {"status": "unavailable", "detail": f"{detail} (dataio.rdma)", "schemes": []}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-rdma", report)
