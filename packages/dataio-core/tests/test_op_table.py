"""One op schema: the native layer exports its op table, and every Python
surface of the ops — the factories of dataio.transforms and
dataio.batch_transforms, the Slot shorthands, the docs — agrees with it."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

import dataio
from dataio import _native, batch_transforms, transforms
from dataio._ops import BATCH_OPS, BUILTIN_OPS, DTYPES, PRESETS
from dataio.errors import PlanError
from dataio.pipeline import Slot

ROOT = Path(__file__).resolve().parents[3]
TABLE = json.loads(_native.op_table())


def _factory_params(fn: Any, skip_self: bool = False) -> dict[str, inspect.Parameter]:
    params = dict(inspect.signature(fn).parameters)
    if skip_self:
        params.pop("self", None)
    return {k: v for k, v in params.items() if v.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}


def test_the_native_table_lists_every_op_with_typed_parameters() -> None:
    names = [op["name"] for op in TABLE["ops"]]
    assert len(names) == len(set(names))
    assert {"decode_image", "resize", "random_resized_crop", "normalize", "cast", "mixup", "pad_to_longest"} <= set(names)
    for op in TABLE["ops"]:
        assert op["kind"] in ("decode", "transform", "batch"), op
        assert op["description"], f"{op['name']} has no description"
        for pname, schema in op["params"].items():
            assert schema.get("description"), f"{op['name']}.{pname} has no description"
    assert BUILTIN_OPS["resize"].params["h"].col and not BUILTIN_OPS["resize"].params["antialias"].col
    assert BUILTIN_OPS["decode_image"].params["max_pixels"].default == 178_956_970
    assert BUILTIN_OPS["random_resized_crop"].random and not BUILTIN_OPS["resize"].random
    assert "bfloat16" in DTYPES and "float8_e4m3fn" in DTYPES
    assert set(PRESETS) == {"imagenet", "clip", "symmetric", "unit"}


@pytest.mark.parametrize("name", sorted(BUILTIN_OPS))
def test_each_factory_and_slot_shorthand_matches_the_table(name: str) -> None:
    spec = BUILTIN_OPS[name]
    factory = getattr(transforms, name)
    fparams = _factory_params(factory)
    assert set(fparams) == set(spec.params), f"transforms.{name} parameters differ from the native table"
    for pname, p in fparams.items():
        native = spec.params[pname]
        if p.default is inspect.Parameter.empty:
            assert native.required, f"transforms.{name}({pname}) is required but the table has a default"
        elif p.default is not None:
            expected = list(native.default) if isinstance(native.default, tuple) else native.default
            got = list(p.default) if isinstance(p.default, tuple) else p.default
            assert got == expected or (isinstance(got, float) and abs(got - expected) < 1e-12), f"{name}.{pname}: {got!r} != {expected!r}"
        if native.col:
            assert "Col" in str(p.annotation), f"transforms.{name}({pname}) accepts dataio.col but its annotation says {p.annotation}"
    shorthand = getattr(Slot, name)
    sparams = _factory_params(shorthand, skip_self=True)
    if name == "random_resized_crop":  # forwards **kw; the named ones must agree
        assert set(sparams) <= set(fparams)
    else:
        assert {k: (v.default, v.kind) for k, v in sparams.items()} == {k: (v.default, v.kind) for k, v in fparams.items()}, f"Slot.{name} differs from transforms.{name}"


@pytest.mark.parametrize("name", sorted(BATCH_OPS))
def test_each_batch_transform_factory_matches_the_table(name: str) -> None:
    fparams = _factory_params(getattr(batch_transforms, name))
    assert set(fparams) == set(BATCH_OPS[name].params)
    for pname, p in fparams.items():
        native = BATCH_OPS[name].params[pname]
        if p.default is not inspect.Parameter.empty and native.default is not None:
            assert p.default == native.default, (name, pname)


def test_python_validation_uses_the_tables_ranges_and_choices() -> None:
    with pytest.raises(PlanError, match="max_pixels must be positive"):
        transforms.decode_image(max_pixels=0)
    with pytest.raises(PlanError, match="'nearest'"):
        transforms.resize(2, 2, interpolation="cubic")
    with pytest.raises(PlanError, match="h must be at most 16777216"):
        transforms.resize(1 << 25, 2)
    with pytest.raises(PlanError, match="alpha must be positive"):
        batch_transforms.mixup(alpha=0, num_classes=3)
    with pytest.raises(PlanError, match="cannot be a per-record"):
        transforms.resize(2, 2, interpolation=dataio.col("interp"))
    # Presets the table lists are accepted; others are refused where written.
    for preset in PRESETS:
        transforms.normalize(preset)
    with pytest.raises(PlanError, match="mean_std must be one of 'imagenet'"):
        transforms.normalize("half")
    # The native compiler refuses it too (a plan written as JSON by hand).
    plan = {"version": 1, "slots": [{"name": "x", "ops": [{"op": "decode_image"}, {"op": "normalize", "params": {"mean_std": "half"}}]}], "shape": {"kind": "batch", "size": 1}}
    with pytest.raises(ValueError, match="unknown normalization"):
        _native.compile_plan(json.dumps(plan))


def test_docs_list_every_builtin_op() -> None:
    text = (ROOT / "docs" / "ops.md").read_text()
    listed = set(re.findall(r"^\| `(\w+)`", text, re.M))
    from dataio.transforms import PLUGIN_PACKAGE_OPS

    # The shipped plugin packages' ops too, from their declarations in Rust.
    expected = set(BUILTIN_OPS) | set(BATCH_OPS) | set(PLUGIN_PACKAGE_OPS)
    assert listed == expected, "regenerate docs/ops.md: python -m dataio._ops_doc > docs/ops.md"
    from dataio._ops_doc import render

    assert text == render(), "docs/ops.md is stale: regenerate it with python -m dataio._ops_doc > docs/ops.md"
