"""Tuning options per scheme (retries, timeouts, multipart part size), set
with :func:`configure`; they take effect on the next use of the scheme."""

from __future__ import annotations

from typing import Any

from dataio.plugins import SchemeOptions

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

_OPTIONS = SchemeOptions("dataio-s3", TUNING, durations=("timeout", "connect_timeout"))


def configure(scheme: str = "s3", **options: Any) -> dict[str, Any]:
    """Set tuning options for ``scheme`` (``s3`` or ``r2``); see ``TUNING``."""
    return _OPTIONS.configure(scheme, **options)


def native_options(scheme: str) -> dict[str, Any]:
    """The options of ``scheme`` as the native backend reads them."""
    return _OPTIONS.native(scheme)
