"""Endpoint, region and credentials for one scheme, resolved the way boto3
does, as the options the native backend takes.

``configure_credentials(scheme, method=...)``:

* ``"default"`` (also when nothing is configured) and ``"profile"``:
  botocore's chain — environment, shared config/credentials files (profile),
  SSO, web identity, container and instance metadata. Expiring credentials
  are refreshed by botocore; the native side asks again shortly before they
  expire.
* ``"env"``: only ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
  ``AWS_SESSION_TOKEN``.
* ``"explicit"``: ``access_key_id=``, ``secret_access_key=``, optional
  ``session_token=`` (or ``token=``).
* ``"anonymous"``: unsigned requests (public buckets).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dataio.config import SchemeSettings
from dataio.errors import AccessDeniedError, InvalidArgumentError
from dataio.plugins import CredentialRefresh as Refresh


def _region(scheme: str, values: Mapping[str, Any], session: Any = None) -> str:
    if values.get("region"):
        return str(values["region"])
    if scheme == "r2":
        return "auto"
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(var):
            return os.environ[var]
    if session is not None:
        region = session.get_config_variable("region")
        if region:
            return str(region)
    return "us-east-1"


def _botocore_session(profile: str | None) -> Any:
    try:
        import botocore.session  # type: ignore[import-untyped]
    except ImportError as exc:  # a dependency of dataio-s3; only a broken install lacks it
        raise InvalidArgumentError("method='default' needs botocore (pip install 'botocore>=1.34')") from exc
    return botocore.session.Session(profile=profile)


def _refresh_from(creds: Any) -> Refresh:
    """A callback that hands the native side botocore's current credentials."""

    def refresh() -> dict[str, Any]:
        frozen = creds.get_frozen_credentials()
        expiry = getattr(creds, "_expiry_time", None)  # set on RefreshableCredentials
        return {
            "key_id": frozen.access_key,
            "secret_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": expiry.timestamp() if expiry is not None else None,
        }

    return refresh


def resolve(settings: SchemeSettings) -> tuple[dict[str, Any], Refresh | None]:
    """The native backend's credential options and callback for one scheme
    (the plugin's shell adds the configured endpoint as ``aws_endpoint``)."""
    scheme, method, values = settings.scheme, settings.method, settings.values
    if settings.endpoint is None and scheme == "r2":
        raise InvalidArgumentError(
            "r2:// needs its endpoint: dataio.configure_endpoint('r2', 'https://<account>.r2.cloudflarestorage.com')"
        )
    if settings.endpoint is None and scheme != "s3":
        raise InvalidArgumentError(f"{scheme}:// needs an endpoint: dataio.configure_endpoint({scheme!r}, url)")
    options: dict[str, Any] = {}

    refresh: Refresh | None = None
    session = None
    if method == "anonymous":
        options["aws_skip_signature"] = True
    elif method == "explicit":
        key_id = values.get("access_key_id") or values.get("aws_access_key_id")
        secret = values.get("secret_access_key") or values.get("aws_secret_access_key")
        if not key_id or not secret:
            raise InvalidArgumentError(f"{scheme}:// explicit credentials need access_key_id= and secret_access_key=")
        options["aws_access_key_id"] = key_id
        options["aws_secret_access_key"] = secret
        token = values.get("session_token") or values.get("token")
        if token:
            options["aws_session_token"] = token
    elif method == "env":
        key_id, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not key_id or not secret:
            raise AccessDeniedError(f"{scheme}://: method='env' but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not set")
        options["aws_access_key_id"], options["aws_secret_access_key"] = key_id, secret
        if os.environ.get("AWS_SESSION_TOKEN"):
            options["aws_session_token"] = os.environ["AWS_SESSION_TOKEN"]
    elif method in ("default", "profile"):
        session = _botocore_session(values.get("profile"))
        found = session.get_credentials()
        if found is None:
            raise AccessDeniedError(
                f"{scheme}://: botocore's default chain found no AWS credentials (environment, shared profile, "
                f"web identity, instance metadata); use configure_credentials({scheme!r}, method='anonymous') "
                "for public buckets"
            )
        refresh = _refresh_from(found)
    else:
        raise settings.unsupported_method()
    options["aws_region"] = _region(scheme, values, session)
    return options, refresh
