"""URI helpers shared by the Python modules: thin wrappers over the engine's
URI rules (``dataio._native``), so a string means here what it means to the
IO layer. A URI the IO layer refuses (``1x://a``, ``://a``, ``a_b://c``,
``file://rel``) raises the same :class:`dataio.errors.InvalidURIError`."""

from __future__ import annotations

import os

from . import _native

__all__ = ["scheme", "local_path", "join"]


def scheme(uri: str) -> str | None:
    """The scheme, lower-case (``"file"`` for ``file://``), or None for a plain path."""
    return _native.uri_scheme(uri)


def local_path(uri: str) -> str | None:
    """The filesystem path of a local URI (plain path or file://), else None."""
    return _native.uri_local_path(uri)


def join(base: str, name: str) -> str:
    if scheme(base) is None:  # a plain path: the platform's rule
        return os.path.join(base, name)
    return base.rstrip("/") + "/" + name
