"""The dataio exception tree.

Every error dataio raises is a :class:`DataioError`. Where Python has a
built-in that callers already catch, the dataio class derives from it too, so
``except FileNotFoundError`` works for a missing S3 key just as for a missing
local file.

Attributes set when known: ``uri``; for row errors ``key``, ``index``,
``slot``, ``op``, ``cause`` and ``cause_kind``; for range errors ``offset``,
``size`` and ``length``; for storage errors ``transient``.

Each class that stands for one of the engine's error kinds says so in its
``kind`` attribute; the native layer picks the class of an engine error by
that kind (:data:`BY_KIND`), and maps an exception raised by Python code (a
plugin's backend or op) back to a kind the same way — subclasses included.
Built-in exceptions from Python backends keep their meaning: a
``TimeoutError`` arrives as :class:`TimeoutError` (which is also the
built-in), a ``ConnectionError`` as :class:`ConnectionError`.
"""

from __future__ import annotations

import builtins

__all__ = [
    "DataioError",
    "NotFoundError",
    "AccessDeniedError",
    "IsADirectoryError",
    "NotADirectoryError",
    "AlreadyExistsError",
    "InvalidArgumentError",
    "InvalidURIError",
    "UnsupportedSchemeError",
    "OutOfRangeError",
    "CorruptDataError",
    "DecodeError",
    "PlanError",
    "StorageError",
    "TimeoutError",
    "ConnectionError",
    "CancelledError",
    "UnsupportedOperationError",
    "RowError",
    "PluginError",
    "CheckpointError",
    "LoaderUsageError",
    "MissingExtraError",
    "BY_KIND",
]


class DataioError(Exception):
    """Base class of every error raised by dataio."""

    uri: str | None = None


class NotFoundError(DataioError, builtins.FileNotFoundError):
    """The file or object does not exist."""

    kind = "not_found"


class AccessDeniedError(DataioError, builtins.PermissionError):
    """The store refused access (permissions, credentials, read-only)."""

    kind = "permission_denied"


class IsADirectoryError(DataioError, builtins.IsADirectoryError):  # noqa: A001
    """A directory (or prefix) was given where a file was expected."""

    kind = "is_a_directory"


class NotADirectoryError(DataioError, builtins.NotADirectoryError):  # noqa: A001
    """A file was given where a directory was expected."""

    kind = "not_a_directory"


class AlreadyExistsError(DataioError, builtins.FileExistsError):
    """The destination exists and the operation does not overwrite."""

    kind = "already_exists"


class InvalidArgumentError(DataioError, ValueError):
    """An argument is out of its domain."""

    kind = "invalid_argument"


class InvalidURIError(InvalidArgumentError):
    """The URI is malformed."""

    kind = "invalid_uri"


class UnsupportedSchemeError(InvalidArgumentError):
    """No installed plugin serves this URI scheme; the message names the package."""

    kind = "unsupported_scheme"


class OutOfRangeError(InvalidArgumentError):
    """A byte range does not lie inside the object."""

    kind = "out_of_range"

    offset: int | None = None
    size: int | None = None
    length: int | None = None


class CorruptDataError(DataioError, ValueError):
    """Stored data is malformed (truncated gzip, bad tar, lying header, bad CRC)."""

    kind = "corrupt"


class DecodeError(CorruptDataError):
    """A decoder could not decode a sample."""

    kind = "decode"


class PlanError(InvalidArgumentError):
    """The pipeline plan is invalid; the message names the stage."""

    kind = "plan"


class StorageError(DataioError, OSError):
    """The storage backend failed (network, server error, IO error)."""

    kind = "backend"

    transient: bool = False


class TimeoutError(StorageError, builtins.TimeoutError):  # noqa: A001
    """An operation did not finish in time."""

    kind = "timeout"


class ConnectionError(StorageError, builtins.ConnectionError):  # noqa: A001
    """The connection to the store failed or was lost."""

    kind = "connection"
    transient = True


class CancelledError(DataioError):
    """The operation was cancelled (the loader was closed)."""

    kind = "cancelled"


class UnsupportedOperationError(DataioError, builtins.NotImplementedError):
    """The backend does not support this operation (e.g. writing to a read-only store)."""

    kind = "unsupported"


class RowError(DataioError):
    """One record failed inside a pipeline.

    ``key``, ``index``, ``slot``, ``op`` and ``uri`` say exactly where;
    ``cause`` is the underlying message and ``cause_kind`` its error class name.
    """

    kind = "row"

    key: str | None = None
    index: int | None = None
    slot: str | None = None
    op: str | None = None
    cause: str | None = None
    cause_kind: str | None = None


class PluginError(DataioError):
    """A plugin is broken or conflicts with another (two plugins claim a scheme)."""


class CheckpointError(InvalidArgumentError):
    """A loader state cannot be restored (another plan, another dataset, corrupt)."""


class LoaderUsageError(DataioError, RuntimeError):
    """A loader used where it cannot run: in a process forked after it
    started (create it in the worker), or by two iterations at once (one
    loader per consumer)."""


class MissingExtraError(DataioError, builtins.ImportError):
    """A feature needs third-party packages that are not installed; the
    message names the extra that brings them (``pip install 'dataio[jax]'``),
    ``extra`` holds its name."""

    extra: str | None = None


def _by_kind() -> dict[str, type[DataioError]]:
    out: dict[str, type[DataioError]] = {}
    pending: list[type[DataioError]] = [DataioError]
    while pending:
        cls = pending.pop()
        kind = cls.__dict__.get("kind")
        if kind is not None and cls.__module__ == __name__:
            out.setdefault(kind, cls)
        pending.extend(cls.__subclasses__())
    return out


#: The class of each engine error kind (the native layer raises these).
BY_KIND: dict[str, type[DataioError]] = _by_kind()
