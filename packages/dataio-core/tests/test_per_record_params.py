"""Per-record op parameters: the sizes of the geometry ops read from each
record (``dataio.col(field)``), the bucket pipeline they make expressible,
and the row errors that name key, slot, op and field."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio
from dataio.errors import RowError

BUCKETS = {"square": (24, 24), "wide": (16, 32), "tall": (32, 16)}


def _jpeg(i: int) -> bytes:
    h, w = 40 + (i % 4) * 11, 44 + (i % 5) * 9
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 7 + i) % 256, (yy * 5) % 256, (xx * yy + i) % 256], -1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr).save(out, format="JPEG", quality=92)
    return out.getvalue()


def _records(n: int = 18) -> list[dict[str, Any]]:
    names = list(BUCKETS)
    out = []
    for i in range(n):
        name = names[(i * 7) % 3]
        h, w = BUCKETS[name]
        out.append({"key": f"r{i}", "image": _jpeg(i), "bucket": name, "h": h, "w": w})
    return out


def test_resize_reads_its_size_from_each_record() -> None:
    records = _records(9)
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize(h=dataio.col("h"), w=dataio.col("w")),
        dataio.batch(3),
    )
    assert "variable" in pipe.describe(), "a per-record size has no static shape"
    got = {k: img for b in pipe.bind(records).run("numpy") for k, img in zip(b.keys, b["image"])}
    for r in records:
        fixed = dataio.pipeline(dataio.slot("image").decode_image().resize(h=r["h"], w=r["w"]), dataio.batch(1))
        (ref,) = list(fixed.bind([r]).run("numpy"))
        np.testing.assert_array_equal(got[r["key"]], ref["image"][0], err_msg=r["key"])


def test_the_bucket_pipeline_gives_same_size_stacked_batches() -> None:
    # The shape of the bucket workload (docs/benchmark.md): records carry their
    # bucket's size, the sampler groups them, group_by makes one batch per bucket.
    records = _records()
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize_short(dataio.col("h")).center_crop(h=dataio.col("h"), w=dataio.col("w")).normalize("symmetric"),
        dataio.group_by("bucket"),
    )
    batches = list(pipe.bind(records).run("torch"))
    assert [len(b) for b in batches] == [sum(r["bucket"] == k for r in records) for k in dict.fromkeys(r["bucket"] for r in records)]
    for b in batches:
        bucket = records[int(b.indices[0])]["bucket"]
        h, w = BUCKETS[bucket]
        assert tuple(b["image"].shape) == (len(b), 3, h, w), "one stacked tensor per bucket"
        assert all(records[int(i)]["bucket"] == bucket for i in b.indices)


def test_crop_and_random_crops_take_per_record_values_and_stay_deterministic() -> None:
    records = [dict(r, top=i % 3, left=2 * (i % 2)) for i, r in enumerate(_records(6))]
    crop = dataio.pipeline(dataio.slot("image").decode_image().crop(top=dataio.col("top"), left=dataio.col("left"), h=8, w=8), dataio.batch(6))
    (b,) = list(crop.bind(records).run("numpy"))
    for r, img in zip(records, b["image"]):
        full = np.asarray(Image.open(io.BytesIO(r["image"])).convert("RGB"))
        np.testing.assert_array_equal(img, full[r["top"] : r["top"] + 8, r["left"] : r["left"] + 8])
    rrc = dataio.pipeline(dataio.slot("image").decode_image().random_resized_crop(dataio.col("h"), dataio.col("w")), dataio.batch(3))
    def run() -> dict[str, np.ndarray]:
        return {k: np.asarray(x) for b in rrc.bind(records).run("numpy", seed=4) for k, x in zip(b.keys, b["image"])}

    one, two = run(), run()
    assert {k: x.shape[:2] for k, x in one.items()} == {r["key"]: (r["h"], r["w"]) for r in records}
    assert all(np.array_equal(one[k], two[k]) for k in one)


def test_the_signature_records_which_parameters_are_per_record() -> None:
    def sig(h: Any, w: Any) -> str:
        return dataio.pipeline(dataio.slot("image").decode_image().resize(h=h, w=w), dataio.batch(2)).signature

    assert len({sig(8, 8), sig(dataio.col("h"), 8), sig(dataio.col("h"), dataio.col("w")), sig(dataio.col("hh"), dataio.col("w"))}) == 4


@pytest.mark.parametrize(
    "record, words",
    [
        ({}, ["the record has no field 'h'"]),
        ({"h": None}, ["no field 'h'"]),
        ({"h": "tall"}, ["must be an integer", "tall"]),
        ({"h": 0}, ["1..=16777216", "got 0"]),
        ({"h": 1 << 25}, ["1..=16777216"]),
    ],
    ids=["missing", "none", "string", "zero", "huge"],
)
def test_a_missing_or_invalid_value_is_a_row_error_naming_key_slot_op_and_field(record: dict[str, Any], words: list[str]) -> None:
    good = _records(2)
    bad = {"key": "bad-one", "image": _jpeg(5), "w": 8, **record}
    pipe = dataio.pipeline(dataio.slot("pic", field="image").decode_image().resize(h=dataio.col("h"), w=dataio.col("w")), dataio.batch(3))
    with pytest.raises(RowError) as info:
        list(pipe.bind([*good, bad]).run("numpy"))
    e = info.value
    assert (e.key, e.slot, e.op) == ("bad-one", "pic", "resize")
    msg = str(e).replace('"', "'")
    assert "h=dataio.col('h')" in msg, msg
    for w in words:
        assert w.replace('"', "'") in msg, msg
    # With on_failure="skip" the run goes on and the row is reported.
    batches = list(pipe.bind([*good, bad]).run("numpy", on_failure="skip"))
    assert [k for b in batches for k in b.keys] == ["r0", "r1"]
    assert [err.key for b in batches for err in b.errors] == ["bad-one"]
