from __future__ import annotations

import pickle

import pytest

import dataio
from dataio import config


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
