"""Runs plugin (Python) ops for the native executor: converts between the
engine's (dtype, shape, bytes) triples and numpy arrays."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._plugins import host, tensor_words
from .errors import InvalidArgumentError, PlanError


def _array(payload: tuple[str, list[int], bytes]) -> np.ndarray:
    dtype, shape, data = payload
    return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy()


def _triple(arr: Any) -> tuple[str, list[int], bytes]:
    a = np.ascontiguousarray(np.asarray(arr))
    return (a.dtype.name, list(a.shape), a.tobytes())


def call_plugin_op(kind: str, name: str, payload: Any, params_json: str) -> tuple[str, list[int], bytes]:
    spec = host.op(name)
    if spec is None or spec.fn is None:
        raise PlanError(f"op {name!r} has no Python implementation")
    params = json.loads(params_json) if params_json else {}
    if kind == "decode":
        out = _triple(spec.fn(bytes(payload), **params))
    else:
        if not _fits(spec.takes, payload):
            raise InvalidArgumentError(f"{name} takes {tensor_words(spec.takes)}, got {payload[0]} {list(payload[1])}")
        out = _triple(spec.fn(_array(payload), **params))
    if not _fits(spec.output, out):
        raise InvalidArgumentError(
            f"{name} returned {out[0]} {out[1]}, but it declares {tensor_words(spec.output)} (a bug of the op's plugin)"
        )
    return out


def _fits(declared: Any, payload: tuple[str, list[int], bytes]) -> bool:
    """Whether a (dtype, shape, bytes) triple is what ``declared`` says."""
    return declared.get("dtype") in (None, payload[0]) and declared.get("ndim") in (None, len(payload[1]))
