"""Tuning options per scheme (retries, timeouts, multipart part size), set
with :func:`configure`; they take effect on the next use of the scheme."""

from __future__ import annotations

from typing import Any

from dataio.plugins import OBJECT_STORE_TUNING, SchemeOptions

#: Keys :func:`configure` accepts, with what they mean.
TUNING = dict(OBJECT_STORE_TUNING)

_OPTIONS = SchemeOptions("dataio-gcs", TUNING, durations=("timeout", "connect_timeout"))


def configure(scheme: str = "gs", **options: Any) -> dict[str, Any]:
    """Set tuning options for ``scheme`` (``gs``); see ``TUNING``."""
    return _OPTIONS.configure(scheme, **options)


def native_options(scheme: str) -> dict[str, Any]:
    """The options of ``scheme`` as the native backend reads them."""
    return _OPTIONS.native(scheme)
