"""URI helpers shared by the Python modules."""

from __future__ import annotations

import os

__all__ = ["scheme", "local_path", "join"]


def scheme(uri: str) -> str | None:
    head, sep, _ = uri.partition("://")
    if not sep or not head or not head[0].isalpha():
        return None
    return head.lower()


def local_path(uri: str) -> str | None:
    """The filesystem path of a local URI (plain path or file://), else None."""
    s = scheme(uri)
    if s is None:
        return uri
    if s == "file":
        rest = uri[len("file://") :]
        return rest[len("localhost") :] if rest.startswith("localhost/") else rest
    return None


def join(base: str, name: str) -> str:
    if local_path(base) is not None and scheme(base) is None:
        return os.path.join(base, name)
    return base.rstrip("/") + "/" + name
