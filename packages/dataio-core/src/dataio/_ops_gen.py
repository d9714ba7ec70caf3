"""Renders ``dataio/_ops_generated.py`` — the op factories and the ``Slot``
shorthands — from the native op table, so an op's names, types and defaults
are written once (``crates/dataio-engine/src/plan/ops.rs``).

    python -m dataio._ops_gen          # rewrite dataio/_ops_generated.py
    python -m dataio._ops_gen --check  # exit 1 when the file is stale

The generator writes the file itself (a shell redirect would empty it before
``dataio`` imports it). ``tests/test_ops_generated.py`` fails when the
committed file differs from what the live table renders.

What the table does not say, and how the Python surface decides it:

* positional or keyword: required parameters are positional, in table
  order; an op without required parameters takes its first one positionally
  (``decode_image("gray")``, ``hflip(0.3)``, ``normalize("clip")``); every
  other parameter is keyword-only.
* annotations: the JSON types (``integer`` → ``int``, ``number`` → ``float``,
  a two-item array → a two-tuple), ``| Col`` where the parameter may be
  ``dataio.col(field)``, ``| None`` where the default is None.
* factories that do more than pass their parameters on are listed in
  :data:`HAND_WRITTEN` with the reason; they stay in ``transforms.py`` or
  ``batch_transforms.py``, and a slot op among them still gets its ``Slot``
  shorthand, rendered from the hand-written factory's own signature.
"""

from __future__ import annotations

import builtins
import inspect
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _ops

TARGET = Path(__file__).with_name("_ops_generated.py")
COMMAND = "python -m dataio._ops_gen"

#: Ops whose factory is written by hand, and why the table cannot express it.
HAND_WRITTEN: dict[str, str] = {
    "normalize": "a (mean, std) pair of tuples becomes the nested lists the engine reads",
    "cast": "takes a torch or numpy dtype as well as a name (str(dtype) without 'torch.')",
    "mixup": "alpha defaults to 0.2 in Python while the engine requires it, and num_classes is keyword-only",
    "cutmix": "alpha defaults to 1.0 in Python while the engine requires it, and num_classes is keyword-only",
    "pad_to_longest": "refuses an empty slot name with its own message, and takes value positionally (default 0)",
}

#: Parameters the factory leaves to the engine: its default is None, so a plan
#: carries the parameter only when the caller sets it and the engine's default
#: (the table's) applies otherwise; plans written before stay identical.
ENGINE_DEFAULTS: frozenset[tuple[str, str]] = frozenset({("decode_image", "max_pixels")})

_SCALARS = {"integer": "int", "number": "float", "boolean": "bool", "string": "str"}


@dataclass(frozen=True)
class _Arg:
    name: str
    annotation: str
    default: str | None  # Python source of the default; None when required
    keyword_only: bool

    def source(self) -> str:
        text = f"{self.name}: {self.annotation}"
        return text if self.default is None else f"{text} = {self.default}"


def _literal(value: Any) -> str:
    """Python source for a JSON default (lists become tuples: defaults are immutable)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(_literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def _json_type(kind: str, schema: Mapping[str, Any]) -> str | None:
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items") or {}
        item = _SCALARS.get(items.get("type", ""), "Any")
        size = schema.get("maxItems")
        if size is not None and size == schema.get("minItems") and size <= 4:
            return f"tuple[{', '.join([item] * size)}]"
        return f"tuple[{item}, ...]"
    return None  # "null": written as `| None` from the default


def _annotation(schema: Mapping[str, Any], nullable: bool) -> str:
    names: list[str] = []
    for alt in schema.get("anyOf") or [schema]:
        kinds = alt.get("type", "string" if "enum" in alt else None)
        for kind in [kinds] if isinstance(kinds, str) else list(kinds or []):
            name = _json_type(kind, alt)
            if name is not None and name not in names:
                names.append(name)
    if schema.get("col"):
        names.append("Col")
    if nullable:
        names.append("None")
    return " | ".join(names or ["Any"])


def _table_args(op: Mapping[str, Any]) -> list[_Arg]:
    required = set(op.get("required", ()))
    params: dict[str, Any] = op["params"]
    positional = [n for n in params if n in required] or list(params)[:1]
    args = []
    for name in [*positional, *(n for n in params if n not in positional)]:
        schema = params[name]
        if name in required:
            default = None
        elif (op["name"], name) in ENGINE_DEFAULTS:
            default = "None"
        else:
            default = _literal(schema.get("default"))
        args.append(_Arg(name, _annotation(schema, default == "None"), default, name not in positional))
    return args


def _hand_written_args(name: str) -> list[_Arg]:
    from . import transforms

    args = []
    for p in inspect.signature(getattr(transforms, name)).parameters.values():
        annotation = p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)
        default = None if p.default is inspect.Parameter.empty else _literal(p.default)
        args.append(_Arg(p.name, annotation, default, p.kind is inspect.Parameter.KEYWORD_ONLY))
    return args


def _signature(args: list[_Arg], first: str = "") -> str:
    parts = [first] if first else []
    star = False
    for a in args:
        if a.keyword_only and not star:
            parts.append("*")
            star = True
        parts.append(a.source())
    return ", ".join(parts)


def _noqa(args: list[_Arg]) -> str:
    """A parameter named as the op's spec names it may shadow a builtin
    (``encode_image(format=...)``): the line says so to ruff."""
    return "  # noqa: A002 (the op's parameter name)" if any(hasattr(builtins, a.name) for a in args) else ""


def _call(args: list[_Arg]) -> str:
    """The arguments that pass ``args`` on: positional ones by position."""
    return ", ".join(a.name if not a.keyword_only else f"{a.name}={a.name}" for a in args)


def _param_doc(name: str, schema: Mapping[str, Any]) -> str:
    line = f"{name}: {schema.get('description', '')}"
    choices = [c for alt in schema.get("anyOf") or [schema] for c in alt.get("enum", ())]
    if choices:
        line += f" ({', '.join(json.dumps(c) for c in choices)})"
    if schema.get("col"):
        line += "; may be ``dataio.col(field)``, read from each record"
    return line


def _docstring(op: Mapping[str, Any], indent: str) -> list[str]:
    texts = [op["description"], *(s.get("description", "") for s in op["params"].values())]
    if any('"""' in t or "\\" in t or t.endswith('"') for t in texts):
        raise SystemExit(f"op {op['name']}: a description with triple quotes, backslashes or a closing quote needs escaping here")
    lines = [op["description"]]
    if op.get("random"):
        lines[0] += " Random: draws from the seeded streams (seed, epoch, sample)."
    if op["params"]:
        lines += ["", "Args:"]
        lines += [f"    {_param_doc(n, s)}" for n, s in op["params"].items()]
    body = [f"{indent}{line}" if line else "" for line in lines]
    body[0] = f'{indent}"""{lines[0]}'
    if len(body) == 1:
        return [body[0] + '"""']
    return [*body, f'{indent}"""']


def _factory(op: Mapping[str, Any]) -> Iterator[str]:
    args = _table_args(op)
    call = _call([_Arg(a.name, a.annotation, a.default, True) for a in args])
    yield ""
    yield ""
    yield f"def {op['name']}({_signature(args)}) -> Op:{_noqa(args)}"
    yield from _docstring(op, "    ")
    yield f"    return _op({json.dumps(op['name'])}{', ' if call else ''}{call})"


def _shorthand(op: Mapping[str, Any]) -> Iterator[str]:
    name = op["name"]
    args = _hand_written_args(name) if name in HAND_WRITTEN else _table_args(op)
    call = _call(args)
    yield ""
    yield f"    def {name}({_signature(args, 'self')}) -> Slot:{_noqa(args)}"
    yield f'        """Append ``dataio.transforms.{name}(...)``: {op["description"]}"""'
    yield f"        return self._add({json.dumps(name)}{', ' if call else ''}{call})"


def render() -> str:
    table = _ops._TABLE["ops"]
    slot_ops = [op for op in table if op["kind"] != "batch"]
    for op in table:
        if op["kind"] == "batch" and op["name"] not in HAND_WRITTEN:
            # Batch factories return dataio.batch_transforms.BatchTransform;
            # every one so far has a Python-only calling convention.
            raise SystemExit(f"batch op {op['name']}: write its factory in batch_transforms.py and list it in HAND_WRITTEN")
    generated = [op for op in slot_ops if op["name"] not in HAND_WRITTEN]
    lines = [
        f"# Generated by `{COMMAND}` from the native op table (dataio._native.op_table(),",
        "# written in crates/dataio-engine/src/plan/ops.rs). DO NOT EDIT: change the table",
        "# or dataio/_ops_gen.py and regenerate; tests/test_ops_generated.py fails when stale.",
        '"""The op factories of :mod:`dataio.transforms` and the ``Slot`` shorthands,',
        "rendered from the native op table. Factories the table cannot describe are",
        'written by hand in transforms.py (``dataio._ops_gen.HAND_WRITTEN`` says why)."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
        "    from .pipeline import Slot",
        "    from .transforms import Col, Op",
        "",
        "__all__ = [",
        *(f"    {json.dumps(name)}," for name in sorted(op["name"] for op in generated)),
        "]",
        "",
        "",
        "def _op(name: str, **params: Any) -> Op:",
        "    # transforms re-exports these factories, so it is imported here, when called.",
        "    from .transforms import op",
        "",
        "    return op(name, **params)",
    ]
    for op in generated:
        lines += _factory(op)
    lines += [
        "",
        "",
        "class SlotOps:",
        '    """The shorthands of ``dataio.pipeline.Slot``: ``slot.resize(...)`` appends',
        '    ``dataio.transforms.resize(...)``; a parameter error names the slot."""',
        "",
        "    __slots__ = ()",
        "",
        "    def _add(self, name: str, *args: Any, **kwargs: Any) -> Slot:",
        "        raise NotImplementedError  # Slot appends transforms.<name>(*args, **kwargs)",
    ]
    for op in slot_ops:
        lines += _shorthand(op)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: regenerate it with {COMMAND}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
