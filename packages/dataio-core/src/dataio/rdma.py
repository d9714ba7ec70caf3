"""``dataio.rdma``: one-sided RDMA over libfabric, served by the
``dataio-rdma`` plugin (see :func:`dataio.plugins.install_hint`).

This module only forwards: the names below resolve, on first use, to those
of the object the plugin registered as the ``rdma`` namespace (the
``dataio_register_namespaces`` hook; dataio-rdma registers its package).
The core never imports the plugin itself. Importing this module never fails;
using it without the plugin raises an ImportError that says what to install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The API the plugin provides, declared (not defined) for type checkers and
# linters: annotations bind no value, so each name still reaches
# ``__getattr__`` below on first use. Signatures are the plugin's.
DEFAULT_CHUNK_SIZE: int
DEFAULT_MAX_INFLIGHT: int
Client: type[Any]
Server: type[Any]
RdmaDisconnectedError: type[Exception]
RdmaUnavailableError: type[Exception]
available: Callable[[], bool]
connect: Callable[..., Any]
diagnose: Callable[[], dict[str, Any]]
info: Callable[[], dict[str, Any]]
read: Callable[..., bytes]
read_into: Callable[..., int]
serve: Callable[..., Any]
serve_file: Callable[..., Any]
write: Callable[..., int]

#: Exactly the names declared above (the plugin's tests check that they are its API).
__all__ = sorted(__annotations__)

NAMESPACE = "rdma"


def _plugin() -> Any:
    from ._plugins import host
    from .plugins import install_hint

    api = host.namespace(NAMESPACE)
    if api is None:
        # A plugin that is installed but failed to load is named with its error.
        raise ImportError(
            "dataio.rdma needs the dataio-rdma plugin; install it with " + install_hint("dataio-rdma") + host.failed_note(),
            name="dataio_rdma",
        )
    return api


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'dataio.rdma' has no attribute {name!r}")
    value = getattr(_plugin(), name)
    globals()[name] = value  # resolve once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
