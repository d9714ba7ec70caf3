"""Per-scheme credentials and endpoints, configured once and read by plugins.

Secrets are stored here and handed to a plugin's data path; they never appear
in a repr, a log line, an error message or the capability report.
"""

from __future__ import annotations

import dataclasses
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .errors import InvalidArgumentError

__all__ = [
    "Credentials",
    "SchemeSettings",
    "configure_credentials",
    "configure_endpoint",
    "configure_http",
    "http_settings",
    "get_credentials",
    "get_endpoint",
    "get_settings",
    "reset",
]

#: Keys whose values may be shown; everything else is treated as secret.
PUBLIC_KEYS = frozenset(
    {"method", "region", "profile", "account", "account_name", "project", "project_id", "tenant_id", "client_id", "role_arn", "endpoint", "anonymous"}
)
METHODS = ("default", "explicit", "anonymous", "env", "profile", "sas", "shared_key", "token", "service_account")

_lock = threading.Lock()
_credentials: dict[str, Credentials] = {}
_endpoints: dict[str, str] = {}


class Credentials:
    """Credentials for one scheme. Values are readable with ``get``/``[]`` but
    never printed: the repr shows which keys are set, not what they hold."""

    __slots__ = ("scheme", "method", "_values")

    def __init__(self, scheme: str, method: str, values: Mapping[str, Any]) -> None:
        self.scheme = scheme
        self.method = method
        self._values = dict(values)

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def keys(self) -> list[str]:
        return list(self._values)

    def as_dict(self) -> dict[str, Any]:
        """The raw values, for a plugin's data path. Never log the result."""
        return dict(self._values)

    def redacted(self) -> dict[str, str]:
        return {k: (str(v) if k in PUBLIC_KEYS else "***") for k, v in self._values.items()}

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.redacted().items())
        return f"Credentials(scheme={self.scheme!r}, method={self.method!r}{', ' if shown else ''}{shown})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("dataio Credentials cannot be pickled (they would carry secrets)")


def _norm_scheme(scheme: str) -> str:
    if not isinstance(scheme, str) or not scheme or not scheme[0].isalpha():
        raise InvalidArgumentError(f"invalid scheme {scheme!r}")
    return scheme.lower().removesuffix("://")


def _forget_backend(scheme: str) -> None:
    # A backend built with the old settings must not outlive them.
    from . import _native

    _native.unregister_backend(scheme)


def configure_credentials(scheme: str, method: str | None = None, **values: Any) -> Credentials:
    """Set the credentials used for ``scheme://`` URIs.

    ``method="default"`` resolves them the way the platform's SDK does
    (environment, shared profile, instance metadata, workload identity);
    ``method="anonymous"`` sends unsigned requests; explicit keys
    (``access_key_id=``, ``secret_access_key=``, ``token=``, ...) imply
    ``method="explicit"``.
    """
    scheme = _norm_scheme(scheme)
    if method is None:
        method = "explicit" if values else "default"
    if method not in METHODS:
        raise InvalidArgumentError(f"unknown credentials method {method!r}; expected one of {', '.join(METHODS)}")
    if method == "explicit" and not values:
        raise InvalidArgumentError("method='explicit' needs the credential values as keyword arguments")
    creds = Credentials(scheme, method, values)
    with _lock:
        _credentials[scheme] = creds
    _forget_backend(scheme)
    return creds


def _check_endpoint_scheme(scheme: str) -> None:
    """Refuses a scheme no backend plugin serves: an endpoint set for it
    would be read by nothing (a typo, or ``http`` and ``https``, which no
    plugin serves yet)."""
    from ._plugins import BUILTIN, ENDPOINT_SCHEMES, SCHEME_ALIASES, SHIPPED_SCHEMES, host

    if scheme in ENDPOINT_SCHEMES:
        return  # known without loading plugins
    if scheme in SCHEME_ALIASES and scheme not in host.endpoint_schemes():
        canon = SCHEME_ALIASES[scheme]
        raise InvalidArgumentError(
            f"configure_endpoint({scheme!r}, ...): dataio names this store {canon}://; "
            f"call configure_endpoint({canon!r}, ...) and write {canon}:// URIs"
        )
    takes = host.endpoint_schemes()  # loads plugins: a third-party backend's scheme
    if scheme in takes:
        return
    reg = host.backends().get(scheme)
    if reg is not None and reg.plugin == BUILTIN:
        why = "is served by dataio itself (local files)"
    elif scheme in SHIPPED_SCHEMES:
        why = f"is served by {SHIPPED_SCHEMES[scheme]}, whose URLs name their server (configure_http sets its options)"
    else:
        why = "is served by no installed plugin"
    raise InvalidArgumentError(
        f"configure_endpoint({scheme!r}, ...): {scheme}:// {why}, so it takes no endpoint; "
        f"the schemes that take one: {', '.join(takes)}"
    )


def configure_endpoint(scheme: str, url: str) -> str:
    """Send ``scheme://`` requests to ``url`` (an S3-compatible store, a mirror, an emulator).

    ``scheme`` is one a backend plugin serves: ``s3``, ``r2``, ``gs``,
    ``az``, ``hf`` (whether or not their plugin is installed yet) or the
    scheme of an installed third-party backend. Any other (``file``, a
    typo, ``http``, which no plugin serves) is an :class:`InvalidArgumentError`
    naming the schemes that take an endpoint."""
    scheme = _norm_scheme(scheme)
    _check_endpoint_scheme(scheme)
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InvalidArgumentError(f"endpoint for {scheme}:// must be an http(s) URL with a host, got {url!r}")
    if parsed.username or parsed.password:
        raise InvalidArgumentError("put credentials in configure_credentials(), not in the endpoint URL")
    url = url.rstrip("/")
    with _lock:
        _endpoints[scheme] = url
    _forget_backend(scheme)
    return url


#: configure_http's options and their defaults.
HTTP_DEFAULTS: dict[str, Any] = {
    "allow_private": False,
    "allow_hosts": (),
    "max_connections_per_host": 16,
    "timeout": 30.0,
    "retries": 3,
    "user_agent": None,
    "respect_robots": True,
}
_http: dict[str, Any] = dict(HTTP_DEFAULTS)


def configure_http(
    *,
    allow_private: bool | None = None,
    allow_hosts: list[str] | tuple[str, ...] | None = None,
    max_connections_per_host: int | None = None,
    timeout: float | None = None,
    retries: int | None = None,
    user_agent: str | None = None,
    respect_robots: bool | None = None,
) -> dict[str, Any]:
    """Options of ``http://`` and ``https://`` URIs (the dataio-http plugin);
    those not given keep their value. Returns them all.

    A URL may come from data, so by default one whose host is or resolves to
    a loopback, private, link-local (the cloud metadata address
    ``169.254.169.254``), multicast or reserved address is refused (also
    after a redirect, and on the address actually connected to).
    ``allow_private=True`` allows every such address; ``allow_hosts`` allows
    some: host names (exact) and addresses or networks (``"10.0.0.0/8"``).
    ``max_connections_per_host`` (16) requests in flight per host,
    ``timeout`` (30 s) per request, ``retries`` (3) on connection errors,
    timeouts, cut bodies, 5xx, 408 and 429 (``Retry-After`` honoured),
    ``user_agent`` (``dataio/<version>``), ``respect_robots`` (True: a
    response whose ``X-Robots-Tag`` says ``noai`` or ``noimageai`` is
    refused). TLS uses the system's roots and ``SSL_CERT_FILE``."""
    given = {
        "allow_private": allow_private, "allow_hosts": allow_hosts, "max_connections_per_host": max_connections_per_host,
        "timeout": timeout, "retries": retries, "user_agent": user_agent, "respect_robots": respect_robots,
    }
    for key in ("allow_private", "respect_robots"):
        if given[key] is not None and not isinstance(given[key], bool):
            raise InvalidArgumentError(f"configure_http: {key}= must be True or False, got {given[key]!r}")
    if allow_hosts is not None:
        if isinstance(allow_hosts, str) or not all(isinstance(h, str) and h and "," not in h for h in allow_hosts):
            raise InvalidArgumentError(f"configure_http: allow_hosts= is a list of host names or networks, got {allow_hosts!r}")
        given["allow_hosts"] = tuple(allow_hosts)
    for key, kind in (("max_connections_per_host", int), ("retries", int), ("timeout", (int, float))):
        v = given[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, kind) or v < (0 if key == "retries" else 1e-9)):
            raise InvalidArgumentError(f"configure_http: {key}= must be a {'positive ' if key != 'retries' else ''}number, got {v!r}")
    with _lock:
        _http.update({k: v for k, v in given.items() if v is not None})
        out = dict(_http)
    for scheme in ("http", "https"):
        _forget_backend(scheme)
    return out


def http_settings() -> dict[str, Any]:
    """configure_http's options now, as the backend takes them (text values;
    ``allow_hosts`` comma-joined, unset ones left out)."""
    with _lock:
        current = dict(_http)
    out: dict[str, Any] = {}
    for k, v in current.items():
        if v is None:
            continue
        out[k] = ",".join(v) if k == "allow_hosts" else v
    return out


def get_credentials(scheme: str) -> Credentials | None:
    with _lock:
        return _credentials.get(_norm_scheme(scheme))


def get_endpoint(scheme: str) -> str | None:
    with _lock:
        return _endpoints.get(_norm_scheme(scheme))


@dataclasses.dataclass(frozen=True)
class SchemeSettings:
    """Everything configured for one scheme, read at once: what a backend
    plugin's credential resolution starts from.

    ``method`` is ``"default"`` when nothing is configured; ``values`` are the
    credential values, secrets included (for the plugin's data path only: the
    repr leaves them out and the object refuses to pickle); ``endpoint`` is
    the URL from :func:`configure_endpoint`, or None."""

    scheme: str
    method: str
    values: Mapping[str, Any] = dataclasses.field(repr=False)
    endpoint: str | None

    @property
    def plain_http(self) -> bool:
        """Whether the configured endpoint says plain HTTP (never assumed otherwise)."""
        return self.endpoint is not None and self.endpoint.startswith("http://")

    def unsupported_method(self) -> InvalidArgumentError:
        """The error for a credentials method the plugin does not implement."""
        return InvalidArgumentError(f"{self.scheme}:// does not support credentials method {self.method!r}")

    def __reduce__(self) -> Any:
        raise TypeError("dataio SchemeSettings cannot be pickled (they would carry secrets)")


def get_settings(scheme: str) -> SchemeSettings:
    """The credentials method and values and the endpoint of ``scheme``, read
    together (so a concurrent ``configure_*`` call cannot mix old and new)."""
    scheme = _norm_scheme(scheme)
    with _lock:
        creds = _credentials.get(scheme)
        endpoint = _endpoints.get(scheme)
    if creds is None:
        return SchemeSettings(scheme, "default", {}, endpoint)
    return SchemeSettings(scheme, creds.method, creds.as_dict(), endpoint)


def reset(scheme: str | None = None) -> None:
    """Forget configured settings (all schemes, or one)."""
    with _lock:
        schemes = [scheme] if scheme else list({*_credentials, *_endpoints})
        for s in schemes:
            _credentials.pop(s, None)
            _endpoints.pop(s, None)
        if scheme is None or scheme in ("http", "https"):
            _http.clear()
            _http.update(HTTP_DEFAULTS)
    for s in schemes:
        _forget_backend(s)
