"""The pipeline DSL: validation at build time (PlanError naming the stage,
slot or op), immutability, pickling, a signature that is stable within and
across processes, readable descriptions, and factories that build the same
plan as the slot methods."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _imaging import decode_one, natural_image, png

import dataio
from dataio import cond as c
from dataio import transforms as T
from dataio.errors import PlanError


def imagenet_slot() -> Any:
    return dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet")


def imagenet_pipe(size: int = 224, prefetch: int = 4) -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=size, w=size).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(64, drop_last=True, prefetch=prefetch),
    )


def rename(record: dict) -> dict:
    """A module-level record map: picklable by reference."""
    return {"image": record["path"], "label": record["class_id"]}


# ---------------------------------------------------------------------------
# Validation: PlanError (a ValueError) naming what is wrong

IMG = dataio.slot("image").decode_image()

INVALID: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("second shape stage", lambda: dataio.pipeline(IMG, dataio.batch(2), dataio.batch(3)), ["shape stage", "batch(3", "stage 2"]),
    ("batch then group_by", lambda: dataio.pipeline(IMG, dataio.batch(2), dataio.group_by("g")), ["shape stage", "group_by('g'"]),
    ("no shape stage", lambda: dataio.pipeline(IMG), ["shape stage"]),
    ("no slot", lambda: dataio.pipeline(dataio.batch(2)), ["slot"]),
    ("slot after the shape stage", lambda: dataio.pipeline(IMG, dataio.batch(2), dataio.slot("late").decode_bytes()), ["'late'", "before the shape stage"]),
    ("a bare op as a stage", lambda: dataio.pipeline(IMG, T.resize(h=2, w=2), dataio.batch(2)), ["resize(", "slot"]),
    ("not a stage at all", lambda: dataio.pipeline(IMG, 42, dataio.batch(2)), ["42", "stage 1"]),
    ("unknown op by name", lambda: IMG.apply("blur", radius=2), ["'blur'", "unknown op"]),
    ("unknown op factory", lambda: T.op("sharpen"), ["'sharpen'"]),
    ("unknown parameter", lambda: IMG.apply("resize", h=4, w=4, bogus=1), ["resize", "'bogus'"]),
    ("str where int", lambda: IMG.resize(h="224", w=224), ["resize", "h", "str"]),
    ("float where int", lambda: IMG.center_crop(h=22.5, w=3), ["center_crop", "h", "float"]),
    ("bool where int", lambda: IMG.resize(h=True, w=3), ["resize", "h", "bool"]),
    ("negative size", lambda: IMG.random_crop(h=-4, w=3), ["random_crop", "h", "positive"]),
    ("zero size", lambda: IMG.resize_short(0), ["resize_short", "size"]),
    ("bad mode", lambda: dataio.slot("image").decode_image(mode="bgr"), ["decode_image", "mode", "'bgr'"]),
    ("bad max_pixels", lambda: dataio.slot("image").decode_image(max_pixels="lots"), ["decode_image", "max_pixels"]),
    ("bad dct_scaling", lambda: dataio.slot("image").decode_image(dct_scaling="yes"), ["decode_image", "dct_scaling"]),
    ("bad interpolation", lambda: IMG.resize(h=2, w=2, interpolation="cubic-ish"), ["resize", "interpolation"]),
    ("bad layout", lambda: IMG.normalize("imagenet", layout="WHC"), ["normalize", "layout"]),
    ("bad flip probability type", lambda: IMG.hflip(p="often"), ["hflip", "p"]),
    ("bad cast dtype", lambda: IMG.cast("complex64"), ["cast", "dtype", "complex64"]),
    ("col where not allowed", lambda: IMG.hflip(p=dataio.col("p")), ['"image"', "hflip", "p", "col"]),
    ("missing tensor_key", lambda: dataio.slot("x").decode_safetensors(None), ["decode_safetensors", "tensor_key"]),
    ("slot without decoder, in a pipeline", lambda: dataio.pipeline(dataio.slot("image"), dataio.batch(2)), ["'image'", "no decoder"]),
    ("slot starting with a transform", lambda: dataio.slot("image").resize(h=2, w=2), ["'image'", "no decoder", "resize"]),
    ("slot starting with apply(transform)", lambda: dataio.slot("thumb").apply(T.center_crop(h=2, w=2)), ["'thumb'", "center_crop"]),
    ("decoder not first", lambda: IMG.resize(h=2, w=2).decode_bytes(), ["'image'", "decode_bytes", "first"]),
    ("two decoders", lambda: IMG.apply(T.decode_npy()), ["'image'", "decode_npy"]),
    ("decoder inside a branch", lambda: IMG.when(c.shape(0).gt(2)).then(T.decode_image()).otherwise(), ["'image'", "decode"]),
    ("duplicate slot names", lambda: dataio.pipeline(IMG, dataio.slot("image").decode_bytes(), dataio.batch(2)), ["'image'", "two slots"]),
    ("image op on bytes", lambda: dataio.pipeline(dataio.slot("raw").decode_bytes().apply(T.resize(h=2, w=2)), dataio.batch(2)), ['"raw"', "resize"]),
    ("geometry after normalize", lambda: dataio.pipeline(IMG.normalize().resize(h=2, w=2), dataio.batch(2)), ['"image"', "resize", "normalize"]),
    ("geometry after cast", lambda: dataio.pipeline(IMG.cast("float32").hflip(p=1.0), dataio.batch(2)), ['"image"', "hflip"]),
    ("unknown normalization", lambda: dataio.pipeline(IMG.normalize("cifar-ish"), dataio.batch(2)), ['"image"', "normalize", "cifar-ish"]),
    ("flip probability above 1", lambda: dataio.pipeline(IMG.vflip(p=1.5), dataio.batch(2)), ['"image"', "vflip", "1.5"]),
    ("bad scale pair", lambda: dataio.pipeline(IMG.random_resized_crop(h=8, w=8, scale=(0.9, 0.1)), dataio.batch(2)), ['"image"', "random_resized_crop", "scale"]),
    ("branches disagree", lambda: dataio.pipeline(IMG.when(c.shape(0).gt(4)).then(T.normalize()).otherwise(T.resize(h=2, w=2)), dataio.batch(2)), ['"image"', "branches"]),
    ("active_when on a required slot", lambda: dataio.slot("mask").decode_image().active_when(c.col("m").is_not_null()), ["'mask'", "optional"]),
    ("active_when on a shape", lambda: dataio.slot("mask", optional=True).active_when(c.shape(0).gt(3)), ["'mask'", "shape"]),
    ("normalize means for another channel count", lambda: dataio.pipeline(dataio.slot("g").decode_image(mode="gray").normalize("imagenet"), dataio.batch(2)), ['"g"', "normalize", "3 means"]),
    ("batch size zero", lambda: dataio.batch(0), ["size"]),
    ("prefetch zero", lambda: dataio.batch(4, prefetch=0), ["prefetch"]),
    ("group_by without key", lambda: dataio.group_by(""), ["key"]),
]


@pytest.mark.parametrize("build, expected", [(b, e) for _, b, e in INVALID], ids=[n for n, _, _ in INVALID])
def test_invalid_plans_raise_plan_error_naming_the_culprit(build: Callable[[], Any], expected: list[str]) -> None:
    with pytest.raises(PlanError) as info:
        build()
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    for part in expected:
        assert part in msg, f"{part!r} not in the message: {msg}"


def test_plan_errors_come_at_build_time_not_at_the_first_batch() -> None:
    """The native compiler runs when the pipeline is built: a plan the Python
    layer accepts but the native side refuses fails in dataio.pipeline()."""
    chain = IMG.normalize().center_crop(h=4, w=4)  # valid op by op, not as a chain
    with pytest.raises(PlanError, match="center_crop"):
        dataio.pipeline(chain, dataio.batch(2))


def test_valid_variants_build() -> None:
    p = dataio.pipeline(
        dataio.slot("image").decode_image(mode="gray", max_pixels=10_000, dct_scaling=False).resize(h=8, w=8, interpolation="nearest", antialias=False).to_chw().cast("float16"),
        dataio.slot("mask", optional=True).active_when(c.col("m").is_not_null() & ~c.col("split").eq("test")).decode_image(mode="rgba"),
        dataio.slot("x", field="npy_path").decode_npy().cast("float32"),
        dataio.group_by("batch_id", prefetch=1),
    )
    static = {name: (shape, dtype) for name, shape, dtype in p.compiled().slots()}
    assert static["image"] == ([1, 8, 8], "float16")
    assert static["mask"] == (None, "uint8")
    assert static["x"][0] is None


# ---------------------------------------------------------------------------
# Immutability


def test_plans_slots_ops_and_predicates_are_immutable() -> None:
    pipe = imagenet_pipe()
    sig = pipe.signature
    with pytest.raises(AttributeError):
        pipe.slots = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        pipe.shape = dataio.batch(3)  # type: ignore[misc]
    s = pipe.slots[0]
    with pytest.raises(AttributeError):
        s.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.ops = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.ops[1].name = "resize_long"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        dataio.batch(4).size = 8  # type: ignore[misc]
    with pytest.raises(AttributeError):
        c.col("a").is_null()._spec = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        dataio.col("k").name = "j"  # type: ignore[misc]
    assert isinstance(s.ops, tuple) and isinstance(pipe.slots, tuple)
    assert pipe.signature == sig


def test_methods_return_new_slots_and_leave_the_original_alone() -> None:
    base = dataio.slot("image").decode_image()
    resized = base.resize(h=8, w=8)
    flipped = base.hflip(p=1.0)
    assert len(base.ops) == 1 and len(resized.ops) == 2 and len(flipped.ops) == 2
    assert resized.ops[1].name == "resize" and flipped.ops[1].name == "hflip"
    p1 = dataio.pipeline(resized, dataio.batch(2))
    p2 = dataio.pipeline(flipped, dataio.batch(2))
    assert p1.signature != p2.signature


def test_op_parameters_cannot_be_changed_through_the_plan() -> None:
    """An op's params are part of an immutable plan: changing them in place
    must either be refused or leave the built pipeline as it was."""
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=8, w=8), dataio.batch(2))
    before = (pipe.to_json(), repr(pipe))
    params = pipe.slots[0].ops[1].params
    try:
        params["h"] = 999  # type: ignore[index]
    except TypeError:
        pass
    assert (pipe.to_json(), repr(pipe)) == before, "mutating op.params changed a built (immutable) pipeline"
    clone = pickle.loads(pickle.dumps(pipe))
    assert clone.signature == pipe.signature


# ---------------------------------------------------------------------------
# Pickling


def test_pipelines_without_lambdas_pickle_round_trip() -> None:
    pipe = dataio.pipeline(
        dataio.map(rename),
        dataio.slot("image").decode_image().random_resized_crop(h=32, w=32, scale=(0.5, 1.0)).hflip().normalize("clip", layout="HWC"),
        dataio.slot("label").decode_bytes(),
        dataio.slot("latent", optional=True).active_when(c.col("latent").is_not_null()).decode_safetensors(tensor_key=dataio.col("tensor_key")),
        dataio.slot("crop").decode_image().when(c.shape(axis=0).gt(512)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512)),
        dataio.batch(16, drop_last=True, prefetch=3),
    )
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        clone = pickle.loads(pickle.dumps(pipe, protocol=proto))
        assert clone is not pipe
        assert clone.signature == pipe.signature
        assert clone == pipe and hash(clone) == hash(pipe)
        assert clone.to_json() == pipe.to_json()
        assert clone.record_maps[0].fn is rename
        assert clone.shape.prefetch == 3 and clone.shape.drop_last is True


def test_a_pickled_pipeline_describes_itself_the_same() -> None:
    pipe = dataio.pipeline(dataio.map(rename), imagenet_slot(), dataio.slot("label").decode_bytes(), dataio.batch(8))
    clone = pickle.loads(pickle.dumps(pipe))
    assert repr(clone) == repr(pipe)


def test_pieces_pickle_too() -> None:
    for obj in [
        dataio.slot("image", optional=True).active_when(c.col("a").is_in([1, 2])).decode_image(mode="gray"),
        T.random_resized_crop(h=3, w=4),
        c.col("a").gt(3) | ~c.shape(1).le(5.5),
        dataio.col("tensor_key"),
        dataio.group_by("batch_id", prefetch=5),
        dataio.collate(),
    ]:
        clone = pickle.loads(pickle.dumps(obj))
        assert repr(clone) == repr(obj)
        if hasattr(obj, "to_json"):
            assert clone.to_json() == obj.to_json()


def test_a_pickled_pipeline_produces_the_same_pixels() -> None:
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=20, w=30).hflip(p=1.0), dataio.batch(1))
    clone = pickle.loads(pickle.dumps(pipe))
    data = png(natural_image(40, 50, 1))
    a = decode_one(pipe.slots[0], data)
    b = decode_one(clone.slots[0], data)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# Signatures


def test_signature_is_stable_and_sensitive() -> None:
    a, b = imagenet_pipe(), imagenet_pipe()
    assert a is not b and a.signature == b.signature and a == b
    assert len(a.signature) == 32 and int(a.signature, 16) >= 0
    # a different op parameter, op order, mode, slot name, shape stage
    variants = [
        imagenet_pipe(size=192),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize_short(256, interpolation="bicubic").center_crop(h=224, w=224).normalize("imagenet"), dataio.slot("label").decode_bytes(), dataio.batch(64, drop_last=True)),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("clip"), dataio.slot("label").decode_bytes(), dataio.batch(64, drop_last=True)),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"), dataio.slot("label").decode_bytes(), dataio.batch(64, drop_last=False)),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"), dataio.slot("target", field="label").decode_bytes(), dataio.batch(64, drop_last=True)),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"), dataio.slot("label").decode_bytes(), dataio.batch(32, drop_last=True)),
        dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").center_crop(h=224, w=224).resize_short(256).normalize("imagenet"), dataio.slot("label").decode_bytes(), dataio.batch(64, drop_last=True)),
        dataio.pipeline(dataio.map(rename), dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"), dataio.slot("label").decode_bytes(), dataio.batch(64, drop_last=True)),
    ]
    sigs = {v.signature for v in variants}
    assert a.signature not in sigs
    assert len(sigs) == len(variants), "every variant has its own signature"
    assert {a, *variants} == {b, *variants}


def test_prefetch_does_not_change_what_a_plan_yields_nor_its_signature() -> None:
    assert imagenet_pipe(prefetch=1).signature == imagenet_pipe(prefetch=9).signature


def test_signature_is_stable_across_processes() -> None:
    code = textwrap.dedent(
        """
        import dataio
        from dataio import cond as c, transforms as T
        p = dataio.pipeline(
            dataio.map(dict),
            dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"),
            dataio.slot("label").decode_bytes(),
            dataio.slot("crop").decode_image().when(c.shape(axis=0).gt(512)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512)),
            dataio.batch(64, drop_last=True, prefetch=4),
        )
        print(p.signature)
        """
    )
    here = dataio.pipeline(
        dataio.map(dict),
        dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.slot("crop").decode_image().when(c.shape(axis=0).gt(512)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512)),
        dataio.batch(64, drop_last=True, prefetch=4),
    ).signature
    for hashseed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == here


# ---------------------------------------------------------------------------
# describe() / repr


def test_describe_is_readable() -> None:
    pipe = dataio.pipeline(
        dataio.map(rename),
        imagenet_slot(),
        dataio.slot("label").decode_bytes(),
        dataio.slot("thumb", field="image").decode_image(mode="gray").resize_long(64),
        dataio.batch(64, drop_last=True, prefetch=4),
    )
    text = pipe.describe()
    assert repr(pipe) == text
    lines = text.splitlines()
    assert lines[0] == f"pipeline {pipe.signature[:12]}"
    assert "rename" in lines[1]
    image_line = next(line for line in lines if "slot('image')" in line)
    for part in ["decode_image(", "mode='rgb'", "resize_short(size=256", "center_crop(h=224, w=224)", "normalize(mean_std='imagenet'", "float32[3, 224, 224]"]:
        assert part in image_line, f"{part!r} not in {image_line!r}"
    assert image_line.index("decode_image") < image_line.index("resize_short") < image_line.index("center_crop") < image_line.index("normalize")
    thumb = next(line for line in lines if "slot('thumb'" in line)
    assert "field='image'" in thumb and "uint8[variable]" in thumb
    label = next(line for line in lines if "slot('label')" in line)
    assert "decode_bytes()" in label
    assert lines[-1].strip() == "batch(64, drop_last=True, prefetch=4)"
    assert "{" not in text, "no raw JSON in the description"


def test_reprs_of_the_pieces() -> None:
    assert repr(T.center_crop(h=3, w=4)) == "center_crop(h=3, w=4)"
    assert repr(dataio.col("k")) == "dataio.col('k')"
    assert "mask_id" in repr(c.col("mask_id").is_not_null())
    s = dataio.slot("mask", optional=True).active_when(c.col("mask_id").is_not_null()).decode_image(mode="gray")
    r = repr(s)
    assert r.startswith("slot('mask', optional=True)") and "active_when" in r and "decode_image(mode='gray'" in r


def test_branches_have_a_readable_repr_and_describe() -> None:
    b = dataio.slot("image").decode_image().when(c.shape(axis=0).gt(512)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512))
    r = repr(b)
    assert "when(" in r and "shape(0).gt(512)" in r and "then(center_crop(h=512, w=512))" in r and "otherwise(resize(h=512, w=512" in r
    text = dataio.pipeline(b, dataio.batch(2)).describe()
    assert "then(center_crop(h=512, w=512))" in text and "uint8[512, 512, 3]" in text


# ---------------------------------------------------------------------------
# transforms.* factories == slot methods


FACTORY_PAIRS: list[tuple[str, Callable[[Any], Any], Any]] = [
    ("resize", lambda s: s.resize(h=12, w=34), T.resize(h=12, w=34)),
    ("resize nearest", lambda s: s.resize(h=12, w=34, interpolation="nearest", antialias=False), T.resize(h=12, w=34, interpolation="nearest", antialias=False)),
    ("resize_short", lambda s: s.resize_short(256, max_size=400), T.resize_short(256, max_size=400)),
    ("resize_long", lambda s: s.resize_long(99), T.resize_long(99)),
    ("center_crop", lambda s: s.center_crop(h=5, w=6), T.center_crop(h=5, w=6)),
    ("crop", lambda s: s.crop(top=1, left=2, h=3, w=4), T.crop(top=1, left=2, h=3, w=4)),
    ("random_crop", lambda s: s.random_crop(h=3, w=4), T.random_crop(h=3, w=4)),
    ("random_resized_crop", lambda s: s.random_resized_crop(h=3, w=4, scale=(0.2, 0.9)), T.random_resized_crop(h=3, w=4, scale=(0.2, 0.9))),
    ("hflip", lambda s: s.hflip(0.25), T.hflip(0.25)),
    ("vflip", lambda s: s.vflip(), T.vflip()),
    ("normalize", lambda s: s.normalize("imagenet"), T.normalize("imagenet")),
    ("normalize pair", lambda s: s.normalize(([0.1, 0.2, 0.3], [0.4, 0.5, 0.6]), layout="HWC"), T.normalize(([0.1, 0.2, 0.3], [0.4, 0.5, 0.6]), layout="HWC")),
    ("to_chw", lambda s: s.to_chw(), T.to_chw()),
    ("cast", lambda s: s.cast("float16"), T.cast("float16")),
]


@pytest.mark.parametrize("method, factory", [(m, f) for _, m, f in FACTORY_PAIRS], ids=[n for n, _, _ in FACTORY_PAIRS])
def test_factories_build_the_same_plan_as_slot_methods(method: Callable[[Any], Any], factory: Any) -> None:
    base = dataio.slot("image").decode_image()
    via_method = method(base)
    via_apply = base.apply(factory)
    via_name = base.apply(factory.name, **factory.params)
    assert via_method.ops == via_apply.ops == via_name.ops
    assert via_method.to_json() == via_apply.to_json()
    p1 = dataio.pipeline(via_method, dataio.batch(4))
    p2 = dataio.pipeline(via_apply, dataio.batch(4))
    assert p1.signature == p2.signature and p1 == p2


def test_decoder_factories_match_decoder_methods() -> None:
    pairs = [
        (dataio.slot("x").decode_image(mode="rgba", max_pixels=1000, dct_scaling=False), T.decode_image("rgba", max_pixels=1000, dct_scaling=False)),
        (dataio.slot("x").decode_bytes(), T.decode_bytes()),
        (dataio.slot("x").decode_npy(), T.decode_npy()),
        (dataio.slot("x").decode_safetensors("w"), T.decode_safetensors("w")),
        (dataio.slot("x").decode_safetensors(tensor_key=dataio.col("k")), T.decode_safetensors(dataio.col("k"))),
    ]
    for method, factory in pairs:
        assert method.ops == dataio.slot("x").apply(factory).ops


def test_a_branch_built_from_factories_equals_the_readme_form() -> None:
    spec = dataio.slot("image").decode_image(mode="rgb").when(c.shape(axis=0).gt(512)).then(dataio.transforms.center_crop(h=512, w=512)).otherwise(dataio.transforms.resize(h=512, w=512))
    again = dataio.slot("image").decode_image(mode="rgb").when(c.shape(axis=0).gt(512)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512))
    other = dataio.slot("image").decode_image(mode="rgb").when(c.shape(axis=0).gt(511)).then(T.center_crop(h=512, w=512)).otherwise(T.resize(h=512, w=512))

    def sig(s: Any) -> Any:
        return dataio.pipeline(s, dataio.batch(2)).signature

    assert sig(spec) == sig(again) != sig(other)
    static = {n: s for n, s, _ in dataio.pipeline(spec, dataio.batch(2)).compiled().slots()}
    assert static["image"] == [512, 512, 3], "both branches give 512x512x3: the slot stays fixed-shape"
