"""The two RDMA-specific exceptions; every other failure raises the usual
``dataio.errors`` class (``OutOfRangeError``, ``AccessDeniedError``,
``TimeoutError``, ``InvalidArgumentError``, ``StorageError``)."""

from __future__ import annotations

import builtins

from dataio.errors import StorageError, UnsupportedOperationError

__all__ = ["RdmaDisconnectedError", "RdmaUnavailableError"]


class RdmaUnavailableError(UnsupportedOperationError):
    """libfabric cannot be loaded, or no provider offers what was asked
    (``rdma.diagnose()`` says why)."""


class RdmaDisconnectedError(StorageError, builtins.ConnectionError):
    """The peer went away (or refused the connection), or an earlier failed
    transfer broke this connection; connect again."""
