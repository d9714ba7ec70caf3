"""The hooks a dataio plugin implements.

A plugin is a module (or object) with functions marked ``@dataio.hookimpl``,
published under the ``dataio`` entry-point group::

    [project.entry-points.dataio]
    mystore = "dataio_mystore.plugin"

Plugins are loaded once, on first need (the first URI with an unknown scheme,
the first plan that names an unknown op, the capability report, the first
device read, ``dataio.rdma``, a run naming an executor), never at
``import dataio``. Each hook receives a ``register`` callable; what a plugin
registers is keyed by name, and two plugins registering the same name is an
error that names both. The core registers its own local backend and native
ops through these same hooks.

This module (the hooks and the contract of a pure-Python backend,
:class:`PythonBackend`), :mod:`dataio.plugins` and the public names of
:mod:`dataio` are the whole of what a plugin may use, and its tests the
conformance suites of :mod:`dataio.testing`: the core never imports a plugin,
and a plugin never imports a private (``_``-prefixed) core name.
``tests/test_boundaries.py`` holds both sides to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import pluggy

__all__ = [
    "hookspec",
    "hookimpl",
    "BackendRegistrar",
    "PythonBackend",
    "PythonWriter",
    "OPTIONAL_BACKEND_METHODS",
    "REQUIRED_BACKEND_METHODS",
    "OpRegistrar",
    "CapabilityRegistrar",
    "DeviceReader",
    "DeviceReaderRegistrar",
    "NamespaceRegistrar",
    "ExecutorRegistrar",
    "StatsRegistrar",
    "dataio_register_backends",
    "dataio_register_ops",
    "dataio_register_capabilities",
    "dataio_register_device_readers",
    "dataio_register_namespaces",
    "dataio_register_executors",
    "dataio_register_stats",
]

PROJECT = "dataio"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@runtime_checkable
class PythonWriter(Protocol):
    """What :meth:`PythonBackend.open_writer` returns."""

    def write(self, data: bytes) -> None: ...
    def commit(self) -> str | None:
        """Make the object visible atomically; return its etag."""
    def abort(self) -> None:
        """Discard everything written; nothing becomes visible."""


@runtime_checkable
class PythonBackend(Protocol):
    """What a pure-Python backend implements. URIs are full (``mem://b/k``).

    Raise ``FileNotFoundError`` for missing objects, ``PermissionError`` for
    refusals, ``IsADirectoryError`` for prefixes read as files, ``TimeoutError``
    and ``ConnectionError`` for a store that did not answer, and
    ``ValueError`` for bad arguments; dataio maps them into its tree (each
    to the dataio class that also derives from that built-in). Optional:
    ``name`` (str), ``capabilities`` (iterable of ``"write"``, ``"delete"``,
    ``"list"``, ``"ranged_read"``), ``read_all(uri)``, and the methods of
    :data:`OPTIONAL_BACKEND_METHODS`; the registry refuses a backend that
    lacks one of the others (:data:`REQUIRED_BACKEND_METHODS`).
    """

    def head(self, uri: str) -> Any:
        """A mapping (or object) with ``size`` and optionally ``mtime``, ``etag``, ``is_dir``."""
    def read_range(self, uri: str, offset: int, size: int) -> bytes: ...
    def open_writer(self, uri: str) -> PythonWriter: ...
    def list(self, prefix: str, recursive: bool) -> Iterable[Any]:
        """Direct children (directories with ``is_dir=True``) or, when recursive, every object below."""
    def exists(self, uri: str) -> bool: ...
    def delete(self, uri: str) -> None: ...


#: The methods of :class:`PythonBackend` a backend may leave out, each with the
#: capability it gives: without ``open_writer`` a backend is read-only, without
#: ``delete`` it cannot delete (a ``capabilities`` attribute, where there is
#: one, declares the capabilities instead).
OPTIONAL_BACKEND_METHODS: Mapping[str, str] = {"open_writer": "write", "delete": "delete"}

#: The methods of :class:`PythonBackend` every backend has: the registry checks
#: them when a factory returns a Python backend.
REQUIRED_BACKEND_METHODS: tuple[str, ...] = tuple(
    name
    for name, member in vars(PythonBackend).items()
    if callable(member) and not name.startswith("_") and name not in OPTIONAL_BACKEND_METHODS
)


class BackendRegistrar(Protocol):
    def __call__(self, scheme: str, factory: Callable[[], object], *, description: str = "") -> None:
        """Declare that this plugin serves ``scheme://`` URIs.

        ``factory`` is called once, the first time a URI of the scheme is used,
        and returns the backend: a ``dataio.backend.v1`` capsule from the
        plugin's native module (fast path, no GIL per request), or any Python
        object with the methods of :class:`PythonBackend` (correct but
        slower: the GIL is taken per call).
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
        companions: Callable[[str, dict[str, Any]], tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]]
        | None = None,
        prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        output: Mapping[str, Any] | None = None,
        takes: Mapping[str, Any] | None = None,
    ) -> None:
        """Declare a pipeline op named ``name``.

        ``fn`` is a Python implementation: for ``kind="decode"`` it receives
        the slot's raw ``bytes`` plus the op's parameters and returns a numpy
        array; for ``kind="transform"`` it receives and returns a numpy array.
        The executor takes the GIL for each call, so Python ops are correct but
        slow; the core's own ops are native and pass ``fn=None``.
        ``params`` maps each parameter name to its type (or a tuple of types)
        for plan validation. ``companions`` (decoders only) is called when a
        pipeline is built with the slot's name and the decoder's parameters,
        and returns the decoder's parameters to use and the slots to add
        beside it, as ``(name, op, params)`` reading the same field
        (``decode_video(audio=True)`` adds ``<slot>_audio``). ``prepare`` is
        called with the op's parameters where the pipeline is written, before
        they are checked, and returns them as the op takes them: the place to
        turn a Python object the op accepts into its JSON form (dataio-text
        writes a ``tokenizers.Tokenizer`` to a file and passes its path). It
        may raise :class:`dataio.errors.PlanError`; it must accept what it
        returned (the parameters may be prepared again). ``output`` and
        ``takes`` say what every output is and what a transform takes, as
        ``{"dtype": "float32", "ndim": 2}`` (either key None or absent:
        any): an op whose input does not fit the declared output of the op
        before it is refused where the pipeline is built, and a tensor it
        does not take fails the row, naming what it got, before it is called.
        """


class CapabilityRegistrar(Protocol):
    def __call__(self, name: str, probe: Callable[[], Mapping[str, Any]]) -> None:
        """Add a row to the capability report (``python -m dataio``).

        ``probe`` runs only when the report is built and returns a mapping with
        ``status`` (``"ok"``, ``"unavailable"``, ``"not implemented yet"`` or
        ``"error"``) and optionally ``detail`` (the reason, a version, what was
        found) and ``schemes``. Never put a secret in it.
        """


@runtime_checkable
class DeviceReader(Protocol):
    """What a device-reader plugin registers: reads whole safetensors files
    into the memory of an accelerator.

    ``read_safetensors(files, device)`` gets the shard files of one checkpoint
    (URIs, in order) and a device string such as ``"cuda:0"``, and returns
    every tensor by name, on that device (torch tensors). It reads the files'
    layout through :meth:`dataio.formats.safetensors.SafetensorsFile.layout`.

    ``info()`` reports on the reader without doing any I/O: a mapping with at
    least ``path``, the path the last read took (plugin-defined, e.g.
    ``"gds"`` or ``"staged"``; ``None`` before the first read).
    ``dataio.gds_info()`` shows it.
    """

    def read_safetensors(self, files: Sequence[str], device: str) -> dict[str, Any]: ...

    def info(self) -> Mapping[str, Any]: ...


class DeviceReaderRegistrar(Protocol):
    def __call__(self, device_type: str, reader: DeviceReader, *, description: str = "") -> None:
        """Declare that ``reader`` reads checkpoints onto ``device_type``
        devices (the part of a device string before ``:``, e.g. ``"cuda"``).

        ``reader`` must be cheap to build: it is created when plugins load;
        load libraries on its first read, not before. Without a reader for a
        device type, dataio stages through pinned host memory itself.
        """


class NamespaceRegistrar(Protocol):
    def __call__(self, name: str, loader: Callable[[], object], *, description: str = "") -> None:
        """Serve the public module ``dataio.<name>`` (e.g. ``dataio.rdma``).

        The core keeps a thin module under that name whose attributes resolve,
        on first use, to the attributes of the object ``loader()`` returns
        (usually the plugin's own package). ``loader`` is called once, the
        first time one of those names is used.
        """


class ExecutorRegistrar(Protocol):
    def __call__(self, name: str, factory: Callable[[], Any], *, description: str = "") -> None:
        """Declare an executor that ``run(executor=name)`` picks.

        ``factory()`` is called for each run that names the executor and
        returns an object implementing the executor contract of
        :mod:`dataio.executor` (``start(job) -> EpochRun``).
        """


class StatsRegistrar(Protocol):
    def __call__(self, section: str, counters: Callable[[], Mapping[str, int | float]], *, description: str = "") -> None:
        """Add ``loader.stats()[section]``: what this plugin counted while
        the loader ran.

        ``counters()`` returns the plugin's process-wide counters by name
        (numbers that only grow: requests, retries, bytes). A loader calls it
        when it starts and at each ``stats()``, and reports each counter's
        growth since its start; so it must be cheap (no I/O) and safe from
        any thread. ``section`` is an identifier; the core's own sections
        (``source``, ``sources``, ``pack``, ``source_reads``) are refused.
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


@hookspec
def dataio_register_device_readers(register: DeviceReaderRegistrar) -> None:
    """Called once when plugins load; register readers that put checkpoints
    on a device type (``read_safetensors(..., device="cuda:0")`` uses them)."""


@hookspec
def dataio_register_namespaces(register: NamespaceRegistrar) -> None:
    """Called once when plugins load; register the object behind a public
    ``dataio.<name>`` module the core forwards to (``dataio.rdma``)."""


@hookspec
def dataio_register_executors(register: ExecutorRegistrar) -> None:
    """Called once when plugins load; register executors by name
    (``run(executor="ray")``)."""


@hookspec
def dataio_register_stats(register: StatsRegistrar) -> None:
    """Called once when plugins load; register sections of
    ``loader.stats()`` (``"http"``: dataio-http's responses by status class,
    retries, refusals and bytes)."""
