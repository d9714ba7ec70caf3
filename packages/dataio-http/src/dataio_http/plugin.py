"""Entry-point module of dataio-http: registers http:// and https://, its
report row and its ``loader.stats()["http"]`` section."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dataio.config import http_settings
from dataio.hookspecs import BackendRegistrar, CapabilityRegistrar, StatsRegistrar, hookimpl

from . import __version__, _native


def _factory(scheme: str) -> Callable[[], object]:
    def make() -> object:
        return _native.backend(scheme, http_settings())

    return make


@hookimpl
def dataio_register_backends(register: BackendRegistrar) -> None:
    register("http", _factory("http"), description="plain HTTP URLs (range reads, retries, internal addresses refused)")
    register("https", _factory("https"), description="HTTPS URLs (rustls, system roots and SSL_CERT_FILE)")


def report() -> Mapping[str, Any]:
    s = http_settings()
    detail = (
        f"reqwest + rustls (dataio-http {__version__}); internal addresses "
        f"{'allowed' if s.get('allow_private') else 'refused'}"
        + (f" but {s['allow_hosts']}" if s.get("allow_hosts") and not s.get("allow_private") else "")
        + f", {s.get('max_connections_per_host')} connections per host"
    )
    return {"status": "ok", "detail": detail, "schemes": ["http", "https"]}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-http", report)


@hookimpl
def dataio_register_stats(register: StatsRegistrar) -> None:
    register("http", _native.stats, description="responses by status class, retries, refused URLs, body bytes")
