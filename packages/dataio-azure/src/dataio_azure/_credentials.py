"""Account, endpoint and credentials for az://, as the options the native
backend takes.

URIs are ``az://container/path`` (the account comes from configuration) or
``az://container@account/path``. The account is ``account=`` in the
credentials, else ``AZURE_STORAGE_ACCOUNT_NAME``, else the connection
string, else the first path segment of a configured endpoint (Azurite's
``http://127.0.0.1:10000/devstoreaccount1`` form).

``configure_credentials("az", method=...)``:

* ``"default"`` (also when nothing is configured):
  ``AZURE_STORAGE_CONNECTION_STRING`` when set (account key or SAS, as the
  Azure SDKs read it), else azure-identity's ``DefaultAzureCredential``
  (environment service principal, workload identity, managed identity, Azure
  CLI, ...). Tokens are refreshed by azure-identity; the native side asks
  again shortly before they expire.
* ``"shared_key"``: ``account_key=``.
* ``"sas"``: ``sas_token=`` (with or without the leading ``?``).
* ``"token"``: ``token=`` an Entra ID access token you manage.
* ``"explicit"``: whichever of the above keys is given, or ``client_id=``,
  ``client_secret=``, ``tenant_id=`` for a service principal.
* ``"anonymous"``: unsigned requests (public containers).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from dataio.config import SchemeSettings
from dataio.errors import InvalidArgumentError
from dataio.plugins import CredentialRefresh as Refresh

SCOPE = "https://storage.azure.com/.default"


def _parse_connection_string(text: str) -> dict[str, str]:
    parts = dict(p.split("=", 1) for p in text.split(";") if "=" in p)
    return {k.strip(): v.strip() for k, v in parts.items()}


def _fixed_bearer(token: str) -> Refresh:
    """A refresh returning a token the user gave, which has no known expiry."""
    return lambda: {"bearer": token, "expires_at": None}


def _identity_refresh(credential: Any) -> Refresh:
    def refresh() -> dict[str, Any]:
        token = credential.get_token(SCOPE)
        return {"bearer": token.token, "expires_at": float(token.expires_on)}

    return refresh


def _apply_keys(scheme: str, values: Mapping[str, Any], options: dict[str, Any]) -> bool:
    """Static credentials from ``values``; True when some were found."""
    if values.get("account_key"):
        options["azure_storage_account_key"] = values["account_key"]
    elif values.get("sas_token"):
        options["azure_storage_sas_key"] = str(values["sas_token"]).lstrip("?")
    elif values.get("client_secret"):
        for key in ("client_id", "client_secret", "tenant_id"):
            if not values.get(key):
                raise InvalidArgumentError(f"{scheme}:// service-principal credentials need client_id=, client_secret= and tenant_id=")
            options[f"azure_storage_{key}"] = values[key]
    else:
        return False
    return True


def resolve(settings: SchemeSettings) -> tuple[dict[str, Any], Refresh | None]:
    """The native backend's options and token callback for az://."""
    scheme, method, values = settings.scheme, settings.method, settings.values
    options: dict[str, Any] = {}
    conn = _parse_connection_string(os.environ.get("AZURE_STORAGE_CONNECTION_STRING", "")) if method == "default" else {}
    endpoint = settings.endpoint or conn.get("BlobEndpoint")
    account = values.get("account") or values.get("account_name") or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or conn.get("AccountName")
    if endpoint:
        options["azure_storage_endpoint"] = endpoint.rstrip("/")
        options["azure_allow_http"] = endpoint.startswith("http://")
        segments = [s for s in urllib.parse.urlparse(endpoint).path.split("/") if s]
        if not account and len(segments) == 1:
            account = segments[0]
    if account:
        options["azure_storage_account_name"] = account

    refresh: Refresh | None = None
    if method == "anonymous":
        options["azure_skip_signature"] = True
    elif method == "shared_key":
        if not _apply_keys(scheme, {"account_key": values.get("account_key")}, options):
            raise InvalidArgumentError(f"{scheme}:// method='shared_key' needs account_key=")
    elif method == "sas":
        if not _apply_keys(scheme, {"sas_token": values.get("sas_token") or values.get("token")}, options):
            raise InvalidArgumentError(f"{scheme}:// method='sas' needs sas_token=")
    elif method == "token":
        token = values.get("token")
        if not token:
            raise InvalidArgumentError(f"{scheme}:// method='token' needs token=")
        refresh = _fixed_bearer(token)
    elif method == "explicit":
        if not _apply_keys(scheme, values, options):
            raise InvalidArgumentError(
                f"{scheme}:// explicit credentials need account_key=, sas_token=, or client_id= + client_secret= + tenant_id="
            )
    elif method == "default":
        if conn.get("AccountKey"):
            options["azure_storage_account_key"] = conn["AccountKey"]
        elif conn.get("SharedAccessSignature"):
            options["azure_storage_sas_key"] = conn["SharedAccessSignature"].lstrip("?")
        else:
            try:
                from azure.identity import DefaultAzureCredential
            except ImportError as exc:
                raise InvalidArgumentError(f"{scheme}:// method='default' needs azure-identity (pip install 'azure-identity>=1.15')") from exc
            refresh = _identity_refresh(DefaultAzureCredential())
    else:
        raise settings.unsupported_method()
    return options, refresh
