"""Native plugin ops through the op ABI (``dataio_abi::ops``): the test
plugin ``dataio-nativeops`` (tests/plugins/dataio-nativeops, a pyo3 module
built by ``nox -s tests``) registers a decoder (``decode_pgm``) and two
transforms (``native_invert``, ``native_jitter``) as ``dataio.op.v2``
capsules, each op declared once in Rust (``dataio.plugins.NativeOpsPlugin``
registers them from their declarations); the engine adopts the tables and runs them on its CPU pool
without the GIL, with the same keyed randomness, resume and error naming as
its built-in ops."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import dataio
import dataio._opcall
from dataio import _native
from dataio._plugins import host
from dataio.errors import InvalidArgumentError, PlanError, RowError
from dataio.plugins import list_ops

N = 24


def pgm(h: int, w: int, value: int) -> bytes:
    """A binary PGM whose pixel i is (value + i) % 256."""
    return f"P5 {w} {h} 255\n".encode() + bytes((value + i) % 256 for i in range(h * w))


def reference(h: int, w: int, value: int) -> np.ndarray:
    return np.array([(value + i) % 256 for i in range(h * w)], np.uint8).reshape(h, w, 1)


RECORDS = [{"key": f"r{i:03d}", "img": pgm(3, 4, 10 * i)} for i in range(N)]


def rows(pipe: Any, records: Any = RECORDS, **run: Any) -> dict[str, np.ndarray]:
    """Every delivered sample by key."""
    out = {}
    with pipe.bind(records).run("numpy", **run) as loader:
        for b in loader:
            for k, a in zip(b.keys, b["img"]):
                out[k] = np.array(a)
    return out


def test_the_plugin_registers_native_ops_that_every_listing_sees() -> None:
    ops = list_ops()
    for name, kind in (("decode_pgm", "decode"), ("native_invert", "transform"), ("native_jitter", "transform")):
        assert ops[name].plugin == "nativeops" and ops[name].kind == kind and ops[name].native, ops[name]
        assert name in _native.native_ops()
    listed = subprocess.run([sys.executable, "-m", "dataio"], capture_output=True, text=True, check=True).stdout
    assert "decode_pgm" in listed and "native_jitter" in listed, listed


def capsule(name: str) -> Any:
    """A fresh capsule of the test plugin's op ``name``."""
    from dataio_nativeops import _native as plugin

    return next(c for c in plugin.ops() if _native.native_op_declaration(c)[0] == name)


def test_an_op_declared_once_in_rust_carries_its_doc_defaults_and_help_to_every_listing() -> None:
    spec = list_ops()["decode_pgm"]
    assert spec.description == "Binary PGM (P5, 8-bit) to uint8 [H, W, 1]."
    p = spec.params["max_pixels"]
    assert p.default == 1 << 24 and p.types == (int,) and "more pixels" in p.doc and not p.required, p
    assert spec.output == {"dtype": "uint8", "ndim": 3}
    assert list_ops()["native_invert"].params == {}
    import inspect

    assert str(inspect.signature(dataio.slot("img").decode_pgm)) == "(max_pixels: int = 16777216)"
    text = dataio.pipeline(dataio.slot("img").decode_pgm(16).native_jitter(3), dataio.batch(4)).describe()
    assert "max_pixels=16" in text and "amount=3" in text, text
    # A parameter left out shows the default it takes, under its op.
    text = dataio.pipeline(dataio.slot("img").decode_pgm().native_jitter(3), dataio.batch(4)).describe()
    assert f"decode_pgm defaults: max_pixels={1 << 24}" in text and "native_jitter defaults" not in text, text
    report = subprocess.run([sys.executable, "-m", "dataio"], capture_output=True, text=True).stdout
    assert "decode_pgm (native)" in report and "python -m dataio ops" in report, report
    listed = subprocess.run([sys.executable, "-m", "dataio", "ops"], capture_output=True, text=True).stdout
    assert "max_pixels" in listed and str(1 << 24) in listed and "more pixels" in listed, listed


def test_decode_and_transforms_run_natively_and_never_call_python(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError(f"a native op went through Python: {args[:2]}")

    monkeypatch.setattr(dataio._opcall, "call_plugin_op", refuse)
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm().native_invert(), dataio.batch(5))
    got = rows(pipe)
    assert sorted(got) == [r["key"] for r in RECORDS]
    for i, r in enumerate(RECORDS):
        assert np.array_equal(got[r["key"]], 255 - reference(3, 4, 10 * i)), r["key"]


def test_a_native_decoders_output_reenters_the_fused_image_chain() -> None:
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm().resize(h=6, w=8).normalize((0.0, 1.0)), dataio.batch(4))
    with pipe.bind(RECORDS[:4]).run("numpy") as loader:
        b = next(iter(loader))
    assert b["img"].shape == (4, 1, 6, 8) and b["img"].dtype == np.float32


def test_keyed_draws_are_deterministic_per_seed_epoch_and_record_and_equal_under_any_concurrency() -> None:
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm().native_jitter(amount=20), dataio.batch(4))
    base = {r["key"]: reference(3, 4, 10 * i).astype(np.int64) for i, r in enumerate(RECORDS)}
    a = rows(pipe, seed=7, concurrency=1)
    assert a.keys() == base.keys()
    assert all(np.array_equal(a[k], rows(pipe, seed=7, concurrency=16)[k]) for k in a)
    offsets = set()
    for k, arr in a.items():
        # One offset per sample, saturating: wherever no clipping happened the
        # difference to the decoded pixels is the same.
        d = arr.astype(np.int64) - base[k]
        inside = (arr > 0) & (arr < 255)
        assert len(set(d[inside].tolist())) <= 1, (k, d)
        offsets.update(d[inside].tolist())
    assert len(offsets) > 3 and all(-20 <= o <= 20 for o in offsets), offsets
    assert any(not np.array_equal(a[k], rows(pipe, seed=8)[k]) for k in a)
    with pipe.bind(RECORDS).run("numpy", seed=7) as loader:
        e0 = {k: np.array(x) for b in loader for k, x in zip(b.keys, b["img"])}
        e1 = {k: np.array(x) for b in loader for k, x in zip(b.keys, b["img"])}
    assert all(np.array_equal(e0[k], a[k]) for k in a)
    assert any(not np.array_equal(e0[k], e1[k]) for k in a), "epoch 1 draws again"


def test_resume_mid_epoch_delivers_the_same_native_results() -> None:
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm().native_jitter(amount=9), dataio.batch(4))
    whole = rows(pipe, seed=3)
    with pipe.bind(RECORDS).run("numpy", seed=3) as loader:
        it = iter(loader)
        first = [next(it), next(it)]
        state = loader.state_dict()
    seen = {k: np.array(x) for b in first for k, x in zip(b.keys, b["img"])}
    with pipe.bind(RECORDS).run("numpy", seed=3) as loader:
        loader.load_state_dict(state)
        for b in loader:
            for k, x in zip(b.keys, b["img"]):
                assert k not in seen
                seen[k] = np.array(x)
    assert seen.keys() == whole.keys() and all(np.array_equal(seen[k], whole[k]) for k in whole)


def test_bad_bytes_are_a_row_error_naming_the_op_record_and_slot_and_skip_goes_on() -> None:
    bad = [dict(r) for r in RECORDS[:8]]
    bad[2]["img"] = b"P5 4 3 255\n" + b"\x00" * 5  # truncated
    bad[5]["img"] = b"GIF89a not a pgm"
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm().native_invert(), dataio.batch(4))
    with pytest.raises(RowError) as e:
        rows(pipe, bad)
    assert e.value.op == "decode_pgm" and e.value.key == "r002" and e.value.slot == "img", e.value
    assert "truncated" in str(e.value)
    with pipe.bind(bad).run("numpy", on_failure="skip") as loader:
        keys = [k for b in loader for k in b.keys]
        failed = loader.stats()["records_failed"]
    assert sorted(keys) == sorted(r["key"] for i, r in enumerate(bad) if i not in (2, 5)) and failed == 2


def test_an_input_the_op_does_not_declare_is_refused_where_the_pipeline_is_built() -> None:
    # native_invert declares INPUT_DTYPE "uint8"; cast says what it outputs.
    with pytest.raises(PlanError, match=r'slot "img", op native_invert: takes uint8 with any number of dimensions, '
                                        r"but cast before it gives float32 with 3 dimensions"):
        dataio.pipeline(dataio.slot("img").decode_pgm().cast("float32").native_invert(), dataio.batch(4))
    dataio.pipeline(dataio.slot("img").decode_pgm().cast("uint8").native_invert(), dataio.batch(4))
    listed = subprocess.run([sys.executable, "-m", "dataio", "ops", "native_invert"], capture_output=True, text=True)
    assert "takes uint8 with any number of dimensions; gives uint8" in listed.stdout, listed.stdout


def test_an_input_the_op_does_not_take_fails_the_row_before_the_op_runs() -> None:
    # decode_npy's output varies, so only the engine can hold the call to the declaration.
    records = [{"key": f"n{i}", "img": npy(np.full((2, 3), i, np.uint8 if i != 2 else np.float32))} for i in range(4)]
    pipe = dataio.pipeline(dataio.slot("img").decode_npy().native_invert(), dataio.batch(4))
    with pytest.raises(RowError) as e:
        rows(pipe, records)
    assert e.value.op == "native_invert" and e.value.key == "n2", e.value
    assert "native_invert takes uint8 with any number of dimensions, got float32 [2, 3]" in str(e.value), e.value
    with pipe.bind(records).run("numpy", on_failure="skip") as loader:
        got = {k: np.asarray(x) for b in loader for k, x in zip(b.keys, b["img"])}
    assert sorted(got) == ["n0", "n1", "n3"] and (got["n3"] == 252).all()


def npy(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_parameters_are_checked_when_the_pipeline_is_written() -> None:
    with pytest.raises(PlanError, match="amount must be int"):
        dataio.slot("img").decode_pgm().native_jitter(amount="lots")
    with pytest.raises(PlanError, match="strength"):
        dataio.slot("img").decode_pgm().native_jitter(strength=3)
    # The declared range (a u8) is checked where the pipeline is written.
    with pytest.raises(PlanError, match="amount must be at most 255, got 999"):
        dataio.slot("img").decode_pgm().native_jitter(amount=999)
    # An op that declares no parameters refuses every keyword, and positions.
    with pytest.raises(PlanError, match="unknown parameter 'radius'"):
        dataio.slot("img").decode_pgm().native_invert(radius=2)
    with pytest.raises(PlanError, match="it declares none"):
        dataio.slot("img").decode_pgm().native_invert(2)
    # Positional parameters in declared order, as for built-in ops.
    assert dataio.slot("img").decode_pgm(4096).native_jitter(2).ops[1].params == {"amount": 2}
    # A value the declaration allows and the data refuses: the op's own message, at the row.
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm(max_pixels=4), dataio.batch(4))
    with pytest.raises(RowError, match="is over max_pixels=4"):
        rows(pipe, RECORDS[:4])


def test_the_engine_refuses_a_table_of_another_name_or_kind_or_a_foreign_capsule() -> None:
    from dataio_nativeops import _native as plugin

    with pytest.raises(InvalidArgumentError, match="table is named"):
        _native.register_native_op("some_other_name", capsule("native_invert"), "transform")
    with pytest.raises(ValueError, match="kind"):
        _native.register_native_op("native_invert", capsule("native_invert"), "decode")
    with pytest.raises(TypeError, match="dataio.op.v2"):
        _native.register_native_op("native_invert", _native._abi_memory_backend(), "transform")
    with pytest.raises(TypeError, match="capsule"):
        _native.register_native_op("native_invert", lambda a: a, "transform")
    assert plugin.ops  # the module's capsule factory
    cap = capsule("native_invert")
    _native.register_native_op("native_invert", cap, "transform")  # a fresh table replaces the old
    with pytest.raises(ValueError, match="already registered once"):
        _native.register_native_op("native_invert", cap, "transform")
    assert "native_invert" in _native.native_ops()


def test_a_refused_native_table_is_the_plugins_problem_and_not_the_others() -> None:

    register = host._op_registrar("brokenplug")
    # Registered under a name its table does not carry: refused, recorded, dropped.
    register("mislabelled", capsule("native_jitter"), kind="transform")
    assert host.op("mislabelled") is None
    problems = [p for p in host.problems() if p.plugin == "brokenplug"]
    assert problems and "mislabelled" in problems[0].message and "table is named" in problems[0].message
    assert host.op("native_jitter") is not None and "native_jitter" in _native.native_ops()


# -- the conformance suite a plugin author runs (dataio.testing.OpConformance) --

from dataio.testing import OpConformance, PluginConformance  # noqa: E402 - the suites, after the direct tests


class TestDecodePgmConforms(OpConformance):
    op = "decode_pgm"
    kind = "decode"
    params = {"max_pixels": 4096}

    @pytest.fixture
    def samples(self) -> list[bytes]:
        return [pgm(2 + i % 3, 3 + i % 4, i) for i in range(10)]


class TestDecodePgmRangedConforms(OpConformance):
    op = "decode_pgm_ranged"
    kind = "decode"
    params = {"max_pixels": 4096}

    @pytest.fixture
    def samples(self) -> list[bytes]:
        return [pgm(2 + i % 3, 3 + i % 4, i) + b"tail" for i in range(10)]


class TestNativeJitterConforms(OpConformance):
    op = "native_jitter"
    kind = "transform"
    params = {"amount": 5}

    @pytest.fixture
    def samples(self) -> list[np.ndarray]:
        return [reference(2, 3, 7 * i) for i in range(10)]


class TestNativeInvertConforms(OpConformance):
    """An op that declares no parameters: the suite's unknown keyword is refused."""

    op = "native_invert"
    kind = "transform"
    params: dict[str, object] = {}

    @pytest.fixture
    def samples(self) -> list[np.ndarray]:
        return [reference(2, 3, 7 * i) for i in range(10)]


class TestTheNativeOpsPluginConforms(PluginConformance):
    entry_point = "nativeops"
    package = "dataio-nativeops"
    ops = ("decode_pgm", "decode_pgm_ranged", "native_invert", "native_jitter")


# -- a decoder that reads its input by range (flags::RANGED_INPUT) --


def test_a_ranged_decoder_reads_the_ranges_it_needs_not_the_object(tmp_path: Any) -> None:
    tail = b"\xee" * (1 << 20)  # a megabyte after each image the decoder must never read
    records = []
    for i in range(6):
        path = tmp_path / f"img{i}.pgm"
        path.write_bytes(pgm(5, 7, 3 * i) + tail)
        records.append({"key": f"f{i}", "img": str(path)})
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm_ranged().native_invert(), dataio.batch(3))
    with pipe.bind(records).run("numpy") as loader:
        got = {k: np.array(x) for b in loader for k, x in zip(b.keys, b["img"])}
        read = loader.stats()["bytes_read"]
    for i in range(6):
        assert np.array_equal(got[f"f{i}"], 255 - reference(5, 7, 3 * i))
    # The header read (64 bytes) and the 35 pixels per image, nothing of the tail.
    assert read == 6 * (64 + 35), read
    # Bytes already in memory (inline, a shard member) come through the same reader.
    inline = [{"key": f"b{i}", "img": pgm(5, 7, 3 * i) + b"junk"} for i in range(3)]
    assert all(np.array_equal(v, rows(pipe, inline)[k]) for k, v in {f"b{i}": got[f"f{i}"] for i in range(3)}.items())


def test_a_ranged_decoder_on_a_short_or_missing_object_fails_the_row_by_name(tmp_path: Any) -> None:
    short = tmp_path / "short.pgm"
    short.write_bytes(pgm(5, 7, 0)[:30])
    missing = tmp_path / "missing.pgm"
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm_ranged(), dataio.batch(1))
    with pytest.raises(RowError) as e:
        rows(pipe, [{"key": "s", "img": str(short)}])
    assert e.value.op == "decode_pgm_ranged" and "truncated" in str(e.value) and e.value.uri == str(short), e.value
    with pytest.raises(RowError) as e:
        rows(pipe, [{"key": "m", "img": str(missing)}])
    assert e.value.key == "m" and "missing.pgm" in str(e.value), e.value
    assert isinstance(e.value.__cause__ or e.value, Exception)


def _py_invert(arr: np.ndarray) -> np.ndarray:
    return (255 - arr.astype(np.int64)).clip(0, 255).astype(np.uint8)


class TestAPythonTransformConformsToo(OpConformance):
    """The suite on a Python op (native = False): it must run through its function."""

    op = "py_invert_conformance"
    kind = "transform"
    native = False

    @pytest.fixture(autouse=True)
    def _registered(self) -> None:
        host._op_registrar("pyconformance")(self.op, _py_invert, kind="transform")

    @pytest.fixture
    def samples(self) -> list[np.ndarray]:
        return [reference(2, 3, 11 * i) for i in range(10)]
