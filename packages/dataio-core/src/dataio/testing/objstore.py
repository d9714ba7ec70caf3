"""The object-store suite: :class:`ObjectStoreConformance`, for plugins built
on :class:`dataio.plugins.ObjectStorePlugin` (the backend and formats suites,
typed errors, secrets kept out of every message, tuning options)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

import dataio
from dataio import _native

from .backend import BackendConformance
from .formats import FormatsConformance
from .helpers import assert_no_secret

if TYPE_CHECKING:
    from dataio.plugins import ObjectStorePlugin

__all__ = ["ObjectStoreConformance"]


class ObjectStoreConformance(BackendConformance, FormatsConformance):
    """What every plugin built on :class:`dataio.plugins.ObjectStorePlugin`
    shows against its emulator: the backend and formats suites (under
    ``root``), a native backend, typed errors that name scheme, bucket and
    key, secrets in no message, repr or report row, credentials the store
    refuses as ``PermissionError``, and checked tuning options.

    Set the class attributes ``plugin`` (the plugin's ``ObjectStorePlugin``),
    ``credentials`` (keyword arguments for
    ``dataio.configure_credentials(scheme, ...)`` that the emulator accepts)
    and ``secrets`` (the strings among them that must never show), and give
    two fixtures:

    * ``root`` — an empty prefix in an existing bucket (no trailing slash),
      with the emulator configured;
    * ``refused_credentials`` — ``(root, secrets)``: a prefix on a server
      that checks credentials, with credentials it refuses configured.
    """

    plugin: ObjectStorePlugin
    credentials: dict[str, Any]
    secrets: Sequence[str]

    @pytest.fixture
    def root(self) -> str:  # pragma: no cover - subclasses override
        raise pytest.UsageError("define a root fixture returning an empty prefix in an existing bucket")

    @pytest.fixture
    def base_uri(self, root: str) -> str:
        return root + "/"

    @staticmethod
    def _split(root: str) -> tuple[str, str]:
        scheme, rest = root.split("://", 1)
        return scheme, rest.split("/", 1)[0].split("@", 1)[0]

    @pytest.fixture
    def accepted(self, root: str) -> tuple[str, str, Sequence[str]]:
        """``(scheme, bucket, secrets)`` with the accepted credentials configured."""
        scheme, bucket = self._split(root)
        dataio.configure_credentials(scheme, **self.credentials)
        return scheme, bucket, self.secrets

    def test_the_backend_is_native(self, root: str) -> None:
        name, caps = _native.backend_info(root + "/x")
        assert name == self.plugin.package
        assert {"write", "streaming_write", "delete", "list", "glob", "ranged_read"} <= set(caps)

    def test_a_missing_key_is_file_not_found_naming_scheme_bucket_and_key(
        self, root: str, accepted: tuple[str, str, Sequence[str]]
    ) -> None:
        scheme, bucket, secrets = accepted
        uri = f"{root}/no/such/key.bin"
        for call in (dataio.head, dataio.read, lambda u: dataio.fetch_into(u, bytearray(10)), dataio.delete):
            with pytest.raises(FileNotFoundError) as info:
                call(uri)
            assert isinstance(info.value, dataio.errors.NotFoundError)
            message = str(info.value)
            assert f"{scheme}://" in message and bucket in message and "no/such/key.bin" in message, message
            assert_no_secret(secrets, info.value)
        assert not dataio.exists(uri)

    def test_a_missing_bucket_is_file_not_found_naming_the_bucket(self, accepted: tuple[str, str, Sequence[str]]) -> None:
        scheme, _, secrets = accepted
        bucket = f"dataio-no-such-bucket-{uuid.uuid4().hex[:8]}"
        with pytest.raises(FileNotFoundError, match="no such") as info:
            dataio.head(f"{scheme}://{bucket}/key.bin")
        assert bucket in str(info.value)
        assert_no_secret(secrets, info.value)
        with pytest.raises(FileNotFoundError, match=bucket):
            dataio.ls(f"{scheme}://{bucket}/")
        with pytest.raises(FileNotFoundError):
            dataio.write(f"{scheme}://{bucket}/key.bin", b"x")

    def test_secrets_stay_out_of_reprs_and_the_capability_report(
        self, root: str, accepted: tuple[str, str, Sequence[str]]
    ) -> None:
        from dataio.capabilities import report

        scheme, _, secrets = accepted
        uri = f"{root}/secret-check.bin"
        dataio.write(uri, b"with the accepted credentials")  # they are the ones in use
        assert dataio.read(uri) == b"with the accepted credentials"
        settings = dataio.config.get_settings(scheme)
        assert_no_secret(secrets, dataio.config.get_credentials(scheme), settings, report())
        row = next(p for p in report()["plugins"] if p["name"] == self.plugin.package)
        assert row["status"] == "ok" and f"{scheme}: credentials {settings.method}" in row["detail"]
        if settings.endpoint is not None:
            assert settings.endpoint in row["detail"]

    def test_refused_credentials_are_permission_denied_without_the_secret(
        self, refused_credentials: tuple[str, list[str]]
    ) -> None:
        root, secrets = refused_credentials
        scheme, bucket = self._split(root)
        for name, call in (("key.bin", dataio.read), ("out.bin", lambda u: dataio.write(u, b"data"))):
            with pytest.raises(PermissionError) as info:
                call(f"{root}/{name}")
            assert isinstance(info.value, dataio.errors.AccessDeniedError)
            assert bucket in str(info.value) and name in str(info.value), str(info.value)
            assert_no_secret(secrets, info.value)
        from dataio.capabilities import report

        assert_no_secret(secrets, dataio.config.get_credentials(scheme), report())

    def test_unknown_tuning_options_are_refused(self, root: str) -> None:
        scheme, _ = self._split(root)
        with pytest.raises(ValueError, match=f"unknown {self.plugin.package} options"):
            self.plugin.configure(scheme, retries=3)
        assert "retries" not in self.plugin.configure(scheme)
