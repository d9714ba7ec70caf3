"""Public access to the plugin registry.

Most users never touch this: plugins are discovered from the ``dataio``
entry-point group. Scripts and tests can register a backend directly with
:func:`register_backend`; it goes through the same duplicate checks.
"""

from __future__ import annotations

from collections.abc import Callable

from ._plugins import BackendRegistration, OpSpec, PluginInfo, host

__all__ = ["PluginInfo", "BackendRegistration", "OpSpec", "list_plugins", "list_backends", "list_ops", "register_backend", "plugin_manager"]

RUNTIME = "<runtime>"


def list_plugins() -> list[PluginInfo]:
    """Every plugin seen: loaded, failed (with the reason) or disabled."""
    return host.plugins()


def list_backends() -> dict[str, BackendRegistration]:
    """Registered schemes and the plugin that serves each."""
    return host.backends()


def list_ops() -> dict[str, OpSpec]:
    """Registered pipeline ops (built-in native ones and plugins' Python ones)."""
    return host.ops()


def register_backend(scheme: str, backend: object | Callable[[], object], *, plugin: str = RUNTIME) -> None:
    """Serve ``scheme://`` with ``backend`` (an object, a capsule, or a zero-argument factory)."""
    factory = backend if callable(backend) and not hasattr(backend, "head") else (lambda: backend)
    host.manager()
    host._backend_registrar(plugin)(scheme, factory)


def plugin_manager():  # -> pluggy.PluginManager
    """The underlying pluggy manager (loads plugins if they are not loaded yet)."""
    return host.manager()
