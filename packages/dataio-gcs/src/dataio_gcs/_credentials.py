"""Endpoint and credentials for gs://, resolved the way google-auth does, as
the options the native backend takes.

``configure_credentials("gs", method=...)``:

* ``"default"`` (also when nothing is configured): google-auth's
  application-default chain — ``GOOGLE_APPLICATION_CREDENTIALS``, the gcloud
  ADC file, the metadata server (GCE, GKE workload identity). google-auth
  refreshes the token; the native side asks again shortly before it expires.
* ``"service_account"``: ``path=`` to a service-account JSON key file (or
  ``info=`` the parsed JSON).
* ``"token"``: ``token=`` an OAuth2 access token you manage.
* ``"anonymous"``: unsigned requests (public buckets, emulators).
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from dataio.config import SchemeSettings
from dataio.errors import AccessDeniedError, InvalidArgumentError
from dataio.plugins import CredentialRefresh as Refresh

SCOPES = ["https://www.googleapis.com/auth/devstorage.read_write"]


def _fixed_bearer(token: str) -> Refresh:
    """A refresh returning a token the user gave, which has no known expiry."""
    return lambda: {"bearer": token, "expires_at": None}


def _google_refresh(creds: Any) -> Refresh:
    from google.auth.transport.requests import Request

    def refresh() -> dict[str, Any]:
        if not creds.valid:
            creds.refresh(Request())
        expiry = creds.expiry  # naive UTC, or None
        return {
            "bearer": creds.token,
            "expires_at": expiry.replace(tzinfo=UTC).timestamp() if expiry is not None else None,
        }

    return refresh


def resolve(settings: SchemeSettings) -> tuple[dict[str, Any], Refresh | None]:
    """The native backend's credential options and token callback for gs://
    (the plugin's shell adds the configured endpoint as ``google_base_url``)."""
    scheme, method, values = settings.scheme, settings.method, settings.values
    options: dict[str, Any] = {}
    refresh: Refresh | None = None
    if method == "anonymous":
        options["google_skip_signature"] = True
    elif method == "token":
        token = values.get("token")
        if not token:
            raise InvalidArgumentError(f"{scheme}:// method='token' needs token=")
        refresh = _fixed_bearer(token)
    elif method in ("default", "service_account", "explicit"):
        try:
            import google.auth
            from google.oauth2 import service_account
        except ImportError as exc:
            raise InvalidArgumentError(f"{scheme}:// credentials need google-auth (pip install 'google-auth[requests]>=2.20')") from exc
        try:
            if values.get("path"):
                found = service_account.Credentials.from_service_account_file(values["path"], scopes=SCOPES)
            elif values.get("info"):
                found = service_account.Credentials.from_service_account_info(values["info"], scopes=SCOPES)
            elif method == "default":
                found, _ = google.auth.default(scopes=SCOPES)
            else:
                raise InvalidArgumentError(f"{scheme}:// method={method!r} needs path= (a service-account key file) or info=")
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise AccessDeniedError(
                f"{scheme}://: google-auth found no credentials ({type(exc).__name__}); use "
                f"configure_credentials({scheme!r}, method='anonymous') for public buckets"
            ) from None
        refresh = _google_refresh(found)
    else:
        raise settings.unsupported_method()
    return options, refresh
