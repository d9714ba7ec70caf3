"""Bad input and failing servers beyond the object-store conformance suite
(test_s3_conformance.py): malformed URIs, retries and throttling, dead and
downgraded endpoints, and each way of resolving S3 credentials. Every
failure is a typed dataio error, and no secret ever shows."""

from __future__ import annotations

import http.server
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from conftest import ACCESS_KEY, SECRET_KEY, S3Server, configure, free_port

import dataio
from dataio.testing import assert_no_secret


def test_malformed_uris_are_refused(s3: S3Server) -> None:
    with pytest.raises(ValueError):
        dataio.read("s3://")
    with pytest.raises(ValueError, match="bucket"):
        dataio.read("s3:///key")
    with pytest.raises(ValueError):
        dataio.write(f"s3://{s3.bucket}/a//b", b"x")


def test_r2_without_an_endpoint_says_how_to_configure_it() -> None:
    dataio.config.reset("r2")
    with pytest.raises(dataio.errors.DataioError, match="configure_endpoint"):
        dataio.read("r2://bucket/key")


class Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503 SlowDown to the first ``failures`` requests, then serves
    one fixed object to any GET."""

    failures = 0
    seen = 0
    body = b"flaky but fine"

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self.do_GET(head=True)

    def do_GET(self, head: bool = False) -> None:
        cls = type(self)
        cls.seen += 1
        if cls.seen <= cls.failures:
            payload = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if not head:
                self.wfile.write(payload)
            return
        body = self.body
        rng = self.headers.get("Range")
        if rng and not head:
            start, end = (int(x) for x in rng.removeprefix("bytes=").split("-"))
            body = self.body[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(self.body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"abc"')
        self.send_header("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
        self.end_headers()
        if not head:
            self.wfile.write(body)


@pytest.fixture
def flaky() -> Iterator[tuple[str, type[Flaky]]]:
    handler = type("FlakyHandler", (Flaky,), {"failures": 0, "seen": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    dataio.config.reset("s3")


def test_throttling_is_retried_with_backoff(flaky: tuple[str, type[Flaky]]) -> None:
    endpoint, handler = flaky
    handler.failures = 2
    configure("s3", endpoint)
    assert dataio.read("s3://b/k") == Flaky.body
    assert handler.seen == 3, "one GET (no HEAD first): two 503s, then the retry that succeeded"


def test_throttling_past_the_retries_is_a_transient_storage_error(flaky: tuple[str, type[Flaky]]) -> None:
    endpoint, handler = flaky
    handler.failures = 1000
    configure("s3", endpoint)
    with pytest.raises(dataio.errors.StorageError) as info:
        dataio.read("s3://b/some/key")
    assert not isinstance(info.value, FileNotFoundError)
    assert "some/key" in str(info.value)
    assert handler.seen == 3, "max_retries=2: one try and two retries"
    assert_no_secret([SECRET_KEY], info.value)


def test_an_unreachable_endpoint_is_a_storage_error() -> None:
    configure("s3", f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(dataio.errors.StorageError, match="connection"):
            dataio.read("s3://b/k")
    finally:
        dataio.config.reset("s3")


def test_tls_is_not_downgraded(s3: S3Server) -> None:
    # The moto server speaks plain HTTP: an https:// endpoint must fail the
    # handshake, never fall back to plain HTTP.
    configure("s3", s3.endpoint.replace("http://", "https://"))
    with pytest.raises(dataio.errors.StorageError):
        dataio.read(f"s3://{s3.bucket}/k")


def test_default_credentials_come_from_botocore(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    dataio.configure_credentials("s3", method="default")
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/default.bin"
    dataio.write(uri, b"via botocore")
    assert dataio.read(uri) == b"via botocore"
    assert s3.client.get_object(Bucket=s3.bucket, Key=uri.split("/", 3)[3])["Body"].read() == b"via botocore"


def test_profile_credentials_come_from_the_shared_file(s3: S3Server, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "credentials").write_text(
        f"[ci]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    dataio.configure_credentials("s3", method="profile", profile="ci")
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/profile.bin"
    dataio.write(uri, b"via profile")
    assert dataio.read(uri) == b"via profile"


def test_anonymous_access_sends_unsigned_requests(s3: S3Server) -> None:
    dataio.configure_credentials("s3", method="anonymous")
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/anon.bin"
    s3.client.put_object(Bucket=s3.bucket, Key=uri.split("/", 3)[3], Body=b"public", ACL="public-read")
    assert dataio.read(uri) == b"public"


def test_refreshing_credentials_are_asked_again_only_near_expiry(s3: S3Server) -> None:
    from dataio_s3 import _native

    calls: list[float] = []

    def refresh() -> dict[str, object]:
        calls.append(time.time())
        # Expires in one second: inside the refresh margin, so every request asks again.
        return {"key_id": ACCESS_KEY, "secret_key": SECRET_KEY, "token": None, "expires_at": time.time() + 1}

    def lasting() -> dict[str, object]:
        calls.append(time.time())
        return {"key_id": ACCESS_KEY, "secret_key": SECRET_KEY, "expires_at": time.time() + 3600}

    options = {"aws_endpoint": s3.endpoint, "allow_http": True, "aws_region": "us-east-1"}
    for fn, expected in ((refresh, 6), (lasting, 1)):
        calls.clear()
        dataio._native.register_backend("s3refresh", _native.backend("s3refresh", options, fn))
        try:
            for _ in range(3):
                assert not dataio.exists(f"s3refresh://{s3.bucket}/nothing-here")
        finally:
            dataio._native.unregister_backend("s3refresh")
        assert len(calls) == expected, "exists() is a HEAD and a LIST: two signed requests"
