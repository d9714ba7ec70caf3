"""The plugin registry: discovery, lazy loading and name conflicts.

Third-party plugins come from the ``dataio`` entry-point group and are
imported the first time something needs them. Environment variables:

* ``DATAIO_DISABLE_PLUGINS`` — comma-separated entry-point or distribution
  names to skip (``all`` skips every third-party plugin).
* ``DATAIO_TRACE_PLUGINS=1`` — log hook calls to stderr.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from . import hookspecs
from .errors import DataioError, PluginError, UnsupportedSchemeError

__all__ = ["PluginInfo", "BackendRegistration", "OpSpec", "host"]

BUILTIN = "dataio.builtin"


@dataclasses.dataclass(frozen=True)
class PluginInfo:
    name: str
    package: str | None
    version: str | None
    status: str  # "loaded", "failed", "disabled"
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class BackendRegistration:
    scheme: str
    plugin: str
    factory: Callable[[], object]
    description: str = ""


@dataclasses.dataclass(frozen=True)
class OpSpec:
    name: str
    plugin: str
    kind: str
    params: Mapping[str, Any]
    fn: Callable[..., Any] | None
    description: str = ""

    @property
    def native(self) -> bool:
        return self.fn is None


def _disabled_names() -> set[str]:
    raw = os.environ.get("DATAIO_DISABLE_PLUGINS", "")
    return {n.strip() for n in raw.split(",") if n.strip()}


class PluginHost:
    """Owns the pluggy manager and everything plugins registered."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._pm: pluggy.PluginManager | None = None
        self._plugins: dict[str, PluginInfo] = {}
        self._backends: dict[str, BackendRegistration] = {}
        self._ops: dict[str, OpSpec] = {}

    # -- loading ----------------------------------------------------------

    def manager(self) -> pluggy.PluginManager:
        with self._lock:
            if self._pm is None:
                self._pm = self._load()
            return self._pm

    def _load(self) -> pluggy.PluginManager:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        if os.environ.get("DATAIO_TRACE_PLUGINS"):
            pm.trace.root.setwriter(sys.stderr.write)
            pm.enable_tracing()
        from . import _builtin

        pm.register(_builtin, name=BUILTIN)
        self._plugins[BUILTIN] = PluginInfo(BUILTIN, "dataio", _builtin.VERSION, "loaded")
        disabled = _disabled_names()
        for ep in sorted(importlib.metadata.entry_points(group=hookspecs.PROJECT), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            if ep.name in self._plugins:
                continue
            if "all" in disabled or ep.name in disabled or (dist and dist in disabled):
                pm.set_blocked(ep.name)
                self._plugins[ep.name] = PluginInfo(ep.name, dist, version, "disabled", "DATAIO_DISABLE_PLUGINS")
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not break the others
                self._plugins[ep.name] = PluginInfo(ep.name, dist, version, "failed", f"{type(exc).__name__}: {exc}")
                continue
            self._plugins[ep.name] = PluginInfo(ep.name, dist, version, "loaded")
        self._collect(pm)
        return pm

    def _collect(self, pm: pluggy.PluginManager) -> None:
        for impl in pm.hook.dataio_register_backends.get_hookimpls():
            impl.function(register=self._backend_registrar(impl.plugin_name))
        for impl in pm.hook.dataio_register_ops.get_hookimpls():
            impl.function(register=self._op_registrar(impl.plugin_name))

    def _backend_registrar(self, plugin: str) -> hookspecs.BackendRegistrar:
        def register(scheme: str, factory: Callable[[], object], *, description: str = "") -> None:
            if not isinstance(scheme, str) or not scheme.isascii() or not scheme[:1].isalpha():
                raise PluginError(f"plugin {plugin!r} registered an invalid scheme name {scheme!r}")
            if not callable(factory):
                raise PluginError(f"plugin {plugin!r}: the factory for scheme {scheme!r} is not callable")
            key = scheme.lower()
            prior = self._backends.get(key)
            if prior is not None and prior.plugin != plugin:
                raise PluginError(
                    f"scheme {key!r} is registered by two plugins: {prior.plugin!r} and {plugin!r}; "
                    f"uninstall one or block it with DATAIO_DISABLE_PLUGINS"
                )
            self._backends[key] = BackendRegistration(key, plugin, factory, description)

        return register

    def _op_registrar(self, plugin: str) -> hookspecs.OpRegistrar:
        def register(
            name: str,
            fn: Callable[..., Any] | None = None,
            *,
            kind: str,
            params: Mapping[str, Any] | None = None,
            description: str = "",
        ) -> None:
            if kind not in ("decode", "transform"):
                raise PluginError(f"plugin {plugin!r}: op {name!r} has kind {kind!r}; use 'decode' or 'transform'")
            if fn is None and plugin != BUILTIN:
                raise PluginError(f"plugin {plugin!r}: op {name!r} needs a Python implementation (fn=)")
            prior = self._ops.get(name)
            if prior is not None and prior.plugin != plugin:
                raise PluginError(f"op {name!r} is registered by two plugins: {prior.plugin!r} and {plugin!r}")
            self._ops[name] = OpSpec(name, plugin, kind, dict(params or {}), fn, description)

        return register

    # -- queries ------------------------------------------------------------

    def plugins(self) -> list[PluginInfo]:
        self.manager()
        return list(self._plugins.values())

    def backends(self) -> dict[str, BackendRegistration]:
        self.manager()
        return dict(self._backends)

    def ops(self) -> dict[str, OpSpec]:
        self.manager()
        return dict(self._ops)

    def op(self, name: str) -> OpSpec | None:
        self.manager()
        return self._ops.get(name)

    def capability_rows(self) -> list[tuple[str, str, Mapping[str, Any]]]:
        pm = self.manager()
        rows: list[tuple[str, str, Mapping[str, Any]]] = []
        for impl in pm.hook.dataio_register_capabilities.get_hookimpls():
            collected: list[tuple[str, Callable[[], Mapping[str, Any]]]] = []
            impl.function(register=lambda name, probe: collected.append((name, probe)))
            for name, probe in collected:
                try:
                    row = dict(probe())
                except Exception as exc:
                    row = {"status": "error", "detail": f"{type(exc).__name__}: {exc}"}
                rows.append((impl.plugin_name, name, row))
        return rows

    def resolve_scheme(self, scheme: str) -> object | None:
        """Creates the backend for ``scheme`` (called by the native registry on a miss)."""
        reg = self.backends().get(scheme)
        if reg is None:
            failed = [p for p in self._plugins.values() if p.status == "failed"]
            if failed:
                names = ", ".join(f"{p.name} ({p.detail})" for p in failed)
                raise UnsupportedSchemeError(
                    f"no backend for scheme {scheme!r}; these plugins failed to load and may provide it: {names}"
                )
            return None
        try:
            backend = reg.factory()
        except Exception as exc:
            if isinstance(exc, DataioError):
                raise
            raise PluginError(f"plugin {reg.plugin!r} failed to create the backend for {scheme}://: {exc}") from exc
        _check_backend(reg, backend)
        return backend

    def reset(self) -> None:
        """Forget everything (tests only)."""
        from . import _native

        with self._lock:
            for scheme in list(self._backends):
                _native.unregister_backend(scheme)
            self._pm = None
            self._plugins.clear()
            self._backends.clear()
            self._ops.clear()


_REQUIRED_METHODS = ("head", "read_range", "list", "exists")


def _check_backend(reg: BackendRegistration, backend: object) -> None:
    from . import _native

    if isinstance(backend, _native.NativeBackend) or type(backend).__name__ == "PyCapsule":
        return
    missing = [m for m in _REQUIRED_METHODS if not callable(getattr(backend, m, None))]
    if missing:
        raise PluginError(
            f"plugin {reg.plugin!r} returned {backend!r} for {reg.scheme}://, which is not a dataio backend "
            f"(missing {', '.join(m + '()' for m in missing)}); see dataio.testing.PythonBackend"
        )


host = PluginHost()


def _resolver(scheme: str) -> object | None:
    return host.resolve_scheme(scheme)


def install_resolver() -> None:
    """Lets the native registry ask us for backends on first use of a scheme."""
    from . import _native

    _native.set_scheme_resolver(_resolver)


def module_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def import_optional(name: str) -> Any:
    """Imports a module, returning None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
