"""Tuning options per scheme (retries, timeouts, multipart part size), set
with :func:`configure`; they take effect on the next use of the scheme."""

from __future__ import annotations

import threading
from typing import Any

from dataio import _native
from dataio.errors import InvalidArgumentError

#: Keys :func:`configure` accepts, with what they mean.
TUNING = {
    "max_retries": "retries of one request on throttling, 5xx and connection errors (default 10)",
    "retry_timeout": "seconds after which a request stops being retried (default 180)",
    "backoff_initial": "first backoff in seconds (default 0.1; doubles up to backoff_max)",
    "backoff_max": "longest backoff in seconds (default 15)",
    "timeout": "seconds one request may take, body included (e.g. '30s' or 30)",
    "connect_timeout": "seconds to establish a connection",
    "part_size": "bytes per multipart part; streaming writes below it are one PUT (default 8 MiB, min 5 MiB)",
    "max_part_uploads": "parts uploaded in parallel by one streaming write (default 8)",
    "virtual_hosted_style_request": "address buckets as bucket.host instead of host/bucket",
}

_lock = threading.Lock()
_options: dict[str, dict[str, Any]] = {}


def configure(scheme: str = "s3", **options: Any) -> dict[str, Any]:
    """Set tuning options for ``scheme`` (``s3`` or ``r2``); see ``TUNING``."""
    unknown = sorted(set(options) - set(TUNING))
    if unknown:
        raise InvalidArgumentError(f"unknown dataio-s3 options {unknown}; known: {sorted(TUNING)}")
    scheme = scheme.lower().removesuffix("://")
    with _lock:
        merged = {**_options.get(scheme, {}), **options}
        _options[scheme] = {k: v for k, v in merged.items() if v is not None}
    _native.unregister_backend(scheme)  # the next use builds a backend with these
    return dict(_options[scheme])


def options(scheme: str) -> dict[str, Any]:
    with _lock:
        return dict(_options.get(scheme, {}))


def native_value(key: str, value: Any) -> Any:
    """object_store reads durations as '30s'; plain numbers mean seconds."""
    if key in ("timeout", "connect_timeout") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{float(value)}s"
    return value
