"""The hooks a dataio plugin implements.

A plugin is a module (or object) with functions marked ``@dataio.hookimpl``,
published under the ``dataio`` entry-point group::

    [project.entry-points.dataio]
    mystore = "dataio_mystore.plugin"

Plugins are loaded once, on first need (the first URI with an unknown scheme,
the first plan that names an unknown op, the capability report), never at
``import dataio``. Each hook receives a ``register`` callable; what a plugin
registers is keyed by name, and two plugins registering the same name is an
error that names both. The core registers its own local backend and native
ops through these same hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

import pluggy

__all__ = [
    "hookspec",
    "hookimpl",
    "BackendRegistrar",
    "OpRegistrar",
    "CapabilityRegistrar",
    "dataio_register_backends",
    "dataio_register_ops",
    "dataio_register_capabilities",
]

PROJECT = "dataio"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class BackendRegistrar(Protocol):
    def __call__(self, scheme: str, factory: Callable[[], object], *, description: str = "") -> None:
        """Declare that this plugin serves ``scheme://`` URIs.

        ``factory`` is called once, the first time a URI of the scheme is used,
        and returns the backend: a ``dataio.backend.v1`` capsule from the
        plugin's native module (fast path, no GIL per request), or any Python
        object with the methods of :class:`dataio.testing.PythonBackend`
        (correct but slower: the GIL is taken per call).
        """


class OpRegistrar(Protocol):
    def __call__(
        self,
        name: str,
        fn: Callable[..., Any] | None = None,
        *,
        kind: Literal["decode", "transform"],
        params: Mapping[str, Any] | None = None,
        description: str = "",
    ) -> None:
        """Declare a pipeline op named ``name``.

        ``fn`` is a Python implementation: for ``kind="decode"`` it receives
        the slot's raw ``bytes`` plus the op's parameters and returns a numpy
        array; for ``kind="transform"`` it receives and returns a numpy array.
        The executor takes the GIL for each call, so Python ops are correct but
        slow; the core's own ops are native and pass ``fn=None``.
        ``params`` maps each parameter name to its type (or a tuple of types)
        for plan validation.
        """


class CapabilityRegistrar(Protocol):
    def __call__(self, name: str, probe: Callable[[], Mapping[str, Any]]) -> None:
        """Add a row to the capability report (``python -m dataio``).

        ``probe`` runs only when the report is built and returns a mapping with
        ``status`` (``"ok"``, ``"unavailable"``, ``"not implemented yet"`` or
        ``"error"``) and optionally ``detail`` (the reason, a version, what was
        found) and ``schemes``. Never put a secret in it.
        """


@hookspec
def dataio_register_backends(register: BackendRegistrar) -> None:
    """Called once when plugins load; register URI-scheme backends."""


@hookspec
def dataio_register_ops(register: OpRegistrar) -> None:
    """Called once when plugins load; register pipeline ops and decoders."""


@hookspec
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    """Called when the capability report is built; register report rows."""
