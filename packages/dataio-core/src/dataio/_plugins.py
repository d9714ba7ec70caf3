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

One plugin's mistake never disables the others: a plugin that fails to
import, or whose hook raises, is reported as failed and the others load; a
name two plugins register is served by neither, and using it raises a
:class:`PluginError` naming both. What is wrong with an installed plugin
that loads (a hook name dataio does not know, a hook function without
``@hookimpl``, a module that implements no hook, an entry point in a group
that is not ``dataio``) is a :class:`PluginProblem`: warned about at load
(:class:`PluginWarning`), traced, shown by ``python -m dataio``, and named
by the error of a scheme or op nothing serves.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import pluggy

from . import _native, hookspecs
from ._ops import Param
from .errors import DataioError, PluginError, UnsupportedSchemeError

BUILTIN = "dataio.builtin"
_NEITHER = "; until then neither serves it"
V = TypeVar("V")

#: The hooks of :mod:`dataio.hookspecs`, by name.
#: Sections of ``loader.stats()`` the core fills itself: no plugin may register them.
CORE_STATS_SECTIONS = frozenset({"source", "sources", "pack", "source_reads"})
HOOK_NAMES: tuple[str, ...] = tuple(n for n in hookspecs.__all__ if n.startswith("dataio_register_"))

#: The URI schemes that the backend plugins shipped with dataio register,
#: with the distribution of each: what a scheme is known by before its
#: plugin is installed or loaded (``install_hint("gs")``). The engine holds
#: the table (``_native.shipped_schemes``); tests hold it to what the
#: installed packages register and to the engine's hints.
SHIPPED_SCHEMES: dict[str, str] = dict(_native.shipped_schemes()[0])
#: Of those, the object stores that take an endpoint (``configure_endpoint``
#: takes these, or a scheme a third-party backend serves): every one but
#: http and https, whose URLs name their own server.
ENDPOINT_SCHEMES: dict[str, str] = {s: d for s, d in SHIPPED_SCHEMES.items() if s not in _native.shipped_schemes()[2]}
#: Other tools' names for those stores (``s3a``, ``gcs``, ``abfs``, ...),
#: with the scheme dataio takes: refused, naming that spelling.
SCHEME_ALIASES: dict[str, str] = dict(_native.shipped_schemes()[1])


#: What a :class:`PluginProblem` is about.
PROBLEM_KINDS: tuple[str, ...] = (
    "unknown hook",  # a @hookimpl whose name is no dataio hook (misspelled)
    "missing hookimpl",  # a hook-named function without @dataio.hookimpl
    "no hook",  # a module under the dataio group that implements no hook
    "hook failed",  # a hook raised while plugins loaded: the plugin is failed
    "conflict",  # a name another plugin registers too (or one of the core's)
    "entry-point group",  # an entry point in a group that looks like dataio's but is not
    "duplicate entry point",  # two distributions publish the same entry-point name
)


#: The kinds of problem that also go into the plugin's detail (the others are
#: about another distribution's entry point, or set the detail themselves).
_DETAIL_KINDS = frozenset({"unknown hook", "missing hookimpl", "no hook", "conflict", "native op"})


class PluginWarning(UserWarning):
    """An installed plugin has a problem that makes dataio ignore some or all
    of it (see :class:`PluginProblem`); warned once, when plugins load."""


@dataclasses.dataclass(frozen=True)
class PluginProblem:
    """Something wrong with an installed plugin that does not stop the others
    from loading: a hook name dataio does not know, a hook function without
    ``@dataio.hookimpl``, a module that implements no hook, a hook that
    raised, a name another plugin registers too, or an entry point in a group
    that is not ``dataio``. ``plugin`` is the entry-point name; ``kind`` one
    of :data:`PROBLEM_KINDS`."""

    kind: str
    plugin: str
    package: str | None
    version: str | None
    message: str

    @property
    def label(self) -> str:
        return _label(self.plugin, self.package, self.version)

    def __str__(self) -> str:
        return f"{self.label}: {self.message}"


def _label(plugin: str, package: str | None, version: str | None) -> str:
    """``'kv' (dataio-kv 0.1)``: a plugin with its distribution."""
    dist = " ".join(x for x in (package, version) if x)
    return f"{plugin!r} ({dist})" if dist else repr(plugin)


def _nearest_hook(name: str) -> str:
    """`` (did you mean dataio_register_backends?)`` or ``""``."""
    close = difflib.get_close_matches(name, HOOK_NAMES, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _looks_like_our_group(group: str) -> bool:
    """An entry-point group that is not ``dataio`` but probably meant it
    (``dataio.plugins``, ``dataio_backends``, ``Dataio``, ``data-io``)."""
    if group == hookspecs.PROJECT:
        return False
    flat = re.sub(r"[-_.\s]", "", group.lower())
    return flat.startswith(hookspecs.PROJECT) or difflib.SequenceMatcher(None, flat, hookspecs.PROJECT).ratio() >= 0.8


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


def _is_capsule(obj: object) -> bool:
    return type(obj).__name__ == "PyCapsule"


def tensor_words(declared: Mapping[str, Any]) -> str:
    """A declared output or input (``{"dtype": "float32", "ndim": 2}``) in
    words: "float32 with 2 dimensions" (the engine says it the same way)."""
    dtype, ndim = declared.get("dtype"), declared.get("ndim")
    return f"{dtype or 'any dtype'} with {ndim if ndim is not None else 'any number of'} dimensions"


@dataclasses.dataclass(frozen=True)
class OpSpec:
    name: str
    plugin: str
    kind: str
    params: Mapping[str, Any]
    fn: Callable[..., Any] | None
    description: str = ""
    #: A plugin's native table (a ``dataio.op.v2`` or ``v1`` capsule; adopted by the
    #: engine once plugins have loaded, then dropped here).
    capsule: Any = dataclasses.field(default=None, compare=False, repr=False)
    #: ``companions(slot, params) -> (params, [(slot, op, params) or batch transform, ...])``:
    #: the slots a decoder adds beside its own when a pipeline is built
    #: (``decode_video(audio=True)`` adds ``<slot>_audio``), and the batch
    #: transforms it implies (``decode_audio(duration=)``: ``pad_to_longest``), or None.
    companions: Callable[[str, dict[str, Any]], tuple[dict[str, Any], list[Any]]] | None = (
        dataclasses.field(default=None, compare=False, repr=False)
    )
    #: ``prepare(params) -> params``: the parameters as written to those the
    #: op takes (a Python object to its JSON form), before they are checked.
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = dataclasses.field(default=None, compare=False, repr=False)
    #: What every output is, where the op declares it: ``{"dtype": "float32"
    #: or None, "ndim": 2 or None}`` (a version 2 native op's declaration).
    output: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    #: What a transform takes, where it declares it: ``{"dtype": "float32" or
    #: None, "ndim": 2 or None}`` (empty: any tensor).
    takes: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def native(self) -> bool:
        """Runs in the engine without the GIL: a core op or a plugin's native table."""
        return self.fn is None


@dataclasses.dataclass(frozen=True)
class Registration(Generic[V]):
    """A name one plugin registered through a hook that registers objects by
    name: ``value`` is the device reader (``dataio_register_device_readers``),
    the namespace loader (``dataio_register_namespaces``), the executor
    factory (``dataio_register_executors``) or the counters of a stats
    section (``dataio_register_stats``)."""

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
        self._stats_sections: dict[str, Registration[Callable[[], Mapping[str, int | float]]]] = {}
        self._problems: list[PluginProblem] = []
        #: (what, name) -> the plugins that registered it, when more than one did
        self._conflicts: dict[tuple[str, str], list[str]] = {}
        self._collecting = False  # while plugins load: a conflict is recorded, not raised
        self._trace: Callable[..., None] = lambda *args: None
        self._pending_warnings: list[PluginProblem] = []

    # -- loading ----------------------------------------------------------

    def manager(self) -> pluggy.PluginManager:
        with self._lock:
            if self._pm is None:
                self._pm = self._load()
                self._warn()
            return self._pm

    def _load(self) -> pluggy.PluginManager:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        if os.environ.get("DATAIO_TRACE_PLUGINS"):
            pm.trace.root.setwriter(sys.stderr.write)
            pm.enable_tracing()
        trace = self._trace = pm.trace.root.get("plugins")  # writes only when tracing is on
        from . import _builtin

        pm.register(_builtin, name=BUILTIN)
        self._plugins[BUILTIN] = PluginInfo(BUILTIN, "dataio", _builtin.VERSION, "loaded")
        disabled = _disabled_names()
        everything = importlib.metadata.entry_points()  # every group, read once
        for ep in sorted(everything.select(group=hookspecs.PROJECT), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            if ep.name in self._plugins:
                first = self._plugins[ep.name]
                self._problem(
                    "duplicate entry point",
                    ep.name,
                    dist,
                    version,
                    f"its entry point {ep.name} = {ep.value} is not loaded: {_label(first.name, first.package, first.version)} "
                    f"publishes an entry point of the same name in the {hookspecs.PROJECT!r} group; rename one",
                )
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
            self._check_hooks(pm, plugin, ep)
        lookalikes = [ep for group in sorted(everything.groups) if _looks_like_our_group(group) for ep in everything.select(group=group)]
        for ep in lookalikes:
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            self._problem(
                "entry-point group",
                ep.name,
                dist,
                version,
                f"the entry point {ep.name} = {ep.value} is in the group {ep.group!r}, which dataio does not read: "
                f"dataio loads plugins from the group {hookspecs.PROJECT!r} ([project.entry-points.{hookspecs.PROJECT}] in pyproject.toml)",
                warn=False,
            )
        self._collecting = True
        try:
            self._collect(pm)
        finally:
            self._collecting = False
        # Native tables once conflicts are settled: an op two plugins claim
        # is served by neither, and its tables are never adopted.
        for spec in [s for s in self._ops.values() if s.capsule is not None]:
            self._adopt_native(spec)
        return pm

    def _check_hooks(self, pm: pluggy.PluginManager, plugin: object, ep: importlib.metadata.EntryPoint) -> None:
        """Records what dataio would otherwise ignore silently in a plugin that
        loaded: hook implementations dataio has no hook for (a misspelled
        name), hook-named functions without ``@dataio.hookimpl``, and a
        module that implements no hook at all."""
        name = ep.name
        implemented = [caller.name for caller in pm.get_hookcallers(plugin) or []]
        where = f"{ep.value}"
        for hook in implemented:
            if hook not in HOOK_NAMES:
                self._problem_of("unknown hook", name, f"{where} implements {hook}, which is not a dataio hook{_nearest_hook(hook)}; dataio never calls it")
        for attr in sorted(dir(plugin)):
            if not attr.startswith("dataio_") or attr in implemented:
                continue
            if attr not in HOOK_NAMES and not attr.startswith("dataio_register") and not _nearest_hook(attr):
                continue
            try:
                value = getattr(plugin, attr)
            except Exception:  # noqa: BLE001 - an attribute that cannot be read is not a hook
                continue
            if callable(value):
                hint = "" if attr in HOOK_NAMES else _nearest_hook(attr)
                self._problem_of("missing hookimpl", name, f"{where} defines {attr} without @dataio.hookimpl{hint}, so dataio never calls it")
        if not any(hook in HOOK_NAMES for hook in implemented):
            self._problem_of(
                "no hook",
                name,
                f"{where}, registered under the {hookspecs.PROJECT!r} entry-point group, implements no dataio hook "
                f"(a function named {HOOK_NAMES[0]}, ..., marked @dataio.hookimpl): it registers nothing",
            )

    def _problem(self, kind: str, plugin: str, package: str | None, version: str | None, message: str, *, warn: bool = True) -> None:
        """Records a problem (traced now, warned once plugins have loaded) and,
        for a plugin that was loaded, adds it to the plugin's detail."""
        problem = PluginProblem(kind, plugin, package, version, message)
        if problem in self._problems:
            return
        self._problems.append(problem)
        self._trace("problem", str(problem))
        info = self._plugins.get(plugin)
        if info is not None and kind in _DETAIL_KINDS and message not in info.detail:
            detail = f"{info.detail}; {message}" if info.detail else message
            self._plugins[plugin] = dataclasses.replace(info, detail=detail)
        if warn:
            self._pending_warnings.append(problem)

    def _problem_of(self, kind: str, plugin: str, message: str, *, warn: bool = True) -> None:
        info = self._plugins.get(plugin)
        self._problem(kind, plugin, info.package if info else None, info.version if info else None, message, warn=warn)

    def _warn(self) -> None:
        pending, self._pending_warnings = self._pending_warnings, []
        for problem in pending:
            warnings.warn(f"dataio plugin {problem}", PluginWarning, stacklevel=4)

    def _collect(self, pm: pluggy.PluginManager) -> None:
        on_error = self._hook_failed
        self._call_each(pm, "dataio_register_backends", self._backend_registrar, on_error)
        self._call_each(pm, "dataio_register_ops", self._op_registrar, on_error)
        self._call_each(pm, "dataio_register_device_readers", self._device_reader_registrar, on_error)
        self._call_each(pm, "dataio_register_namespaces", self._namespace_registrar, on_error)
        self._call_each(pm, "dataio_register_executors", self._executor_registrar, on_error)
        self._call_each(pm, "dataio_register_stats", self._stats_registrar, on_error)

    @staticmethod
    def _call_each(
        pm: pluggy.PluginManager,
        hook_name: str,
        registrar: Callable[[str], Callable[..., None]],
        on_error: Callable[[pluggy.PluginManager, str, str, Exception], None],
    ) -> None:
        """Calls ``hook_name`` once per implementing plugin, each with a
        ``register`` bound to that plugin (so a duplicate names both plugins).
        The calls go through pluggy's hook caller for a one-plugin subset, so
        tracing and any other hook-call monitoring see them. A plugin whose
        hook raises goes to ``on_error``; the other plugins are called."""
        impls = getattr(pm.hook, hook_name).get_hookimpls()
        for impl in impls:
            if pm.get_plugin(impl.plugin_name) is None:
                continue  # failed in an earlier hook
            others = [other.plugin for other in impls if other is not impl]
            try:
                pm.subset_hook_caller(hook_name, remove_plugins=others)(register=registrar(impl.plugin_name))
            except Exception as exc:  # noqa: BLE001 - one plugin's mistake must not disable the others
                on_error(pm, impl.plugin_name, hook_name, exc)

    def _hook_failed(self, pm: pluggy.PluginManager, plugin: str, hook_name: str, exc: Exception) -> None:
        """A plugin's hook raised while plugins load: the plugin is failed,
        everything it registered is dropped, and the others go on."""
        reason = f"{hook_name} raised {type(exc).__name__}: {exc}"
        if plugin == BUILTIN:
            raise exc  # the core's own registrations are not optional
        for table in (self._backends, self._ops, self._device_readers, self._namespaces, self._executors, self._stats_sections):
            for key in [k for k, reg in table.items() if reg.plugin == plugin]:
                del table[key]
        pm.unregister(name=plugin)
        info = self._plugins.get(plugin)
        if info is not None:
            self._plugins[plugin] = dataclasses.replace(info, status="failed", detail=reason)
        self._trace("failed", plugin, f"({reason})")
        self._problem_of("hook failed", plugin, reason)

    def _who(self, plugin: str) -> str:
        info = self._plugins.get(plugin)
        return _label(plugin, info.package, info.version) if info is not None else repr(plugin)

    def _conflict_message(self, what: str, key: str, plugins: list[str]) -> str:
        names = " and ".join(self._who(p) for p in plugins) if len(plugins) == 2 else ", ".join(self._who(p) for p in plugins)
        count = "two" if len(plugins) == 2 else str(len(plugins))
        blockable = [p for p in plugins if p in self._plugins and p != BUILTIN]
        block = f"={blockable[-1]}" if blockable else ""
        return f"{what} {key!r} is registered by {count} plugins: {names}; uninstall one or block it with DATAIO_DISABLE_PLUGINS{block}"

    def conflict(self, what: str, key: str) -> str | None:
        """The error message for ``what`` ``key`` (``"scheme", "kv"``) when
        several plugins registered it (so that none serves it), or None."""
        self.manager()
        plugins = self._conflicts.get((what, key))
        if plugins is None:
            return None
        return self._conflict_message(what, key, plugins) + _NEITHER

    def _raise_conflict(self, what: str, key: str) -> None:
        message = self.conflict(what, key)
        if message is not None:
            raise PluginError(message)

    def _claim(self, table: dict[str, R], what: str, key: str, registration: R) -> None:
        """One rule for every kind of name: a name belongs to one plugin.

        After plugins have loaded, registering a name another plugin holds
        raises. While they load, a name two plugins register is recorded as a
        conflict and served by neither (using it raises, naming both), and
        the plugins' other names stay; a plugin that registers one of the
        core's own names is ignored for that name."""
        claimants = self._conflicts.get((what, key))
        if claimants is not None:
            if registration.plugin not in claimants:
                claimants.append(registration.plugin)
            if not self._collecting:
                raise PluginError(self._conflict_message(what, key, claimants))
            self._problem_of("conflict", registration.plugin, self._conflict_message(what, key, claimants) + _NEITHER)
            return
        prior = table.get(key)
        if prior is None or prior.plugin == registration.plugin:
            table[key] = registration
            return
        message = self._conflict_message(what, key, [prior.plugin, registration.plugin])
        if not self._collecting:
            raise PluginError(message)
        if BUILTIN in (prior.plugin, registration.plugin):
            other = registration if prior.plugin == BUILTIN else prior
            table[key] = prior if prior.plugin == BUILTIN else registration
            self._problem_of("conflict", other.plugin, f"registers the {what} {key!r}, which dataio itself provides; dataio's is kept")
            return
        del table[key]
        self._conflicts[(what, key)] = [prior.plugin, registration.plugin]
        self._problem_of("conflict", prior.plugin, message + _NEITHER, warn=False)
        self._problem_of("conflict", registration.plugin, message + _NEITHER)  # one warning per conflict

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
            companions: Callable[..., Any] | None = None,
            prepare: Callable[..., Any] | None = None,
            output: Mapping[str, Any] | None = None,
            takes: Mapping[str, Any] | None = None,
        ) -> None:
            if kind not in ("decode", "transform"):
                raise PluginError(f"plugin {plugin!r}: op {name!r} has kind {kind!r}; use 'decode' or 'transform'")
            capsule = fn if _is_capsule(fn) else None
            if capsule is not None:
                fn = None
            elif fn is None and plugin != BUILTIN:
                raise PluginError(
                    f"plugin {plugin!r}: op {name!r} needs an implementation: a Python function, or the "
                    f"'dataio.op.v2' capsule of a native one (fn=)"
                )
            if fn is not None and not callable(fn):
                raise PluginError(f"plugin {plugin!r}: the implementation of op {name!r} is not callable")
            if plugin != BUILTIN:
                for key, declared in (params or {}).items():
                    if isinstance(declared, Param):
                        continue  # a native op's own declaration
                    types = declared if isinstance(declared, tuple) else (declared,)
                    if not types or not all(isinstance(t, type) for t in types):
                        raise PluginError(
                            f"plugin {plugin!r}: op {name!r} declares parameter {key!r} as {declared!r}; "
                            f"declare a type or a tuple of types (params={{'amount': int}})"
                        )
            if companions is not None and (kind != "decode" or not callable(companions)):
                raise PluginError(f"plugin {plugin!r}: op {name!r}: companions= is a callable, for a decoder")
            if prepare is not None and not callable(prepare):
                raise PluginError(f"plugin {plugin!r}: op {name!r}: prepare= is a callable taking and returning the parameters")
            for what, declared in (("output", output), ("takes", takes)):
                bad = set(declared or {}) - {"dtype", "ndim"}
                if bad or not isinstance((declared or {}).get("ndim") or 0, int):
                    raise PluginError(
                        f"plugin {plugin!r}: op {name!r}: {what}= is {{'dtype': str or None, 'ndim': int or None}}, "
                        f"got {declared!r}"
                    )
            if takes and kind != "transform":
                raise PluginError(f"plugin {plugin!r}: op {name!r}: takes= is for a transform (a decoder takes bytes)")
            spec = OpSpec(
                name, plugin, kind, dict(params or {}), fn, description, capsule, companions, prepare,
                dict(output or {}), dict(takes or {}),
            )
            self._claim(self._ops, "op", name, spec)
            if capsule is not None and not self._collecting:
                self._adopt_native(spec)

        return _Registrar(f"<op registrar of plugin {plugin!r}>", register)

    def _adopt_native(self, spec: OpSpec) -> bool:
        """Hands a native op's table to the engine; a table the engine refuses
        (another ABI version, another name or kind) is the plugin's problem,
        and the op is dropped."""
        from . import _native

        try:
            _native.register_native_op(spec.name, spec.capsule, spec.kind)
        except Exception as exc:  # noqa: BLE001 - one plugin's bad table must not break the others
            self._ops.pop(spec.name, None)
            self._problem_of("native op", spec.plugin, f"its native op {spec.name!r} was refused: {exc}")
            return False
        self._ops[spec.name] = dataclasses.replace(spec, capsule=None)
        return True

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

    def _stats_registrar(self, plugin: str) -> hookspecs.StatsRegistrar:
        def check(section: str, counters: object) -> str | None:
            if not section.isidentifier():
                return f"the stats section {section!r} is not an identifier"
            if section in CORE_STATS_SECTIONS:
                return f"the stats section {section!r} is the core's own (loader.stats()[{section!r}])"
            return None if callable(counters) else f"the counters of stats section {section!r} are not callable"

        return self._named_registrar(self._stats_sections, "stats section", plugin, check)

    # -- queries ------------------------------------------------------------

    def plugins(self) -> list[PluginInfo]:
        self.manager()
        return list(self._plugins.values())

    def backends(self) -> dict[str, BackendRegistration]:
        self.manager()
        return dict(self._backends)

    def endpoint_schemes(self) -> list[str]:
        """The schemes an endpoint can be configured for: those of the
        backend plugins shipped with dataio (installed or not) and those any
        other plugin registers; not the core's own (``file``), nor http and
        https (a URL names its server)."""
        no_endpoint = set(SHIPPED_SCHEMES) - set(ENDPOINT_SCHEMES)
        served = {s for s, reg in self.backends().items() if reg.plugin != BUILTIN and s not in no_endpoint}
        claimed = {key for what, key in self._conflicts if what == "scheme"}
        return sorted({*ENDPOINT_SCHEMES, *served, *claimed})

    def ops(self) -> dict[str, OpSpec]:
        self.manager()
        return dict(self._ops)

    def op(self, name: str) -> OpSpec | None:
        """The op registered as ``name``, or None; raises :class:`PluginError`
        when several plugins registered it."""
        self.manager()
        spec = self._ops.get(name)
        if spec is None:
            self._raise_conflict("op", name)
        return spec

    def problems(self) -> list[PluginProblem]:
        """What is wrong with installed plugins (see :class:`PluginProblem`)."""
        self.manager()
        return list(self._problems)

    def device_readers(self) -> dict[str, Registration[hookspecs.DeviceReader]]:
        self.manager()
        return dict(self._device_readers)

    def device_reader(self, device_type: str) -> hookspecs.DeviceReader | None:
        """The reader a plugin registered for ``device_type`` (``"cuda"``), or None."""
        self.manager()
        reg = self._device_readers.get(device_type)
        if reg is None:
            self._raise_conflict("device reader", device_type)
        return reg.value if reg is not None else None

    def namespaces(self) -> dict[str, Registration[Callable[[], object]]]:
        self.manager()
        return dict(self._namespaces)

    def namespace(self, name: str) -> object | None:
        """The object behind ``dataio.<name>``, made by its loader on first use; None
        when no plugin registered the name (see :meth:`failed_note` for why)."""
        reg = self.namespaces().get(name)
        if reg is None:
            self._raise_conflict("namespace", name)
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
        if reg is None:
            self._raise_conflict("executor", name)
        return reg.value if reg is not None else None

    def stats_counters(self) -> dict[str, dict[str, int | float]]:
        """Each registered stats section's counters now. Loads no plugin:
        before plugins have loaded there is none (and nothing a plugin
        counts has happened). A section whose ``counters()`` raises, or
        returns something other than numbers by name, is left out and
        named once in :meth:`problems`."""
        with self._lock:
            if self._pm is None:
                return {}
            sections = list(self._stats_sections.values())
        out: dict[str, dict[str, int | float]] = {}
        for reg in sections:
            try:
                values = {str(k): v for k, v in reg.value().items()}
                bad = [k for k, v in values.items() if not isinstance(v, (int, float)) or isinstance(v, bool)]
                if bad:
                    raise TypeError(f"not numbers: {', '.join(bad)}")
            except Exception as exc:  # noqa: BLE001 - a plugin's broken counters must not break loader.stats()
                with self._lock:
                    self._problem_of("stats section", reg.plugin, f"its stats section {reg.name!r} failed: {type(exc).__name__}: {exc}",
                                     warn=False)
                continue
            out[reg.name] = values
        return out

    def failed_note(self) -> str:
        """``"; these plugins failed to load and may provide it: ..."`` (and
        the problems of plugins that loaded, which may be why) or ``""``: the
        tail of a message about something no loaded plugin registered."""
        self.manager()
        note = ""
        failed = [p for p in self._plugins.values() if p.status == "failed"]
        if failed:
            note += "; these plugins failed to load and may provide it: " + ", ".join(f"{p.name} ({p.detail})" for p in failed)
        failed_names = {p.name for p in failed}
        others = [p for p in self._problems if p.plugin not in failed_names and p.kind != "conflict"]
        if others:
            note += "; installed plugins with problems, which may be why: " + "; ".join(map(str, others))
        return note

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

        def on_error(_pm: pluggy.PluginManager, plugin: str, hook_name: str, exc: Exception) -> None:
            info = self._plugins.get(plugin)
            detail = f"{hook_name} raised {type(exc).__name__}: {exc}"
            rows.append((plugin, info.package if info and info.package else plugin, {"status": "error", "detail": detail}))

        self._call_each(pm, "dataio_register_capabilities", registrar, on_error)
        return rows

    def resolve_scheme(self, scheme: str) -> object | None:
        """Creates the backend for ``scheme`` (called by the native registry on a miss)."""
        reg = self.backends().get(scheme)
        if reg is None:
            self._raise_conflict("scheme", scheme)
            note = self.failed_note()
            if note:
                alias = SCHEME_ALIASES.get(scheme)
                if alias is not None:  # the engine's words, before the broken plugins
                    note = (f"; dataio names this store {alias}:// (write {alias}://bucket/key; "
                            f"{SHIPPED_SCHEMES[alias]} serves it){note}")
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
            self._problems.clear()
            self._conflicts.clear()
            self._pending_warnings.clear()
            for table in (
                self._plugins,
                self._backends,
                self._ops,
                self._device_readers,
                self._namespaces,
                self._namespace_objects,
                self._executors,
                self._stats_sections,
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
