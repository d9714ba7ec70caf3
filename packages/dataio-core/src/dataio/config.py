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
    from ._plugins import BUILTIN, SCHEME_ALIASES, SHIPPED_SCHEMES, host

    if scheme in SHIPPED_SCHEMES:
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
    why = "is served by dataio itself (local files)" if reg is not None and reg.plugin == BUILTIN else "is served by no installed plugin"
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
    for s in schemes:
        _forget_backend(s)
