from __future__ import annotations

import pickle

import pytest

import dataio
from dataio import config
from dataio.errors import InvalidArgumentError


def test_credentials_never_show_secrets() -> None:
    creds = dataio.configure_credentials("r2", access_key_id="AKIAEXAMPLE", secret_access_key="s3cr3t-value", region="auto")
    text = repr(creds) + str(creds)
    assert "s3cr3t-value" not in text and "AKIAEXAMPLE" not in text
    assert "region=auto" in text and "secret_access_key=***" in text
    assert config.get_credentials("r2")["secret_access_key"] == "s3cr3t-value"
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(creds)
    config.reset("r2")
    assert config.get_credentials("r2") is None


def test_default_and_explicit_methods() -> None:
    assert dataio.configure_credentials("s3", method="default").method == "default"
    assert dataio.configure_credentials("s3", token="t").method == "explicit"
    with pytest.raises(ValueError, match="unknown credentials method"):
        dataio.configure_credentials("s3", method="magic")
    config.reset("s3")


def test_endpoints_are_validated() -> None:
    assert dataio.configure_endpoint("r2", "https://acct.r2.cloudflarestorage.com/") == "https://acct.r2.cloudflarestorage.com"
    assert config.get_endpoint("R2") == "https://acct.r2.cloudflarestorage.com"
    for bad in ("ftp://x", "not a url", "https://"):
        with pytest.raises(ValueError, match="endpoint"):
            dataio.configure_endpoint("r2", bad)
    with pytest.raises(ValueError, match="credentials"):
        dataio.configure_endpoint("r2", "https://user:pass@host")
    config.reset("r2")


@pytest.mark.parametrize("scheme", ["bogus", "http", "https", "file", "HTTP://"])
def test_an_endpoint_for_a_scheme_that_takes_none_is_refused(scheme: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        dataio.configure_endpoint(scheme, "http://127.0.0.1:9")
    text = str(info.value)
    name = scheme.lower().removesuffix("://")
    assert f"configure_endpoint({name!r}, ...): {name}:// " in text and "takes no endpoint" in text, text
    listed = text.split("the schemes that take one: ")[1].split(", ")
    assert {"s3", "r2", "gs", "az", "hf"} <= set(listed) and name not in listed, text
    assert ("local files" in text) == (name == "file"), text
    assert config.get_endpoint(name) is None


def test_every_scheme_of_a_shipped_backend_takes_an_endpoint() -> None:
    # Known without their plugins: configuring before the plugin is installed or loaded is fine.
    from dataio._plugins import ENDPOINT_SCHEMES

    for scheme in ENDPOINT_SCHEMES:
        try:
            assert dataio.configure_endpoint(f"{scheme}://", "https://mirror.example/") == "https://mirror.example"
            assert config.get_endpoint(scheme) == "https://mirror.example"
        finally:
            config.reset(scheme)
