"""Op factories: the same native ops as the slot methods.

    dataio.slot("image").decode_image().resize(h=512, w=512)
    dataio.slot("image").decode_image().apply(dataio.transforms.resize(h=512, w=512))

Every factory validates its parameters when called against the native op
table (:mod:`dataio._ops`), so a wrong type fails where the pipeline is
written. Most factories are generated from that table into
``_ops_generated.py`` (``python -m dataio._ops_gen``); ``normalize`` and
``cast`` are written here. The sizes of the geometry ops (``resize``, ``resize_short``,
``resize_long``, ``center_crop``, ``crop``, ``random_crop``,
``random_resized_crop``) also take ``dataio.col(field)``: the value is read
from each record when it runs (``resize(h=dataio.col("h"), w=dataio.col("w"))``).
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any

from . import _ops_generated
from ._ops import BUILTIN_OPS, Param
from ._ops_generated import *  # noqa: F403 - the factories generated from the op table
from .errors import PlanError

__all__ = ["Op", "Col", "col", "op", "normalize", "cast"]
__all__ += _ops_generated.__all__
for _name in _ops_generated.__all__:  # help() and pickle name them dataio.transforms.<op>
    getattr(_ops_generated, _name).__module__ = __name__


class Col:
    """A per-record parameter: the value of field ``name`` of each record."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("dataio.col() takes a field name")
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Col is immutable")

    def __repr__(self) -> str:
        return f"dataio.col({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Col) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("col", self.name))

    def __reduce__(self) -> Any:
        return (Col, (self.name,))

    def is_null(self):  # convenience: dataio.col(x) in predicates
        from .cond import col as _c

        return _c(self.name).is_null()

    def is_not_null(self):
        from .cond import col as _c

        return _c(self.name).is_not_null()


def col(name: str) -> Col:
    """Reference record field ``name`` as an op parameter (``tensor_key=dataio.col("k")``)."""
    return Col(name)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Col):
        return {"$col": value.name}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class Op:
    """One op of a slot chain: a name and validated parameters. Immutable."""

    __slots__ = ("name", "params")
    name: str
    params: Mapping[str, Any]  # read-only (a MappingProxyType)

    def __init__(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", types.MappingProxyType(dict(params or {})))

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Op is immutable")

    @property
    def kind(self) -> str:
        spec = BUILTIN_OPS.get(self.name)
        if spec is not None:
            return spec.kind
        from ._plugins import host

        plugin_op = host.op(self.name)
        return plugin_op.kind if plugin_op else "transform"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.name, "params": {k: _jsonable(v) for k, v in self.params.items()}}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Op) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True, default=str))

    def __reduce__(self) -> Any:
        return (Op, (self.name, dict(self.params)))


def _check(name: str, spec: Mapping[str, Param], params: dict[str, Any]) -> dict[str, Any]:
    for key in params:
        if key not in spec:
            raise PlanError(f"op {name}: unknown parameter {key!r} (it takes {', '.join(spec) or 'none'})")
    out: dict[str, Any] = {}
    for key, p in spec.items():
        value = params.get(key, None)
        if value is None:
            if p.required:
                raise PlanError(f"op {name}: missing required parameter {key!r}")
            continue
        if isinstance(value, Col):
            if not p.col:
                raise PlanError(f"op {name}: {key} cannot be a per-record dataio.col(...)")
            out[key] = value
            continue
        if isinstance(value, bool) and bool not in p.types:
            raise PlanError(f"op {name}: {key} must be {_names(p.types)}, got a bool")
        if not isinstance(value, p.types):
            raise PlanError(f"op {name}: {key} must be {_names(p.types)}, got {type(value).__name__} {value!r}")
        if p.choices is not None and isinstance(value, str) and value not in p.choices:
            raise PlanError(f"op {name}: {key} must be one of {', '.join(map(repr, p.choices))}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            why = p.check_number(value)
            if why is not None:
                raise PlanError(f"op {name}: {key} {why}, got {value!r}")
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


def op(name: str, **params: Any) -> Op:
    """Any registered op by name: built-in or a plugin's."""
    spec = BUILTIN_OPS.get(name)
    if spec is not None:
        return Op(name, _check(name, spec.params, params))
    from ._plugins import host

    plugin_op = host.op(name)
    if plugin_op is None:
        known = sorted([*BUILTIN_OPS, *host.ops()])
        raise PlanError(f"unknown op {name!r}; known ops: {', '.join(known)}")
    for key, value in params.items():
        expected = plugin_op.params.get(key)
        if plugin_op.params and expected is None:
            raise PlanError(f"op {name}: unknown parameter {key!r}")
        if expected is not None and not isinstance(value, expected):
            raise PlanError(f"op {name}: {key} must be {expected}, got {type(value).__name__}")
    return Op(name, params)


# The factories that do more than the table says (dataio._ops_gen.HAND_WRITTEN
# says what); the others are generated into _ops_generated.py, imported above.


def normalize(mean_std: str | tuple[Any, Any] = "imagenet", *, layout: str = "CHW") -> Op:
    """``(x / 255 - mean) / std`` to float32; ``"imagenet"``, ``"clip"``, ``"symmetric"``, ``"unit"`` or ``(mean, std)``."""
    if isinstance(mean_std, tuple):
        mean_std = [list(m) if isinstance(m, (list, tuple)) else m for m in mean_std]  # type: ignore[assignment]
    return op("normalize", mean_std=mean_std, layout=layout)


def cast(dtype: str) -> Op:
    """Convert the dtype: a name (``"float32"``) or a torch or numpy dtype."""
    return op("cast", dtype=str(dtype).replace("torch.", ""))
