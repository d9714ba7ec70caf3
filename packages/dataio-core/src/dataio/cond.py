"""Native predicates for slot conditionals.

Field predicates (``col(...)``) look at record fields and run before any
read, so they can gate optional slots (``slot.active_when``). Shape
predicates (``shape(axis)``) look at the sample after decode and drive
``slot.when(...).then(...).otherwise(...)`` branches. Predicates combine with
``&``, ``|`` and ``~`` and compile into the plan (and its signature).

    from dataio import cond as c
    c.col("mask_id").is_not_null()
    c.shape(axis=0).gt(512) & c.col("split").eq("train")
"""

from __future__ import annotations

from typing import Any

__all__ = ["Pred", "col", "shape"]


def _literal(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"predicate values must be None, bool, int, float or str, got {type(value).__name__}")


class Pred:
    """A compiled-in predicate. Immutable; combine with ``&``, ``|``, ``~``."""

    __slots__ = ("_spec",)
    _spec: dict[str, Any]

    def __init__(self, spec: dict[str, Any]) -> None:
        object.__setattr__(self, "_spec", spec)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("predicates are immutable")

    def to_json(self) -> dict[str, Any]:
        return self._spec

    @property
    def uses_shape(self) -> bool:
        def walk(s: dict[str, Any]) -> bool:
            if "shape" in s:
                return True
            if "not" in s:
                return walk(s["not"])
            return any(walk(p) for p in s.get("and", []) + s.get("or", []))

        return walk(self._spec)

    def __and__(self, other: Pred) -> Pred:
        return Pred({"and": [self._spec, _pred(other)._spec]})

    def __or__(self, other: Pred) -> Pred:
        return Pred({"or": [self._spec, _pred(other)._spec]})

    def __invert__(self) -> Pred:
        return Pred({"not": self._spec})

    def __bool__(self) -> bool:
        raise TypeError("dataio predicates run natively; combine them with & | ~, not and/or/not")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pred) and other._spec == self._spec

    def __hash__(self) -> int:
        import json

        return hash(json.dumps(self._spec, sort_keys=True))

    def __repr__(self) -> str:
        return f"Pred({_describe(self._spec)})"

    def __reduce__(self) -> Any:
        return (Pred, (self._spec,))


def _pred(p: object) -> Pred:
    if not isinstance(p, Pred):
        raise TypeError(f"expected a dataio.cond predicate, got {type(p).__name__}")
    return p


def _describe(s: dict[str, Any]) -> str:
    if "and" in s:
        return " & ".join(f"({_describe(p)})" for p in s["and"])
    if "or" in s:
        return " | ".join(f"({_describe(p)})" for p in s["or"])
    if "not" in s:
        return f"~({_describe(s['not'])})"
    subject = f"col({s['col']!r})" if "col" in s else f"shape({s['shape']})"
    value = "" if s["cmp"] in ("is_null", "is_not_null") else repr(s.get("value"))
    return f"{subject}.{s['cmp']}({value})"


class _Subject:
    __slots__ = ("_key",)

    def __init__(self, key: dict[str, Any]) -> None:
        self._key = key

    def _cmp(self, cmp: str, value: Any = None) -> Pred:
        spec = dict(self._key)
        spec["cmp"] = cmp
        if cmp not in ("is_null", "is_not_null"):
            spec["value"] = value
        return Pred(spec)

    def eq(self, value: Any) -> Pred:
        return self._cmp("eq", _literal(value))

    def ne(self, value: Any) -> Pred:
        return self._cmp("ne", _literal(value))

    def lt(self, value: Any) -> Pred:
        return self._cmp("lt", _literal(value))

    def le(self, value: Any) -> Pred:
        return self._cmp("le", _literal(value))

    def gt(self, value: Any) -> Pred:
        return self._cmp("gt", _literal(value))

    def ge(self, value: Any) -> Pred:
        return self._cmp("ge", _literal(value))


class Column(_Subject):
    """A record field in a predicate."""

    __slots__ = ()

    def is_null(self) -> Pred:
        return self._cmp("is_null")

    def is_not_null(self) -> Pred:
        return self._cmp("is_not_null")

    def is_in(self, values: Any) -> Pred:
        return self._cmp("is_in", [_literal(v) for v in values])


class Shape(_Subject):
    """A dimension of the decoded sample (HWC for images until a layout op)."""

    __slots__ = ()

    def _cmp(self, cmp: str, value: Any = None) -> Pred:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"shape predicates compare with numbers, got {value!r}")
        return super()._cmp(cmp, value)


def col(name: str) -> Column:
    if not isinstance(name, str) or not name:
        raise TypeError("col() takes a field name")
    return Column({"col": name})


def shape(axis: int = 0) -> Shape:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError("shape(axis) takes an integer axis")
    return Shape({"shape": axis})
