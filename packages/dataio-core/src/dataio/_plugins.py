"""The plugin registry: discovery, lazy loading and name conflicts.

Third-party plugins come from the ``dataio`` entry-point group and are
imported the first time something needs them. Everything a plugin offers
reaches the core through the hooks of :mod:`dataio.hookspecs`, called through
pluggy's hook callers (so pluggy's tracing and blocking apply); the core
never imports a plugin by name. Environment variables:

* ``DATAIO_DISABLE_PLUGINS`` — comma-separated entry-point or distribution
  names to skip (``all`` skips every third-party plugin).
* ``DATAIO_TRACE_PLUGINS=1`` — log plugin loading and every hook call (with
  the plugin it was made for) to stderr.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import pluggy

from . import hookspecs
from .errors import DataioError, PluginError, UnsupportedSchemeError

BUILTIN = "dataio.builtin"
V = TypeVar("V")


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


@dataclasses.dataclass(frozen=True)
class Registration(Generic[V]):
    """A name one plugin registered through a hook that registers objects by
    name: ``value`` is the device reader (``dataio_register_device_readers``),
    the namespace loader (``dataio_register_namespaces``) or the executor
    factory (``dataio_register_executors``)."""

    name: str
    plugin: str
    value: V
    description: str = ""


R = TypeVar("R", BackendRegistration, OpSpec, "Registration[Any]")


class _Registrar:
    """A ``register`` callable bound to one plugin. Its repr names the hook's
    kind and the plugin, which is what DATAIO_TRACE_PLUGINS prints for the
    ``register`` argument of each hook call."""

    __slots__ = ("_fn", "_label")

    def __init__(self, label: str, fn: Callable[..., None]) -> None:
        self._fn = fn
        self._label = label

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return self._label


def _disabled_names() -> set[str]:
    raw = os.environ.get("DATAIO_DISABLE_PLUGINS", "")
    return {n.strip() for n in raw.split(",") if n.strip()}


def _check_name(plugin: str, what: str, name: object) -> str:
    if not isinstance(name, str) or not name.isascii() or not name.isidentifier():
        raise PluginError(f"plugin {plugin!r} registered an invalid {what} name {name!r} (use a Python identifier)")
    return name


class PluginHost:
    """Owns the pluggy manager and everything plugins registered."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._pm: pluggy.PluginManager | None = None
        self._plugins: dict[str, PluginInfo] = {}
        self._backends: dict[str, BackendRegistration] = {}
        self._ops: dict[str, OpSpec] = {}
        self._device_readers: dict[str, Registration[hookspecs.DeviceReader]] = {}
        self._namespaces: dict[str, Registration[Callable[[], object]]] = {}
        self._namespace_objects: dict[str, object] = {}
        self._executors: dict[str, Registration[Callable[[], Any]]] = {}

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
        trace = pm.trace.root.get("plugins")  # writes only when tracing is on
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
                trace("disabled", ep.name, "(DATAIO_DISABLE_PLUGINS)")
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the others
                self._plugins[ep.name] = PluginInfo(ep.name, dist, version, "failed", f"{type(exc).__name__}: {exc}")
                trace("failed", ep.name, f"({type(exc).__name__}: {exc})")
                continue
            self._plugins[ep.name] = PluginInfo(ep.name, dist, version, "loaded")
            trace("loaded", ep.name, f"from {dist} {version}")
        self._collect(pm)
        return pm

    def _collect(self, pm: pluggy.PluginManager) -> None:
        self._call_each(pm, "dataio_register_backends", self._backend_registrar)
        self._call_each(pm, "dataio_register_ops", self._op_registrar)
        self._call_each(pm, "dataio_register_device_readers", self._device_reader_registrar)
        self._call_each(pm, "dataio_register_namespaces", self._namespace_registrar)
        self._call_each(pm, "dataio_register_executors", self._executor_registrar)

    @staticmethod
    def _call_each(pm: pluggy.PluginManager, hook_name: str, registrar: Callable[[str], Callable[..., None]]) -> None:
        """Calls ``hook_name`` once per implementing plugin, each with a
        ``register`` bound to that plugin (so a duplicate names both plugins).
        The calls go through pluggy's hook caller for a one-plugin subset, so
        tracing and any other hook-call monitoring see them."""
        impls = getattr(pm.hook, hook_name).get_hookimpls()
        for impl in impls:
            others = [other.plugin for other in impls if other is not impl]
            pm.subset_hook_caller(hook_name, remove_plugins=others)(register=registrar(impl.plugin_name))

    @staticmethod
    def _claim(table: dict[str, R], what: str, key: str, registration: R) -> None:
        """One rule for every kind of name: a name belongs to one plugin."""
        prior = table.get(key)
        if prior is not None and prior.plugin != registration.plugin:
            raise PluginError(
                f"{what} {key!r} is registered by two plugins: {prior.plugin!r} and {registration.plugin!r}; "
                f"uninstall one or block it with DATAIO_DISABLE_PLUGINS"
            )
        table[key] = registration

    def _backend_registrar(self, plugin: str) -> hookspecs.BackendRegistrar:
        def register(scheme: str, factory: Callable[[], object], *, description: str = "") -> None:
            if not isinstance(scheme, str) or not scheme.isascii() or not scheme[:1].isalpha():
                raise PluginError(f"plugin {plugin!r} registered an invalid scheme name {scheme!r}")
            if not callable(factory):
                raise PluginError(f"plugin {plugin!r}: the factory for scheme {scheme!r} is not callable")
            key = scheme.lower()
            self._claim(self._backends, "scheme", key, BackendRegistration(key, plugin, factory, description))

        return _Registrar(f"<backend registrar of plugin {plugin!r}>", register)

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
            self._claim(self._ops, "op", name, OpSpec(name, plugin, kind, dict(params or {}), fn, description))

        return _Registrar(f"<op registrar of plugin {plugin!r}>", register)

    def _named_registrar(
        self, table: dict[str, Registration[Any]], what: str, plugin: str, check: Callable[[str, object], str | None]
    ) -> Callable[..., None]:
        """The registrar of one plugin for a hook that registers an object by
        name; ``check(name, value)`` says what is wrong with ``value``, or None."""

        def register(name: str, value: object, *, description: str = "") -> None:
            _check_name(plugin, what, name)
            problem = check(name, value)
            if problem is not None:
                raise PluginError(f"plugin {plugin!r}: {problem}")
            self._claim(table, what, name, Registration(name, plugin, value, description))

        return _Registrar(f"<{what} registrar of plugin {plugin!r}>", register)

    def _device_reader_registrar(self, plugin: str) -> hookspecs.DeviceReaderRegistrar:
        def check(device_type: str, reader: object) -> str | None:
            missing = [m for m in ("read_safetensors", "info") if not callable(getattr(reader, m, None))]
            return f"the device reader for {device_type!r} has no {' or '.join(m + '()' for m in missing)}" if missing else None

        return self._named_registrar(self._device_readers, "device reader", plugin, check)

    def _namespace_registrar(self, plugin: str) -> hookspecs.NamespaceRegistrar:
        def check(name: str, loader: object) -> str | None:
            return None if callable(loader) else f"the loader of namespace dataio.{name} is not callable"

        return self._named_registrar(self._namespaces, "namespace", plugin, check)

    def _executor_registrar(self, plugin: str) -> hookspecs.ExecutorRegistrar:
        def check(name: str, factory: object) -> str | None:
            return None if callable(factory) else f"the factory of executor {name!r} is not callable"

        return self._named_registrar(self._executors, "executor", plugin, check)

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

    def device_readers(self) -> dict[str, Registration[hookspecs.DeviceReader]]:
        self.manager()
        return dict(self._device_readers)

    def device_reader(self, device_type: str) -> hookspecs.DeviceReader | None:
        """The reader a plugin registered for ``device_type`` (``"cuda"``), or None."""
        self.manager()
        reg = self._device_readers.get(device_type)
        return reg.value if reg is not None else None

    def namespaces(self) -> dict[str, Registration[Callable[[], object]]]:
        self.manager()
        return dict(self._namespaces)

    def namespace(self, name: str) -> object | None:
        """The object behind ``dataio.<name>``, made by its loader on first use; None
        when no plugin registered the name (see :meth:`failed_note` for why)."""
        reg = self.namespaces().get(name)
        if reg is None:
            return None
        with self._lock:
            if name not in self._namespace_objects:
                try:
                    self._namespace_objects[name] = reg.value()
                except (ImportError, DataioError):
                    raise  # the plugin is installed but broken: show the real error
                except Exception as exc:
                    raise PluginError(f"plugin {reg.plugin!r} failed to load dataio.{name}: {exc}") from exc
            return self._namespace_objects[name]

    def executors(self) -> dict[str, Registration[Callable[[], Any]]]:
        self.manager()
        return dict(self._executors)

    def executor(self, name: str) -> Callable[[], Any] | None:
        """The factory a plugin registered for ``run(executor=name)``, or None."""
        self.manager()
        reg = self._executors.get(name)
        return reg.value if reg is not None else None

    def failed_note(self) -> str:
        """``"; these plugins failed to load and may provide it: ..."`` or ``""``:
        the tail of a message about something no loaded plugin registered."""
        self.manager()
        failed = [p for p in self._plugins.values() if p.status == "failed"]
        if not failed:
            return ""
        return "; these plugins failed to load and may provide it: " + ", ".join(f"{p.name} ({p.detail})" for p in failed)

    def capability_rows(self) -> list[tuple[str, str, Mapping[str, Any]]]:
        pm = self.manager()
        rows: list[tuple[str, str, Mapping[str, Any]]] = []

        def registrar(plugin: str) -> hookspecs.CapabilityRegistrar:
            def register(name: str, probe: Callable[[], Mapping[str, Any]]) -> None:
                try:
                    row = dict(probe())
                except Exception as exc:  # noqa: BLE001 - a failing probe is its row's error, not the report's
                    row = {"status": "error", "detail": f"{type(exc).__name__}: {exc}"}
                rows.append((plugin, name, row))

            return _Registrar(f"<capability registrar of plugin {plugin!r}>", register)

        self._call_each(pm, "dataio_register_capabilities", registrar)
        return rows

    def resolve_scheme(self, scheme: str) -> object | None:
        """Creates the backend for ``scheme`` (called by the native registry on a miss)."""
        reg = self.backends().get(scheme)
        if reg is None:
            note = self.failed_note()
            if note:
                raise UnsupportedSchemeError(f"no backend for scheme {scheme!r}{note}")
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
            for table in (
                self._plugins,
                self._backends,
                self._ops,
                self._device_readers,
                self._namespaces,
                self._namespace_objects,
                self._executors,
            ):
                table.clear()


def _check_backend(reg: BackendRegistration, backend: object) -> None:
    from . import _native

    if isinstance(backend, _native.NativeBackend) or type(backend).__name__ == "PyCapsule":
        return
    missing = [m for m in hookspecs.REQUIRED_BACKEND_METHODS if not callable(getattr(backend, m, None))]
    if missing:
        raise PluginError(
            f"plugin {reg.plugin!r} returned {backend!r} for {reg.scheme}://, which is not a dataio backend "
            f"(missing {', '.join(m + '()' for m in missing)}); see dataio.hookspecs.PythonBackend"
        )


host = PluginHost()


def _resolver(scheme: str) -> object | None:
    return host.resolve_scheme(scheme)


def install_resolver() -> None:
    """Lets the native registry ask us for backends on first use of a scheme."""
    from . import _native

    _native.set_scheme_resolver(_resolver)
