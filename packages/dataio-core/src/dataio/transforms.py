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

A plugin's op (``dataio_register_ops``) is :func:`op` by name
(``op("invert", amount=3)``), checked against the parameters it declared
(or, without a declaration, its function's signature) when called.
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import _ops_generated
from ._ops import BUILTIN_OPS, Param
from ._ops_generated import *  # noqa: F403 - the factories generated from the op table
from .errors import DataioError, PlanError

if TYPE_CHECKING:
    from ._plugins import OpSpec

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

    def args_repr(self) -> str:
        """The parameters as keyword arguments: ``h=224, w=224``."""
        return ", ".join(f"{k}={v!r}" for k, v in self.params.items())

    def __repr__(self) -> str:
        if self.name not in BUILTIN_OPS:  # a plugin's op: what makes it again
            return f"op({', '.join([repr(self.name), *filter(None, [self.args_repr()])])})"
        return f"{self.name}({self.args_repr()})"

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
    """Any registered op by name: built-in or a plugin's (``op("invert")``).

    The parameters are checked now: a built-in op's against the op table, a
    plugin op's against the ``params`` it registered (names and types) and
    its function's signature (names and required ones)."""
    spec = BUILTIN_OPS.get(name)
    if spec is not None:
        return Op(name, _check(name, spec.params, params))
    return Op(name, check_plugin_params(plugin_op_spec(name), params))


#: Ops that a package shipped with dataio registers: a plan naming one
#: without its package installed says which to install.
PLUGIN_PACKAGE_OPS = {
    "decode_video": "dataio-video",
    "decode_audio": "dataio-video",
    "video_info": "dataio-video",
    "tokenize": "dataio-text",
}


def plugin_package_hint(name: str) -> str:
    """``"is registered by the dataio-video plugin, which is not installed;
    install it with ..."`` for an op of a package shipped with dataio, else ``""``."""
    dist = PLUGIN_PACKAGE_OPS.get(name)
    if dist is None:
        return ""
    from .plugins import install_hint

    return f"is registered by the {dist} plugin, which is not installed; install it with {install_hint(dist)}"


def plugin_op_spec(name: str) -> OpSpec:
    """The registration of plugin op ``name``; a :class:`PlanError` listing
    the known ops (each once, plugins' included) when nothing registered it."""
    from ._plugins import host

    plugin_op = host.op(name)  # a PluginError when two plugins registered it
    if plugin_op is None:
        hint = plugin_package_hint(name)
        if hint:
            raise PlanError(f"op {name!r} {hint}{host.failed_note()}")
        known = sorted({*BUILTIN_OPS, *host.ops()})
        raise PlanError(f"unknown op {name!r}; known ops: {', '.join(known)}{host.failed_note()}")
    return plugin_op


def _declared_types(name: str, key: str, declared: Any) -> tuple[type, ...]:
    if isinstance(declared, Param):
        return declared.types
    types_ = declared if isinstance(declared, tuple) else (declared,)
    if not types_ or not all(isinstance(t, type) for t in types_):
        raise PlanError(f"op {name}: the plugin declared parameter {key!r} as {declared!r}, not a type or a tuple of types")
    return types_


def _signature(fn: Callable[..., Any] | None) -> tuple[dict[str, bool], bool] | None:
    """The keyword parameters ``fn`` takes after its input (name -> required)
    and whether it takes ``**kwargs``; None when it has no signature."""
    if fn is None:
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        params = params[1:]  # the array (or the bytes, for a decoder)
    names = {
        p.name: p.default is inspect.Parameter.empty
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return names, any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params)


def _jsonable_value(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_jsonable_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable_value(v) for k, v in value.items())
    return False


def positional_params(spec: OpSpec, args: tuple[Any, ...], params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with ``args`` bound to plugin op ``spec``'s parameters in
    declared order (its ``params``, else its function's), as a built-in op
    takes its first parameters by position: ``tokenize("tokenizer.json")``,
    ``decode_video(16, 2)``."""
    if not args:
        return params
    sig = _signature(spec.fn)
    order = list(spec.params) if spec.params else list(sig[0]) if sig is not None else []
    if len(args) > len(order):
        takes = f"({', '.join(order)})" if order else "(it declares none)"
        raise PlanError(f"op {spec.name}: {len(args)} positional parameters, it takes at most {len(order)} {takes}")
    out = dict(params)
    for key, value in zip(order, args):
        if key in out:
            raise PlanError(f"op {spec.name}: parameter {key!r} given by position and by keyword")
        out[key] = value
    return out


def plugin_signature(spec: OpSpec) -> inspect.Signature:
    """The Python signature of plugin op ``spec`` as a slot method: its
    declared parameters in order, positional or keyword, with their defaults
    and types (``help(slot.decode_pgm)``, IDEs)."""
    params = []
    for key, declared in spec.params.items():
        if isinstance(declared, Param):
            default = inspect.Parameter.empty if declared.required else declared.default
            annotation: Any = declared.types[0] if len(declared.types) == 1 else declared.types
        else:
            default, annotation = None, declared
        params.append(inspect.Parameter(key, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation))
    return inspect.Signature(params)


def check_plugin_params(spec: OpSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """Checks the parameters of plugin op ``spec`` where the pipeline is
    written: names against what it declared (its ``params``, else its
    function's keyword parameters), types against its ``params``, required
    ones against its function's signature; values must travel as JSON and
    cannot be per-record. A :class:`PlanError` (an ``InvalidArgumentError``)
    names the op and the parameter. The op's ``prepare`` (if it registered
    one) first turns the parameters as written into those it takes."""
    name = spec.name
    if spec.prepare is not None:
        params = _prepared(spec, params)
    declared = spec.params
    sig = _signature(spec.fn)
    allowed: set[str] | None = None
    if declared:
        allowed = set(declared)
    elif sig is not None and not sig[1]:
        allowed = set(sig[0])
    elif spec.native:
        allowed = set()  # a native op that declares no parameters takes none
    for key, value in params.items():
        if allowed is not None and key not in allowed:
            raise PlanError(f"op {name}: unknown parameter {key!r} (it takes {', '.join(sorted(allowed)) or 'none'})")
        if isinstance(value, Col):
            if spec.native:  # the engine puts the record's value in, per record
                continue
            raise PlanError(
                f"op {name}: {key} cannot be a per-record dataio.col(...); a Python plugin op takes fixed parameters "
                "(a native op takes them)"
            )
        if value is not None and key in declared:  # None reaches the op as None
            types_ = _declared_types(name, key, declared[key])
            if isinstance(value, bool) and bool not in types_ and object not in types_:
                raise PlanError(f"op {name}: {key} must be {_names(types_)}, got a bool")
            number = float in types_ and isinstance(value, int) and not isinstance(value, bool)
            if not number and not isinstance(value, types_):
                raise PlanError(f"op {name}: {key} must be {_names(types_)}, got {type(value).__name__} {_short_repr(value)}")
            spec_param = declared[key]
            if isinstance(spec_param, Param):  # a native op's declaration: its choices and bounds too
                if spec_param.choices and isinstance(value, str) and value not in spec_param.choices:
                    choices = ", ".join(repr(c) for c in spec_param.choices)
                    raise PlanError(f"op {name}: {key} must be one of {choices}, got {value!r}")
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    why = spec_param.check_number(value)
                    if why:
                        raise PlanError(f"op {name}: {key} {why}, got {value!r}")
        if not _jsonable_value(value):
            raise PlanError(
                f"op {name}: {key} must be a number, string, bool or None, or a list or dict of them "
                f"(plugin op parameters reach the op as JSON), got {type(value).__name__}"
            )
    needed = [key for key, p in declared.items() if isinstance(p, Param) and p.required and key not in params]
    if needed:
        raise PlanError(f"op {name}: missing required parameter {needed[0]!r}")
    if sig is not None:
        missing = [key for key, required in sig[0].items() if required and key not in params]
        if missing:
            raise PlanError(f"op {name}: missing required parameter {missing[0]!r}")
    return dict(params)


def _prepared(spec: OpSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` through the op's ``prepare``; what it raises, other than a
    dataio error, becomes a :class:`PlanError` naming the op."""
    assert spec.prepare is not None
    try:
        out = spec.prepare(dict(params))
    except DataioError:
        raise
    except Exception as e:
        raise PlanError(f"op {spec.name}: preparing its parameters failed: {type(e).__name__}: {str(e)[:300]}") from e
    if not isinstance(out, Mapping):
        raise PlanError(f"op {spec.name}: plugin {spec.plugin!r}'s prepare returned {type(out).__name__}, not the parameters")
    return dict(out)


def _short_repr(value: Any, limit: int = 120) -> str:
    """``repr(value)``, cut to ``limit`` characters: an object's repr can run
    to kilobytes (a tokenizer's), and an error message must stay readable."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


# The factories that do more than the table says (dataio._ops_gen.HAND_WRITTEN
# says what); the others are generated into _ops_generated.py, imported above.


def normalize(mean_std: str | tuple[Any, Any] = "imagenet", *, layout: str = "CHW") -> Op:
    """``(x / 255 - mean) / std`` to float32; ``"imagenet"``, ``"clip"``, ``"symmetric"``, ``"unit"`` or ``(mean, std)``.

    ``layout``: ``"CHW"`` (default), ``"HWC"``, or ``"CTHW"``, which gives a
    video clip as ``[C, T, H, W]`` (an image as CHW)."""
    if isinstance(mean_std, tuple):
        mean_std = [list(m) if isinstance(m, (list, tuple)) else m for m in mean_std]  # type: ignore[assignment]
    return op("normalize", mean_std=mean_std, layout=layout)


def cast(dtype: str) -> Op:
    """Convert the dtype: a name (``"float32"``) or a torch or numpy dtype."""
    return op("cast", dtype=str(dtype).replace("torch.", ""))
