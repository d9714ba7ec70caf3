"""Runs plugin (Python) ops for the native executor: converts between the
engine's (dtype, shape, bytes) triples and numpy arrays."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._plugins import host
from .errors import PlanError


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
        return _triple(spec.fn(bytes(payload), **params))
    return _triple(spec.fn(_array(payload), **params))
