"""The table of built-in (native) ops, as the native layer exports it.

The engine writes every op's parameters down once, as typed structures
(``crates/dataio-engine/src/plan/ops.rs``), and exports them as JSON Schema
through ``_native.op_table()``. This module turns that export into the
parameter specs that plan construction validates against, so a typo or a
wrong type fails where the pipeline is written, with the same names, types,
defaults and choices the native compiler enforces. The factories of
:mod:`dataio.transforms` and :mod:`dataio.batch_transforms` and the ``Slot``
shorthands are checked against this table by the tests.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from . import _native

_TABLE: dict[str, Any] = json.loads(_native.op_table())

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "string": (str,),
    "array": (tuple, list),
    "object": (dict,),
}


@dataclasses.dataclass(frozen=True)
class Param:
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] | None = None  # allowed strings, where the parameter takes a name
    minimum: float | None = None  # numbers: the smallest allowed
    exclusive_minimum: float | None = None  # numbers: must be above it
    maximum: float | None = None
    col: bool = False  # may be a per-record dataio.col(...) reference
    doc: str = ""

    def check_number(self, value: float) -> str | None:
        """Why ``value`` is out of range, or None."""
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum}" if self.minimum != 1 else "must be positive"
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            return f"must be above {self.exclusive_minimum}" if self.exclusive_minimum != 0 else "must be positive"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum}"
        return None


@dataclasses.dataclass(frozen=True)
class BuiltinOp:
    name: str
    kind: str  # "decode", "transform" or "batch"
    params: Mapping[str, Param]
    description: str
    random: bool = False


def param_from_schema(schema: Mapping[str, Any], required: bool) -> Param:
    """A parameter's spec from its JSON Schema (the engine's op table, and
    a plugin's version 2 op declaration, give this form)."""
    alternatives = schema.get("anyOf") or schema.get("oneOf") or [schema]
    types: list[type] = []
    choices: list[Any] = []
    bounds: dict[str, Any] = {}
    for alt in alternatives:
        kinds = alt.get("type")
        if kinds is None and ("enum" in alt or isinstance(alt.get("const"), str)):
            kinds = "string"
        for kind in [kinds] if isinstance(kinds, str) else list(kinds or []):
            types.extend(t for t in _JSON_TYPES.get(kind, ()) if t not in types)
        choices.extend(c for c in alt.get("enum", ()) if c is not None)  # None is always allowed
        if alt.get("const") is not None:
            choices.append(alt["const"])
        for key, name in (("minimum", "minimum"), ("exclusiveMinimum", "exclusive_minimum"), ("maximum", "maximum")):
            if key in alt:
                bounds[name] = alt[key]
    default = schema.get("default")
    return Param(
        types=tuple(types),
        required=required,
        default=tuple(default) if isinstance(default, list) else default,
        choices=tuple(choices) or None,
        **bounds,
        col=bool(schema.get("col")),
        doc=schema.get("description", ""),
    )


def _op(entry: Mapping[str, Any]) -> BuiltinOp:
    required = set(entry.get("required", ()))
    params = {name: param_from_schema(schema, name in required) for name, schema in entry["params"].items()}
    return BuiltinOp(entry["name"], entry["kind"], params, entry.get("description") or "", entry.get("random", False))


_ALL = [_op(e) for e in _TABLE["ops"]]

#: Decoders and transforms of slot chains, by name.
BUILTIN_OPS: dict[str, BuiltinOp] = {op.name: op for op in _ALL if op.kind != "batch"}
#: Native batch transforms (after the shape stage), by name.
BATCH_OPS: dict[str, BuiltinOp] = {op.name: op for op in _ALL if op.kind == "batch"}
#: Dtype names ``cast`` and the loaders know.
DTYPES: tuple[str, ...] = tuple(_TABLE["dtypes"])
#: ``normalize`` presets.
PRESETS: tuple[str, ...] = tuple(_TABLE["presets"])
INTERPOLATIONS: tuple[str, ...] = BUILTIN_OPS["resize"].params["interpolation"].choices or ()
MODES: tuple[str, ...] = BUILTIN_OPS["decode_image"].params["mode"].choices or ()
