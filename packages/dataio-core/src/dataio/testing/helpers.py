"""Helpers for the tests of a plugin: :func:`require` (a declared test
dependency, failing the test when it is missing), :data:`QUICK_RETRIES`,
:func:`assert_no_secret` and :func:`pipeline_images`.

Nothing here imports pytest at import time: :func:`require` imports it only
to fail a test.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

import dataio

__all__ = ["QUICK_RETRIES", "assert_no_secret", "pipeline_images", "require"]


def require(module: str, why: str = "") -> Any:
    """Imports ``module``, a test dependency the package declares (its test
    group, the core's test group). When it is missing the test fails, saying
    what to install: only absent hardware may skip a test, never a missing
    dependency or emulator."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        import pytest  # only a test calls this, and a test runs under pytest

        reason = f" ({why})" if why else ""
        pytest.fail(
            f"{module} is a declared test dependency{reason} but cannot be imported: {exc}; "
            "install the package's test group (noxfile.py does)",
            pytrace=False,
        )


#: Tuning for tests against an emulator that fails on purpose: a few quick
#: retries, so a test of a failing server takes seconds, not minutes.
QUICK_RETRIES: dict[str, Any] = {"max_retries": 2, "retry_timeout": 10, "backoff_initial": 0.05, "backoff_max": 0.2}


def assert_no_secret(secrets: Iterable[str], *things: object) -> None:
    """Asserts that no secret shows in the str or repr of any of ``things``
    (for an exception, of its cause and context too)."""
    texts = []
    for thing in things:
        texts += [str(thing), repr(thing)]
        if isinstance(thing, BaseException):
            for linked in (thing.__cause__, thing.__context__):
                if linked is not None:
                    texts += [str(linked), repr(linked)]
    for secret in secrets:
        for text in texts:
            assert secret not in text, "a secret shows in a message or repr"


def pipeline_images(records: Sequence[dict[str, str]]) -> tuple[list[str], Any]:
    """Runs the image pipeline the conformance suites use (decode, resize the
    short side to 32, center-crop 32x32, normalize, batches of 5) over
    ``records`` (``key`` and ``image`` URI) and returns the keys and the
    images as one numpy array, in delivery order."""
    torch = require("torch")
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(32).center_crop(h=32, w=32).normalize("imagenet"),
        dataio.batch(5),
    )
    keys: list[str] = []
    tensors = []
    with pipe.bind(list(records)).run("torch", concurrency=8) as loader:
        for batch in loader:
            keys.extend(batch.keys)
            tensors.append(batch["image"].clone())
    return keys, torch.cat(tensors).numpy()
