"""Errors cross the binding by kind: every engine error kind has one class in
dataio.errors (its ``kind`` attribute), and exceptions from Python backends
keep their meaning — a backend's TimeoutError is caught as TimeoutError."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

import dataio
from dataio import errors
from dataio.plugins import register_backend


class Unreliable:
    """A Python backend whose reads fail the way a network store's do."""

    name = "unreliable"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def head(self, uri: str) -> dict[str, Any]:
        return {"size": 10}

    def read_range(self, uri: str, offset: int, size: int) -> bytes:
        raise self.exc

    def read_all(self, uri: str) -> bytes:
        raise self.exc

    def list(self, prefix: str, recursive: bool) -> list[Any]:
        return []

    def exists(self, uri: str) -> bool:
        return True


def test_every_kind_has_one_class_and_the_classes_say_their_kind() -> None:
    assert errors.BY_KIND["timeout"] is errors.TimeoutError
    assert errors.BY_KIND["connection"] is errors.ConnectionError
    assert errors.BY_KIND["not_found"] is errors.NotFoundError
    for kind, cls in errors.BY_KIND.items():
        assert cls.kind == kind and issubclass(cls, errors.DataioError)
    assert issubclass(errors.ConnectionError, builtins.ConnectionError) and issubclass(errors.ConnectionError, errors.StorageError)


@pytest.mark.parametrize(
    "raised, builtin, ours",
    [
        (builtins.TimeoutError("the store did not answer in 5 s"), builtins.TimeoutError, errors.TimeoutError),
        (builtins.ConnectionResetError("reset by peer"), builtins.ConnectionError, errors.ConnectionError),
        (builtins.FileNotFoundError("gone"), builtins.FileNotFoundError, errors.NotFoundError),
        (RuntimeError("boom"), OSError, errors.StorageError),
    ],
    ids=["timeout", "connection", "not-found", "other"],
)
def test_a_python_backends_exception_keeps_its_meaning(unique: str, raised: BaseException, builtin: type, ours: type) -> None:
    scheme = f"flaky{unique}"
    register_backend(scheme, Unreliable(raised))
    uri = f"{scheme}://bucket/obj"
    with pytest.raises(builtin) as info:
        dataio.read(uri)
    assert type(info.value) is ours, type(info.value)
    assert info.value.__cause__ is raised and uri in str(info.value)
    # In a pipeline the row error says which kind its cause was.
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(1))
    with pytest.raises(errors.RowError) as row:
        list(pipe.bind([{"key": "k", "x": uri}]).run("numpy"))
    assert row.value.cause_kind == ours.__name__ and row.value.slot == "x"


def test_a_dataio_subclass_raised_by_a_plugin_keeps_its_kind(unique: str) -> None:
    class PluginTimeout(errors.TimeoutError):
        pass

    scheme = f"flaky{unique}"
    register_backend(scheme, Unreliable(PluginTimeout("slow")))
    with pytest.raises(PluginTimeout):
        dataio.read(f"{scheme}://b/k")
