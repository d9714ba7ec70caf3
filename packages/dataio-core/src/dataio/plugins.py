"""The public plugin API: the registry's contents, and the kit plugin
authors build on.

Most users never touch this: plugins are discovered from the ``dataio``
entry-point group. Scripts and tests can register a backend directly with
:func:`register_backend`; it goes through the same duplicate checks.

For plugin authors: :class:`SchemeOptions` (per-scheme tuning options),
:data:`OBJECT_STORE_TUNING` and :class:`ObjectStorePlugin` (the whole shell of
a plugin on the shared object-store backend, so the plugin itself keeps only
its credential resolution).
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from . import _native
from ._plugins import (
    SHIPPED_SCHEMES,
    BackendRegistration,
    OpSpec,
    PluginInfo,
    PluginProblem,
    PluginWarning,
    Registration,
    host,
)
from .config import SchemeSettings, get_settings
from .errors import InvalidArgumentError
from .hookspecs import BackendRegistrar, CapabilityRegistrar, OpRegistrar, hookimpl
from .transforms import PLUGIN_PACKAGE_OPS

__all__ = [
    "PluginInfo",
    "PluginProblem",
    "PluginWarning",
    "BackendRegistration",
    "OpSpec",
    "Registration",
    "SchemeOptions",
    "OBJECT_STORE_TUNING",
    "ObjectStorePlugin",
    "NativeOpsPlugin",
    "CredentialRefresh",
    "list_plugins",
    "list_problems",
    "list_backends",
    "list_ops",
    "list_device_readers",
    "list_namespaces",
    "list_executors",
    "register_backend",
    "plugin_manager",
    "install_hint",
    "call_native_decoder",
]

RUNTIME = "<runtime>"


def call_native_decoder(op: str, uri: str, params: dict[str, Any] | None = None, *, seed: int | None = None,
                        epoch: int = 0, index: int = 0) -> Any:
    """Runs native decoder ``op`` (a plugin's, registered through the op
    ABI) once on the object at ``uri``, read by range as a loader reads it,
    and returns its output as a numpy array: the verbs a plugin builds on
    its decoders (``dataio.read_video``) call this. ``seed``, ``epoch`` and
    ``index`` key the op's random draws as the loader's record would."""
    import json

    import numpy as np

    host.manager()  # registers the installed plugins' ops
    dtype, shape, data, _fetched = _native.call_native_op(op, uri, json.dumps(params or {}), seed, epoch, index)
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def list_plugins() -> list[PluginInfo]:
    """Every plugin seen: loaded, failed (with the reason) or disabled."""
    return host.plugins()


def list_problems() -> list[PluginProblem]:
    """What is wrong with installed plugins that dataio would otherwise ignore:
    names two plugins register (served by neither), hook names dataio does
    not know, hook functions without ``@dataio.hookimpl``, modules that
    implement no hook, hooks that raised, entry points in a group that is
    not ``dataio``. ``python -m dataio`` lists them too."""
    return host.problems()


def list_backends() -> dict[str, BackendRegistration]:
    """Registered schemes and the plugin that serves each."""
    return host.backends()


def list_ops() -> dict[str, OpSpec]:
    """Registered pipeline ops (built-in native ones and plugins' Python ones)."""
    return host.ops()


def list_device_readers() -> dict[str, Registration[Any]]:
    """Device types (``"cuda"``) with a plugin's checkpoint reader (``value``), and the plugin."""
    return host.device_readers()


def list_namespaces() -> dict[str, Registration[Any]]:
    """Public ``dataio.<name>`` modules a plugin serves (``rdma``; ``value`` is the loader), and the plugin."""
    return host.namespaces()


def list_executors() -> dict[str, Registration[Any]]:
    """Executors plugins registered for ``run(executor=name)`` (``value`` is the factory), and the plugin of each."""
    return host.executors()


def register_backend(scheme: str, backend: object | Callable[[], object], *, plugin: str = RUNTIME) -> None:
    """Serve ``scheme://`` with ``backend`` (an object, a capsule, or a zero-argument factory)."""
    factory = backend if callable(backend) and not hasattr(backend, "head") else (lambda: backend)
    host.manager()
    host._backend_registrar(plugin)(scheme, factory)


def plugin_manager():  # -> pluggy.PluginManager
    """The underlying pluggy manager (loads plugins if they are not loaded yet)."""
    return host.manager()


#: How one of dataio's own packages installs. They are not on the Python
#: registry (its ``dataio`` is an unrelated project): their wheels come from a
#: wheelhouse built in a clone. The Rust engine's hint for a scheme whose
#: plugin is missing (``install_hint`` in crates/dataio-engine) uses the same words.
def install_hint(name: str) -> str:
    """How to install what provides ``name``: one of dataio's own
    distributions (``"dataio-rdma"``), an extra of ``dataio`` (``"gcs"``),
    a URI scheme their plugins serve (``"gs"`` or ``"gs://"``) or an op
    they register (``"tokenize"``). Returns the words after "install it
    with" in an error saying that it is missing; the engine holds the text
    (its own "unsupported scheme" errors say the same). A name no package of
    dataio provides is an :class:`~dataio.errors.InvalidArgumentError`
    saying so, never a command naming a package that does not exist."""
    return _native.install_hint(_own_package(name))


def _own_package(name: str) -> str:
    """The distribution of dataio that provides ``name`` (see :func:`install_hint`)."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"install_hint takes a name (a package, extra, scheme or op), got {type(name).__name__}")
    extras = _own_extras()
    dists = {"dataio", *extras.values(), *SHIPPED_SCHEMES.values(), *PLUGIN_PACKAGE_OPS.values()}
    key = name.strip().lower().removesuffix("://")
    if key.replace("_", "-") in dists:
        return key.replace("_", "-")
    for table in (extras, SHIPPED_SCHEMES, PLUGIN_PACKAGE_OPS):
        if key in table:
            return table[key]
    if not extras and key.startswith("dataio-"):
        return key  # no metadata to check it against (the core installed without it)
    why = "no package of dataio provides it"
    raise InvalidArgumentError(
        f"install_hint({name!r}): there is nothing to install: {why}. dataio's packages: {', '.join(sorted(dists))}; "
        f"the URI schemes they serve: {', '.join(f'{s}:// ({d})' for s, d in SHIPPED_SCHEMES.items())}"
    )


@functools.cache
def _own_extras() -> dict[str, str]:
    """dataio's own distributions by the extra of ``dataio`` that installs
    each (``{"s3": "dataio-s3", ...}``), from the installed core's metadata:
    the ``optional-dependencies`` of its pyproject.toml. Empty when the
    metadata cannot be read."""
    import importlib.metadata
    import re

    try:
        requires = importlib.metadata.requires("dataio") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    extras = {}
    for req in requires:
        m = re.match(r"\s*(dataio-[A-Za-z0-9_.-]+?)\s*(?:[=<>!~;\[ ]|$).*?extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        if m:
            extras[m.group(2)] = m.group(1).lower().replace("_", "-")
    return extras


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

    def reset(self, scheme: str) -> None:
        """Forget every option of ``scheme`` (the next use builds a backend without them)."""
        from . import _native

        scheme = scheme.lower().removesuffix("://")
        with self._lock:
            self._options.pop(scheme, None)
        _native.unregister_backend(scheme)

    def native(self, scheme: str) -> dict[str, Any]:
        """The options as the native side reads them (durations as ``"30s"``)."""
        return {k: (f"{float(v)}s" if k in self.durations and isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in self.options(scheme).items()}


#: A callback the native object-store backend calls for fresh credentials
#: shortly before the current ones expire: returns the keys the backend reads
#: (``key_id``/``secret_key``/``token`` or ``bearer``) and ``expires_at``
#: (a Unix time, or None for credentials that do not expire).
CredentialRefresh = Callable[[], dict[str, Any]]

#: A plugin's credential resolution: from the scheme's configured settings to
#: the native backend's options and an optional refresh callback.
CredentialResolver = Callable[[SchemeSettings], tuple[dict[str, Any], CredentialRefresh | None]]


class ObjectStorePlugin:
    """The shell of a backend plugin on the shared object-store backend
    (``crates/dataio-objstore``): registers its schemes, its row of the
    capability report and its tuning options. The plugin supplies what is
    its own: the schemes, its native module (whose
    ``backend(scheme, options, refresh)`` builds the capsule), its credential
    resolution and any tuning keys beyond :data:`OBJECT_STORE_TUNING`.

    The plugin's entry-point module declares it and exposes its hooks::

        PLUGIN = ObjectStorePlugin(
            "dataio-mystore", __version__,
            schemes={"my": "My object store"},
            native_module="dataio_mystore._native",
            resolve=_credentials.resolve,
        )
        dataio_register_backends = PLUGIN.dataio_register_backends
        dataio_register_capabilities = PLUGIN.dataio_register_capabilities

    ``resolve(settings)`` gets the scheme's :class:`dataio.config.SchemeSettings`
    and returns ``(options, refresh)``: the native backend's options (region,
    static keys, ...) and a :data:`CredentialRefresh` or None. With
    ``endpoint_option`` set, the shell passes a configured endpoint itself,
    under that option name, with ``allow_http`` only when the endpoint is
    ``http://`` (a plugin whose endpoint may come from elsewhere, such as a
    connection string, leaves it None and does this in ``resolve``). The
    tuning options set with :meth:`configure` are added last. The report row
    never shows a secret: per scheme, only the credentials method and the
    endpoint (which holds none)."""

    def __init__(
        self,
        package: str,
        version: str,
        *,
        schemes: Mapping[str, str],
        native_module: str,
        resolve: CredentialResolver,
        endpoint_option: str | None = None,
        tuning: Mapping[str, str] | None = None,
    ) -> None:
        if not schemes:
            raise ValueError(f"{package}: an object-store plugin serves at least one scheme")
        self.package = package
        self.version = version
        self.schemes = dict(schemes)
        #: Keys :meth:`configure` accepts, with what they mean.
        self.tuning = {**OBJECT_STORE_TUNING, **(tuning or {})}
        self._native_module = native_module
        self._resolve = resolve
        self._endpoint_option = endpoint_option
        self._options = SchemeOptions(package, self.tuning, durations=("timeout", "connect_timeout"))

    def configure(self, scheme: str | None = None, **options: Any) -> dict[str, Any]:
        """Set tuning options (see ``tuning``) for ``scheme``, by default the
        plugin's first; they take effect on the next use of the scheme. A
        value of None removes an option. Returns the scheme's options now."""
        return self._options.configure(scheme or next(iter(self.schemes)), **options)

    def reset(self, scheme: str | None = None) -> None:
        """Forget the tuning options of ``scheme`` (by default the first scheme)."""
        self._options.reset(scheme or next(iter(self.schemes)))

    def _native(self) -> ModuleType:
        # Imported on first use, not when plugins load: listing plugins or
        # building the report must not need the native library.
        return importlib.import_module(self._native_module)

    def backend_options(self, scheme: str) -> tuple[dict[str, Any], CredentialRefresh | None]:
        """The options and refresh callback the native backend of ``scheme`` is built with."""
        settings = get_settings(scheme)
        options: dict[str, Any] = {}
        if self._endpoint_option is not None and settings.endpoint is not None:
            options[self._endpoint_option] = settings.endpoint
            options["allow_http"] = settings.plain_http  # plain HTTP only when the endpoint says so
        resolved, refresh = self._resolve(settings)
        options.update(resolved)
        options.update(self._options.native(scheme))
        return options, refresh

    def make_backend(self, scheme: str) -> object:
        """The native backend for ``scheme``, as a ``dataio.backend.v1`` capsule."""
        options, refresh = self.backend_options(scheme)
        return self._native().backend(scheme, options, refresh)

    def report(self) -> Mapping[str, Any]:
        """The plugin's row of the capability report (no secrets: methods and endpoints only)."""
        parts = [f"native object_store data path ({self._native().__name__} {self.version})"]
        for scheme in self.schemes:
            settings = get_settings(scheme)
            parts.append(f"{scheme}: credentials {settings.method}" + (f", endpoint {settings.endpoint}" if settings.endpoint else ""))
        return {"status": "ok", "detail": "; ".join(parts), "schemes": list(self.schemes)}

    @hookimpl
    def dataio_register_backends(self, register: BackendRegistrar) -> None:
        for scheme, description in self.schemes.items():
            register(scheme, functools.partial(self.make_backend, scheme), description=description)

    @hookimpl
    def dataio_register_capabilities(self, register: CapabilityRegistrar) -> None:
        register(self.package, self.report)

    def __repr__(self) -> str:
        return f"<dataio.plugins.ObjectStorePlugin {self.package} {', '.join(s + '://' for s in self.schemes)}>"


class NativeOpsPlugin:
    """The whole Python side of a plugin of native ops (the op ABI, version
    2): every op its native module exports through ``dataio_abi::export_ops!``
    is registered from the op's own declaration in Rust (name, kind, doc,
    parameters with their types, defaults and help, Python hooks), so the
    plugin writes none of it again. The entry-point module::

        PLUGIN = NativeOpsPlugin("dataio_pcd._native")
        dataio_register_ops = PLUGIN.dataio_register_ops

    ``package`` names the plugin in reports (default: the module's top-level
    package with ``_`` as ``-``)."""

    def __init__(self, native_module: str, *, package: str | None = None) -> None:
        self._native_module = native_module
        self.package = package or native_module.split(".")[0].replace("_", "-")

    def _native(self) -> ModuleType:
        return importlib.import_module(self._native_module)

    def declarations(self) -> list[dict[str, Any]]:
        """What each op declares, in the module's order: ``name``, ``kind``,
        ``flags``, ``doc``, ``params`` (JSON Schema per parameter),
        ``required``, ``hooks``, ``output``, and its fresh ``capsule``."""
        import json

        out = []
        for capsule in self._native().ops():
            name, kind, flags, doc, params, hooks, output = _native.native_op_declaration(capsule)
            declared = json.loads(params)
            out.append({
                "name": name, "kind": kind, "flags": flags, "doc": doc, "params": declared["params"],
                "required": list(declared.get("required", ())), "hooks": json.loads(hooks),
                "output": json.loads(output), "capsule": capsule,
            })
        return out

    @hookimpl
    def dataio_register_ops(self, register: OpRegistrar) -> None:
        from ._ops import param_from_schema

        for d in self.declarations():
            required = set(d["required"])
            params = {key: param_from_schema(schema, key in required) for key, schema in d["params"].items()}
            register(d["name"], d["capsule"], kind=d["kind"], params=params, description=d["doc"],
                     prepare=_python_hook(d["hooks"].get("prepare"), d["name"]),
                     companions=_python_hook(d["hooks"].get("companions"), d["name"]),
                     output={k: v for k, v in d["output"].items() if k != "input"},
                     takes=d["output"].get("input"))

    def __repr__(self) -> str:
        return f"<dataio.plugins.NativeOpsPlugin {self.package} ({self._native_module})>"


def _python_hook(path: str | None, op: str) -> Callable[..., Any] | None:
    """The function a native op names as ``"module:function"``."""
    if not path:
        return None
    module, _, attr = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise InvalidArgumentError(f"op {op}: its declared Python hook {path!r} cannot be loaded: {exc}") from exc
    if not callable(fn):
        raise InvalidArgumentError(f"op {op}: its declared Python hook {path!r} is not callable")
    return fn
