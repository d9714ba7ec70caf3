"""``dataio.rdma``: one-sided RDMA over libfabric, served by the
``dataio-rdma`` plugin (``pip install 'dataio[rdma]'``).

This module only forwards: the names below resolve, on first use, to the
plugin's (``dataio_rdma``). Importing it never fails; using it without the
plugin raises an ImportError that says what to install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see the plugin's names; at run time they resolve lazily
    from dataio_rdma import (  # type: ignore[import-not-found, unused-ignore]
        DEFAULT_CHUNK_SIZE,
        DEFAULT_MAX_INFLIGHT,
        Client,
        RdmaDisconnectedError,
        RdmaUnavailableError,
        Server,
        available,
        connect,
        diagnose,
        info,
        read,
        read_into,
        serve,
        serve_file,
        write,
    )

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_INFLIGHT",
    "Client",
    "RdmaDisconnectedError",
    "RdmaUnavailableError",
    "Server",
    "available",
    "connect",
    "diagnose",
    "info",
    "read",
    "read_into",
    "serve",
    "serve_file",
    "write",
]


def _plugin() -> Any:
    try:
        return importlib.import_module("dataio_rdma")
    except ImportError as e:
        if e.name not in ("dataio_rdma", None):
            raise  # the plugin is there but broken: show the real error
        raise ImportError(
            "dataio.rdma needs the dataio-rdma plugin: pip install 'dataio[rdma]'", name="dataio_rdma"
        ) from e


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'dataio.rdma' has no attribute {name!r}")
    value = getattr(_plugin(), name)
    globals()[name] = value  # resolve once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
