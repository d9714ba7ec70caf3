"""Renders the op reference (docs/ops.md) from the native op table.

    python -m dataio._ops_doc > docs/ops.md

The tests compare the file with this output, so the docs cannot drift from
what the engine accepts.
"""

from __future__ import annotations

from typing import Any

from ._ops import BATCH_OPS, BUILTIN_OPS, DTYPES, PRESETS, BuiltinOp, Param

_KINDS = {
    "decode": "Decoders (the first op of a slot)",
    "transform": "Transforms (slot methods and `dataio.transforms`)",
    "batch": "Batch transforms (`dataio.batch_transforms`, after the shape stage)",
}


def _type(p: Param) -> str:
    names = [t.__name__ for t in p.types]
    if p.choices:
        names = [" \\| ".join(f'"{c}"' for c in p.choices)] + [n for n in names if n != "str"]
    out = " or ".join(names)
    return out + " or `dataio.col(field)`" if p.col else out


def _default(p: Param) -> str:
    if p.required:
        return "required"
    if p.default is None:
        return "—"
    return f"`{p.default!r}`"


def _row(op: BuiltinOp) -> list[str]:
    params = "<br>".join(f"`{name}`: {_type(p)}, {_default(p)} — {p.doc}" for name, p in op.params.items()) or "—"
    flags = " (random)" if op.random else ""
    return [f"| `{op.name}` | {op.description}{flags} | {params} |"]


def _plugin_sections() -> list[str]:
    """The ops of the plugin packages shipped with dataio, from each op's own
    declaration (op ABI v2): rendering needs those packages installed."""
    from ._plugins import host
    from .transforms import PLUGIN_PACKAGE_OPS

    lines: list[str] = []
    for dist in sorted(set(PLUGIN_PACKAGE_OPS.values())):
        names = sorted(n for n, d in PLUGIN_PACKAGE_OPS.items() if d == dist)
        lines += [f"## `{dist}` (a plugin package: `pip install {dist}`)", "",
                  "| op | what it does | parameters |", "| --- | --- | --- |"]
        for name in names:
            spec = host.op(name)
            if spec is None or not all(isinstance(p, Param) for p in spec.params.values()):
                raise RuntimeError(f"rendering docs/ops.md needs {dist} installed (it declares {name})")
            lines += _row(BuiltinOp(name, spec.kind, dict(spec.params), spec.description))
        lines.append("")
    return lines


def render() -> str:
    lines = [
        "# Op reference",
        "",
        "Generated from the native op table (`python -m dataio._ops_doc > docs/ops.md`);",
        "a test keeps it in step with what the engine accepts. Parameters marked",
        "`dataio.col(field)` may be read from each record when the pipeline runs.",
        "",
    ]
    ops: list[Any] = [*BUILTIN_OPS.values(), *BATCH_OPS.values()]
    for kind, title in _KINDS.items():
        lines += [f"## {title}", "", "| op | what it does | parameters |", "| --- | --- | --- |"]
        for op in ops:
            if op.kind == kind:
                lines += _row(op)
        lines.append("")
    lines += _plugin_sections()
    lines += [
        f"Normalization presets: {', '.join(f'`{p}`' for p in PRESETS)}.",
        "",
        f"Dtypes: {', '.join(f'`{d}`' for d in DTYPES)}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
