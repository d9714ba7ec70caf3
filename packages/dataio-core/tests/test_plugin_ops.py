"""A plugin's op in a pipeline, as docs/plugins.md says to call it: the call
(``slot(...).invert()`` and ``.apply("invert")``), ``describe()`` output that
builds the same pipeline again, parameters checked when the pipeline is
written, an error inside the op naming the op, and the unknown-op error.

The ``invert`` op is registered here the way the registry registers a
plugin's (a ``register`` bound to the plugin ``invertplug``); the
entry-point path is what tests/test_plugin_authoring.py covers."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _imaging import jpeg, natural_image
from test_plugin_authoring import env_with, install

import dataio
from dataio import transforms as T
from dataio._ops import BUILTIN_OPS
from dataio._plugins import BUILTIN, host
from dataio.errors import InvalidArgumentError, PlanError, PluginError, RowError
from dataio.plugins import list_ops


def invert(arr: np.ndarray, amount: int = 255, *, label: str | None = None) -> np.ndarray:
    if amount < 0:
        raise RuntimeError(f"the invert op refuses amount={amount}")
    return (amount - arr.astype(np.int64)).clip(0, 255).astype(np.uint8)


def flaky(arr: np.ndarray) -> np.ndarray:
    raise RuntimeError("the flaky op broke")


@pytest.fixture
def plugin_ops() -> Iterator[None]:
    host.manager()
    register = host._op_registrar("invertplug")
    register("invert", invert, kind="transform", params={"amount": int, "label": (str, type(None))}, description="255 - x")
    register("flaky", flaky, kind="transform")
    register("loose", lambda arr, **kw: arr, kind="transform")
    register("rgb_only", lambda arr: arr[..., ::-1].copy(), kind="transform", takes={"dtype": "uint8", "ndim": 3},
             output={"dtype": "uint8", "ndim": 3})
    yield
    for name in ("invert", "flaky", "loose", "rgb_only"):
        host._ops.pop(name, None)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("plugin-op-images")
    recs = []
    for i in range(4):
        p = root / f"im{i}.jpg"
        p.write_bytes(jpeg(natural_image(40, 48, seed=i)))
        recs.append({"key": f"im{i}", "image": str(p)})
    return recs


def base() -> dataio.Slot:
    return dataio.slot("image").decode_image(mode="rgb").resize(h=16, w=16)


def batches(pipe: dataio.Pipeline, recs: list[dict[str, Any]], **options: Any) -> np.ndarray:
    with pipe.bind(recs).run("numpy", **options) as loader:
        return np.concatenate([np.asarray(b["image"]) for b in loader])


# -- 3. how a plugin op is called, and describe() ---------------------------------------


def test_a_plugin_op_is_a_slot_method_and_apply_by_name(plugin_ops: None, images: list[dict[str, Any]]) -> None:
    plain = batches(dataio.pipeline(base(), dataio.batch(2)), images)
    by_method = dataio.pipeline(base().invert(), dataio.batch(2))
    by_apply = dataio.pipeline(base().apply("invert"), dataio.batch(2))
    by_factory = dataio.pipeline(base().apply(T.op("invert")), dataio.batch(2))
    assert by_method == by_apply == by_factory
    np.testing.assert_array_equal(batches(by_method, images), 255 - plain)
    np.testing.assert_array_equal(batches(dataio.pipeline(base().invert(amount=200), dataio.batch(2)), images), (200 - plain.astype(int)).clip(0, 255))
    assert "invert" in dir(base()) and "loose" in dir(base())
    assert base().invert.__doc__ == "255 - x"


def test_describe_prints_a_plugin_op_as_code_that_builds_the_same_pipeline(plugin_ops: None) -> None:
    pipe = dataio.pipeline(base().invert(amount=200, label="x"), dataio.batch(2))
    text = pipe.describe()
    line = next(line.strip() for line in text.splitlines() if "invert" in line)
    code = line.split("  -> ")[0]
    assert code.startswith("slot('image').decode_image(mode='rgb'") and code.endswith(".resize(h=16, w=16, interpolation='bilinear', antialias=True).invert(amount=200, label='x')"), text
    again = eval(code, {"slot": dataio.slot})
    assert dataio.pipeline(again, dataio.batch(2)) == pipe
    # In a branch, and as a bare op: dataio.transforms.op(...).
    op = T.op("invert", amount=3)
    assert repr(op) == "op('invert', amount=3)" and eval(repr(op), {"op": T.op}) == op
    assert pickle.loads(pickle.dumps(pipe)) == pipe


def test_a_plugin_op_named_like_a_slot_method_prints_as_apply(plugin_ops: None) -> None:
    host._op_registrar("invertplug")("when", lambda arr: arr, kind="transform")
    try:
        s = base().apply("when")
        assert repr(s).endswith(".apply('when')")
        assert eval(repr(s), {"slot": dataio.slot}).ops == s.ops
    finally:
        host._ops.pop("when", None)


def test_an_unknown_method_is_still_an_attribute_error(plugin_ops: None) -> None:
    with pytest.raises(AttributeError, match="no installed plugin registers an op"):
        base().not_an_op  # noqa: B018
    assert not hasattr(base(), "not_an_op")
    with pytest.raises(AttributeError):
        base()._private  # noqa: B018


# -- 4. an error inside a plugin op names it --------------------------------------------


@pytest.mark.parametrize("op", ["flaky", "invert"])
def test_an_error_inside_a_plugin_op_names_the_op_record_slot_and_uri(plugin_ops: None, images: list[dict[str, Any]], op: str) -> None:
    chain = base().flaky() if op == "flaky" else base().invert(amount=-1)
    pipe = dataio.pipeline(chain, dataio.batch(4))
    with pytest.raises(RowError) as info:
        batches(pipe, images[:1])
    e = info.value
    assert e.op == op, (e.op, str(e))
    assert e.key == "im0" and e.slot == "image" and e.uri == images[0]["image"], str(e)
    assert f"op {op}" in str(e), str(e)
    assert "RuntimeError" in str(e) and "the invert op refuses" in str(e) if op == "invert" else "the flaky op broke" in str(e)
    # Every row fails: no batch is delivered, the errors reach log_errors.
    errors: list[RowError] = []
    with pytest.warns(RuntimeWarning, match=f"every row failed.*op {op}"):
        with dataio.pipeline(chain, dataio.batch(4)).bind(images).run("numpy", on_failure="skip", log_errors=errors.append) as loader:
            assert list(loader) == []
    assert [err.op for err in errors] == [op] * len(images)


# -- 5. parameters checked when the pipeline is written ---------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.invert(amont=3), r"op invert: unknown parameter 'amont' \(it takes amount, label\)"),
        (lambda s: s.invert(amount="3"), r"op invert: amount must be int, got str '3'"),
        (lambda s: s.invert(amount=True), r"op invert: amount must be int, got a bool"),
        (lambda s: s.invert(label=3), r"op invert: label must be str or NoneType, got int 3"),
        (lambda s: s.invert(amount=dataio.col("a")), r"op invert: amount cannot be a per-record dataio.col"),
        (lambda s: s.apply("invert", amont=3), r"op invert: unknown parameter 'amont'"),
        (lambda s: s.flaky(strength=2), r"op flaky: unknown parameter 'strength' \(it takes none\)"),
        (lambda s: s.loose(arr=np.zeros(2)), r"op loose: arr must be a number, string, bool or None"),
        (lambda s: s.invert(3, "x", 4), r"op invert: 3 positional parameters, it takes at most 2 \(amount, label\)"),
        (lambda s: s.invert(3, amount=4), r"op invert: parameter 'amount' given by position and by keyword"),
        (lambda s: s.invert("3"), r"op invert: amount must be int, got str '3'"),
        (lambda s: s.flaky(2), r"op flaky: 1 positional parameters, it takes at most 0 \(it declares none\)"),
    ],
)
def test_plugin_op_parameters_are_checked_when_the_pipeline_is_written(plugin_ops: None, call: Any, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as info:
        call(base())
    assert isinstance(info.value, PlanError) and 'slot "image"' in str(info.value)


def test_plugin_op_parameters_bind_by_position_in_declared_order(plugin_ops: None) -> None:
    op = base().invert(3, "tag").ops[-1]
    assert op.params == {"amount": 3, "label": "tag"}
    assert base().invert(3, label="x").ops[-1].params == {"amount": 3, "label": "x"}


def test_a_plugin_op_built_directly_is_checked_when_the_pipeline_is_built(plugin_ops: None) -> None:
    chain = base().apply(T.Op("invert", {"amount": "many"}))
    with pytest.raises(PlanError, match="op invert: amount must be int"):
        dataio.pipeline(chain, dataio.batch(2))
    assert base().loose(anything=[1, "a", {"k": None}]).ops[-1].params["anything"] == [1, "a", {"k": None}]


def test_a_plugin_op_missing_a_required_parameter_is_refused(plugin_ops: None) -> None:
    host._op_registrar("invertplug")("scale", lambda arr, factor: arr * factor, kind="transform")
    try:
        with pytest.raises(PlanError, match="op scale: missing required parameter 'factor'"):
            base().scale()
        assert base().scale(factor=2).ops[-1].params == {"factor": 2}
    finally:
        host._ops.pop("scale", None)


class Amount:
    """An object a plugin op accepts as a parameter (its repr is long, as a tokenizer's is)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Amount({self.n}, table={list(range(2000))})"


def test_prepare_turns_a_python_object_into_the_parameters_the_op_takes(plugin_ops: None, images: list[dict[str, Any]]) -> None:
    calls: list[dict[str, Any]] = []

    def prepare(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(dict(params))
        if isinstance(params.get("amount"), Amount):
            params["amount"] = params["amount"].n
        if params.get("amount") == 13:
            raise PlanError("amount 13 is refused by the plugin")
        if params.get("amount") == 14:
            raise KeyError("a plugin bug")
        return params

    host._op_registrar("invertplug")("invert_obj", invert, kind="transform", params={"amount": int}, prepare=prepare)
    try:
        for slot in (base().invert_obj(amount=Amount(200)), base().apply("invert_obj", amount=Amount(200)),
                     base().apply(T.op("invert_obj", amount=Amount(200)))):
            assert slot.ops[-1].params == {"amount": 200}
            pipe = dataio.pipeline(slot, dataio.batch(2))
            assert pickle.loads(pickle.dumps(pipe)).slots[0].ops[-1].params == {"amount": 200}  # plain JSON: it pickles
        assert isinstance(calls[0]["amount"], Amount)  # prepare sees the parameters as written
        np.testing.assert_array_equal(batches(pipe, images[:2]), batches(dataio.pipeline(base().invert(amount=200), dataio.batch(2)), images[:2]))
        with pytest.raises(PlanError, match='slot "image", amount 13 is refused by the plugin'):
            base().invert_obj(amount=13)
        with pytest.raises(PlanError, match="op invert_obj: preparing its parameters failed: KeyError: 'a plugin bug'"):
            base().invert_obj(amount=14)
    finally:
        host._ops.pop("invert_obj", None)
    with pytest.raises(PluginError, match="prepare= is a callable"):
        host._op_registrar("invertplug")("invert_bad", invert, kind="transform", prepare="not callable")


def test_a_wrong_object_is_named_in_a_short_error(plugin_ops: None) -> None:
    with pytest.raises(PlanError) as info:
        base().invert(amount=Amount(3))
    text = str(info.value)
    assert text.startswith('slot "image", op invert: amount must be int, got Amount Amount(3, table=[0, 1, 2'), text
    assert len(text) < 300 and "characters)" in text, text


# -- 6. the unknown-op error --------------------------------------------------------------


def test_the_unknown_op_error_lists_each_op_once_with_the_plugins(plugin_ops: None) -> None:
    with pytest.raises(PlanError) as info:
        T.op("invret")
    listed = str(info.value).split("known ops: ")[1].split(";")[0].split(", ")
    assert len(listed) == len(set(listed)), listed
    assert set(listed) == set(BUILTIN_OPS) | set(list_ops()) and "invert" in listed


# -- the same through a real entry point ----------------------------------------------------

INVERT_PLUGIN = """
import dataio, numpy as np


def invert(arr, amount=255):
    if amount < 0:
        raise RuntimeError("negative amount")
    return (amount - arr.astype(np.int64)).clip(0, 255).astype(np.uint8)


@dataio.hookimpl
def dataio_register_ops(register):
    register("invert", invert, kind="transform", params={"amount": int}, description="255 - x")
"""


def test_the_invert_plugin_through_its_entry_point(tmp_path: Path, images: list[dict[str, Any]]) -> None:
    from conftest import run_python

    install(tmp_path, "dataio_invert", INVERT_PLUGIN, entry_point="invert", dist="dataio-invert")
    r = run_python(
        "import json, dataio\n"
        f"recs = {json.dumps(images[:2])}\n"
        "s = dataio.slot('image').decode_image(mode='rgb').resize(h=8, w=8)\n"
        "pipe = dataio.pipeline(s.invert(amount=250), dataio.batch(2))\n"
        "line = [l for l in pipe.describe().splitlines() if 'invert' in l][0].strip().split('  -> ')[0]\n"
        "again = dataio.pipeline(eval(line, {'slot': dataio.slot}), dataio.batch(2))\n"
        "a = next(iter(pipe.bind(recs).run('numpy')))['image']\n"
        "b = next(iter(dataio.pipeline(s, dataio.batch(2)).bind(recs).run('numpy')))['image']\n"
        "out = {'line': line, 'same': again == pipe, 'inverted': bool(((250 - b.astype(int)).clip(0, 255) == a).all())}\n"
        "try:\n"
        "    s.invert(amount='x')\n"
        "except dataio.errors.InvalidArgumentError as e:\n"
        "    out['param'] = str(e)\n"
        "print(json.dumps(out))\n",
        env=env_with(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["line"].endswith(".invert(amount=250)") and out["same"] and out["inverted"], out
    assert "op invert: amount must be int" in out["param"]


def test_an_op_registration_with_bad_parameter_types_is_refused() -> None:
    from dataio._plugins import PluginHost
    from dataio.errors import PluginError

    h = PluginHost()
    with pytest.raises(PluginError, match="op 'invert' declares parameter 'amount' as 'int'; declare a type"):
        h._op_registrar("invertplug")("invert", invert, kind="transform", params={"amount": "int"})
    with pytest.raises(PluginError, match="is not callable"):
        h._op_registrar("invertplug")("invert", "not a function", kind="transform")


def test_a_slot_without_a_decoder_lists_the_installed_plugin_decoders(plugin_ops: None) -> None:
    decoders = [n for n, spec in host.ops().items() if spec.kind == "decode" and spec.plugin != BUILTIN]
    assert decoders, "the test plugins register decoders"
    with pytest.raises(PlanError, match="has no decoder") as info:
        dataio.slot("x").resize(8, 8)
    assert all(f"{n}()" in str(info.value) for n in ["decode_image", *decoders]), str(info.value)


def test_an_image_op_after_a_decoder_of_points_names_itself_and_what_it_got(plugin_ops: None) -> None:
    host._op_registrar("invertplug")("decode_points", lambda data: np.zeros((5, 3), np.float32), kind="decode")
    try:
        pipe = dataio.pipeline(dataio.slot("pts").decode_points().resize(8, 8), dataio.batch(2))
        with pytest.raises(RowError) as info:
            list(pipe.bind([{"pts": b"x", "key": "p0"}]).run("numpy"))
        assert info.value.op == "resize" and info.value.key == "p0"
        assert "got float32 [5, 3] from the op before it" in str(info.value), str(info.value)
    finally:
        host._ops.pop("decode_points", None)


def test_a_python_op_declares_what_it_takes(plugin_ops: None, images: list[dict[str, Any]]) -> None:
    with pytest.raises(PlanError, match=r"op rgb_only: takes uint8 with 3 dimensions, but normalize before it gives float32"):
        dataio.pipeline(base().normalize().rgb_only(), dataio.batch(2))
    got = batches(dataio.pipeline(base().rgb_only(), dataio.batch(2)), images)
    np.testing.assert_array_equal(got, batches(dataio.pipeline(base(), dataio.batch(2)), images)[..., ::-1])
    # An input not known where the pipeline is built is held to it before the op runs:
    pipe = dataio.pipeline(dataio.slot("image").decode_bytes().rgb_only(), dataio.batch(2))
    with pytest.raises(RowError, match=r"rgb_only takes uint8 with 3 dimensions, got uint8 \[\d+\]") as e:
        batches(pipe, images)
    assert e.value.op == "rgb_only"
    with pytest.raises(PluginError, match="takes= is for a transform"):
        host._op_registrar("invertplug")("decode_x", lambda b: b, kind="decode", takes={"dtype": "uint8"})
    with pytest.raises(PluginError, match="output= is"):
        host._op_registrar("invertplug")("bad_out", lambda a: a, kind="transform", output={"shape": [3]})
