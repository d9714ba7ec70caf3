"""The dataio exception tree.

Every error dataio raises is a :class:`DataioError`. Where Python has a
built-in that callers already catch, the dataio class derives from it too, so
``except FileNotFoundError`` works for a missing S3 key just as for a missing
local file.

Attributes set when known: ``uri``; for row errors ``key``, ``index``,
``slot``, ``op``, ``cause`` and ``cause_kind``; for range errors ``offset``,
``size`` and ``length``; for storage errors ``transient``.
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
    "CancelledError",
    "UnsupportedOperationError",
    "RowError",
    "PluginError",
    "CheckpointError",
]


class DataioError(Exception):
    """Base class of every error raised by dataio."""

    uri: str | None = None


class NotFoundError(DataioError, builtins.FileNotFoundError):
    """The file or object does not exist."""


class AccessDeniedError(DataioError, builtins.PermissionError):
    """The store refused access (permissions, credentials, read-only)."""


class IsADirectoryError(DataioError, builtins.IsADirectoryError):  # noqa: A001
    """A directory (or prefix) was given where a file was expected."""


class NotADirectoryError(DataioError, builtins.NotADirectoryError):  # noqa: A001
    """A file was given where a directory was expected."""


class AlreadyExistsError(DataioError, builtins.FileExistsError):
    """The destination exists and the operation does not overwrite."""


class InvalidArgumentError(DataioError, ValueError):
    """An argument is out of its domain."""


class InvalidURIError(InvalidArgumentError):
    """The URI is malformed."""


class UnsupportedSchemeError(InvalidArgumentError):
    """No installed plugin serves this URI scheme; the message names the package."""


class OutOfRangeError(InvalidArgumentError):
    """A byte range does not lie inside the object."""

    offset: int | None = None
    size: int | None = None
    length: int | None = None


class CorruptDataError(DataioError, ValueError):
    """Stored data is malformed (truncated gzip, bad tar, lying header, bad CRC)."""


class DecodeError(CorruptDataError):
    """A decoder could not decode a sample."""


class PlanError(InvalidArgumentError):
    """The pipeline plan is invalid; the message names the stage."""


class StorageError(DataioError, OSError):
    """The storage backend failed (network, server error, IO error)."""

    transient: bool = False


class TimeoutError(StorageError, builtins.TimeoutError):  # noqa: A001
    """An operation did not finish in time."""


class CancelledError(DataioError):
    """The operation was cancelled (the loader was closed)."""


class UnsupportedOperationError(DataioError, builtins.NotImplementedError):
    """The backend does not support this operation (e.g. writing to a read-only store)."""


class RowError(DataioError):
    """One record failed inside a pipeline.

    ``key``, ``index``, ``slot``, ``op`` and ``uri`` say exactly where;
    ``cause`` is the underlying message and ``cause_kind`` its error class name.
    """

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
