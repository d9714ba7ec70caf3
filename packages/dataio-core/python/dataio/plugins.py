"""Public access to the plugin registry.

Most users never touch this: plugins are discovered from the ``dataio``
entry-point group. Scripts and tests can register a backend directly with
:func:`register_backend`; it goes through the same duplicate checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._plugins import BackendRegistration, OpSpec, PluginInfo, host

__all__ = [
    "PluginInfo",
    "BackendRegistration",
    "OpSpec",
    "SchemeOptions",
    "OBJECT_STORE_TUNING",
    "list_plugins",
    "list_backends",
    "list_ops",
    "register_backend",
    "plugin_manager",
]

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


#: The tuning keys the shared object-store backend (``crates/dataio-objstore``,
#: under dataio-s3, dataio-gcs and dataio-azure) reads, with what they mean.
#: A plugin on that backend starts its own ``TUNING`` table from this one.
OBJECT_STORE_TUNING: dict[str, str] = {
    "max_retries": "retries of one request on throttling, 5xx and connection errors (default 10)",
    "retry_timeout": "seconds after which a request stops being retried (default 180)",
    "backoff_initial": "first backoff in seconds (default 0.1; doubles up to backoff_max)",
    "backoff_max": "longest backoff in seconds (default 15)",
    "timeout": "seconds one request may take, body included (e.g. '30s' or 30)",
    "connect_timeout": "seconds to establish a connection",
    "part_size": "bytes per multipart part; streaming writes below it are one PUT (default 8 MiB, min 5 MiB)",
    "max_part_uploads": "parts uploaded in parallel by one streaming write (default 8)",
}


class SchemeOptions:
    """Per-scheme tuning options a backend plugin accepts through its own
    ``configure(scheme, **options)``: checked against the documented keys,
    merged over earlier calls, and applied by dropping the cached backend so
    the next use of the scheme builds one with them.

    ``durations`` names the keys given in seconds that the native side wants
    as ``"30s"`` strings."""

    def __init__(self, package: str, known: Mapping[str, str], durations: Iterable[str] = ()) -> None:
        self.package = package
        self.known = dict(known)
        self.durations = frozenset(durations)
        self._lock = threading.Lock()
        self._options: dict[str, dict[str, Any]] = {}

    def configure(self, scheme: str, **options: Any) -> dict[str, Any]:
        from . import _native
        from .errors import InvalidArgumentError

        unknown = sorted(set(options) - set(self.known))
        if unknown:
            raise InvalidArgumentError(f"unknown {self.package} options {unknown}; known: {sorted(self.known)}")
        scheme = scheme.lower().removesuffix("://")
        with self._lock:
            merged = {**self._options.get(scheme, {}), **options}
            self._options[scheme] = {k: v for k, v in merged.items() if v is not None}
            current = dict(self._options[scheme])
        _native.unregister_backend(scheme)  # the next use builds a backend with these
        return current

    def options(self, scheme: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._options.get(scheme, {}))

    def native(self, scheme: str) -> dict[str, Any]:
        """The options as the native side reads them (durations as ``"30s"``)."""
        return {k: (f"{float(v)}s" if k in self.durations and isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in self.options(scheme).items()}
