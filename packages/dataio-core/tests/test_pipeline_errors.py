"""Per-row failures in both modes: ``on_failure="skip"`` (the row lands on
``batch.errors`` and the rest comes through) and ``on_failure="raise"`` (a
typed RowError at the batch holding the row, after the good batches before
it). Every RowError names key, slot, op and URI."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _imaging import (
    huge_jpeg,
    huge_png,
    jpeg,
    natural_image,
    npy_bytes,
    png,
    rows,
    safetensors_bytes,
)

import dataio
from dataio.errors import RowError

BAD_KINDS = ["corrupt", "garbled_header", "truncated", "empty", "text", "huge_png", "huge_jpeg", "missing"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-images")
    good = jpeg(natural_image(64, 80, seed=1))
    out: dict[str, Path] = {}
    for i in range(12):
        p = root / f"good{i:02d}.jpg"
        p.write_bytes(jpeg(natural_image(40 + i, 56, seed=i)))
        out[f"good{i:02d}"] = p
    payloads = {
        "corrupt": b"\xff\xd8\xff\xe0" + bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8)),
        "garbled_header": good[:2] + b"\x00" * 300 + good[302:],
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "text": b"this is a text file, not an image\n" * 20,
        "huge_png": huge_png(100_000, 100_000),
        "huge_jpeg": huge_jpeg(60_000, 60_000),
    }
    for name, data in payloads.items():
        p = root / f"{name}.bin"
        p.write_bytes(data)
        out[name] = p
    out["missing"] = root / "does-not-exist.jpg"
    return out


def chain() -> Any:
    return dataio.slot("image").decode_image(mode="rgb").resize(h=32, w=32).normalize("imagenet")


def pipe(batch: int = 4) -> dataio.Pipeline:
    return dataio.pipeline(chain(), dataio.batch(batch))


def mixed_records(files: dict[str, Path], bad: list[str]) -> list[dict[str, Any]]:
    """Good records with the bad ones spread among them (one every third)."""
    recs: list[dict[str, Any]] = []
    goods = iter(range(12))
    for b in bad:
        for _ in range(2):
            g = next(goods)
            recs.append({"key": f"good{g:02d}", "image": str(files[f"good{g:02d}"])})
        recs.append({"key": f"bad-{b}", "image": str(files[b])})
    return recs


def check_row_error(e: Any, key: str, uri: str, op: str = "decode_image", slot: str = "image") -> None:
    assert isinstance(e, RowError) and isinstance(e, dataio.DataioError)
    assert e.key == key, (e.key, key)
    assert e.slot == slot, e.slot
    assert e.op == op, (e.op, op)
    assert e.uri == uri, (e.uri, uri)
    msg = str(e)
    assert uri in msg and key in msg and slot in msg and op in msg, msg


@pytest.mark.parametrize("bad", BAD_KINDS)
def test_skip_mode_reports_each_bad_file_and_keeps_the_rest(files: dict[str, Path], bad: str) -> None:
    recs = mixed_records(files, [bad])  # good, good, bad
    recs += [{"key": "good11", "image": str(files["good11"])}]
    batches = []
    with pipe(batch=4).bind(recs).run("torch", on_failure="skip") as loader:
        for b in loader:
            batches.append(b)
    assert len(batches) == 1
    (b,) = batches
    assert b.keys == ["good00", "good01", "good11"]
    assert len(b) == 3 and b["image"].shape[0] == 3 and tuple(b["image"].shape) == (3, 3, 32, 32)
    assert b.indices == [0, 1, 3]
    assert len(b.errors) == 1
    e = b.errors[0]
    check_row_error(e, f"bad-{bad}", str(files[bad]), op="read" if bad == "missing" else "decode_image")
    assert e.index == 2
    if bad == "missing":
        assert e.cause_kind == "NotFoundError"
    else:
        assert e.cause_kind == "DecodeError", e.cause_kind
    if bad.startswith("huge"):
        assert "limit" in str(e) or "large" in str(e).lower(), str(e)


def test_skip_mode_over_many_batches(files: dict[str, Path]) -> None:
    recs = mixed_records(files, ["corrupt", "truncated", "empty", "text", "missing", "huge_png"])
    batches = list(pipe(batch=4).bind(recs).run("numpy", on_failure="skip", concurrency=5))
    all_keys = [k for b in batches for k in b.keys]
    assert all_keys == [r["key"] for r in recs if r["key"].startswith("good")]
    errs = [e for b in batches for e in b.errors]
    assert sorted(e.key for e in errs) == sorted(r["key"] for r in recs if r["key"].startswith("bad"))
    for b in batches:
        assert b["image"].shape[0] == len(b) == len(b.keys) == len(b.indices)
        for e in b.errors:
            assert e.index not in b.indices
    # the good rows are still right: same pixels as a clean run
    clean = [r for r in recs if r["key"].startswith("good")]
    ref = rows(list(pipe(batch=4).bind(clean).run("numpy")), "image")
    got = rows(batches, "image")
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])


def test_a_batch_of_only_bad_rows_is_not_delivered(files: dict[str, Path]) -> None:
    """Its errors reach log_errors, the loader warns once naming the first,
    and the position still moves past it (a checkpoint does not replay it)."""
    bad = [{"key": f"bad{i}", "image": str(files["empty" if i % 2 else "text"])} for i in range(4)]
    good = [{"key": f"good{i:02d}", "image": str(files[f"good{i:02d}"])} for i in range(3)]
    recs = bad[:2] + good[:2] + bad[2:] + good[2:]  # batches of 2: bad, good, bad, good
    logged: list[RowError] = []
    with dataio.pipeline(chain(), dataio.batch(2)).bind(recs).run("torch", on_failure="skip", log_errors=logged.append) as loader:
        assert len(loader) == 4  # the batches planned
        with pytest.warns(RuntimeWarning) as warned:
            first = next(loader)
            assert first.keys == ["good00", "good01"] and loader.state_dict()["position"] == 4
            rest = list(loader)
    assert [b.keys for b in rest] == [["good02"]] and rest[0]["image"].shape == (1, 3, 32, 32)
    assert [e.key for e in logged] == ["bad0", "bad1", "bad2", "bad3"]
    assert all(b.errors == [] for b in [first, *rest])
    (w,) = [w for w in warned if "every row failed" in str(w.message)]  # once per loader
    assert "bad0" in str(w.message) and "decode_image" in str(w.message) and w.filename == __file__, str(w.message)


def test_bytes_inputs_fail_without_a_uri(files: dict[str, Path]) -> None:
    recs = [{"key": "ok", "image": files["good00"].read_bytes()}, {"key": "junk", "image": b"\x89PNG\r\n\x1a\n garbage"}]
    (b,) = list(pipe().bind(recs).run("numpy", on_failure="skip"))
    assert b.keys == ["ok"]
    (e,) = b.errors
    assert e.key == "junk" and e.slot == "image" and e.op == "decode_image" and e.uri is None
    assert "junk" in str(e)


def test_max_pixels_refuses_images_above_the_limit(files: dict[str, Path]) -> None:
    # good00 is 40 x 56 = 2240 pixels
    recs = [{"key": "jpg", "image": str(files["good00"])}, {"key": "png", "image": png(natural_image(40, 56, seed=0))}, {"key": "tiny", "image": png(natural_image(20, 20, seed=0))}]
    p = dataio.pipeline(dataio.slot("image").decode_image(max_pixels=1000).resize(h=8, w=8), dataio.batch(3))
    (b,) = list(p.bind(recs).run("numpy", on_failure="skip"))
    assert b.keys == ["tiny"]
    assert sorted(e.key for e in b.errors) == ["jpg", "png"]
    for e in b.errors:
        assert "1000" in str(e) and "limit" in str(e), str(e)
        assert e.cause_kind == "DecodeError"
    (b,) = list(dataio.pipeline(dataio.slot("image").decode_image(max_pixels=2240), dataio.batch(3)).bind(recs[:1]).run("numpy"))
    assert b.keys == ["jpg"]


def test_log_errors_true_logs_through_dataio_rows(files: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    recs = mixed_records(files, ["corrupt", "missing"])
    with caplog.at_level(logging.WARNING, logger="dataio.rows"):
        batches = list(pipe().bind(recs).run("torch", on_failure="skip", log_errors=True))
    logged = [r for r in caplog.records if r.name == "dataio.rows"]
    assert len(logged) == 2
    text = "\n".join(r.getMessage() for r in logged)
    assert str(files["corrupt"]) in text and str(files["missing"]) in text
    assert "bad-corrupt" in text and "bad-missing" in text
    assert all(r.levelno >= logging.WARNING for r in logged)
    assert sum(len(b.errors) for b in batches) == 2, "logging does not take the errors off the batch"


def test_log_errors_callable_receives_row_errors(files: dict[str, Path]) -> None:
    got: list[Any] = []
    recs = mixed_records(files, ["truncated", "text", "huge_jpeg"])
    batches = list(pipe().bind(recs).run("numpy", on_failure="skip", log_errors=got.append))
    assert len(got) == 3
    assert all(isinstance(e, RowError) for e in got)
    assert sorted(e.key for e in got) == ["bad-huge_jpeg", "bad-text", "bad-truncated"]
    for e in got:
        check_row_error(e, e.key, str(files[e.key[4:]]))
    assert sum(len(b) for b in batches) == 6


def test_the_readme_form_log_errors_alone_logs_bad_rows(files: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    """The README shows ``run("torch", log_errors=True)`` without on_failure:
    whatever the loader then does with the row (skip it or raise), the row
    must be logged through ``dataio.rows``."""
    recs = mixed_records(files, ["corrupt"])
    with caplog.at_level(logging.WARNING, logger="dataio.rows"):
        try:
            for _ in pipe().bind(recs).run("torch", log_errors=True):
                pass
        except RowError:
            pass
    logged = [r for r in caplog.records if r.name == "dataio.rows"]
    assert len(logged) == 1 and str(files["corrupt"]) in logged[0].getMessage()


@pytest.mark.parametrize("bad", ["corrupt", "truncated", "text", "missing"])
def test_raise_mode_surfaces_the_error_at_its_batch(files: dict[str, Path], bad: str) -> None:
    goods = [{"key": f"good{i:02d}", "image": str(files[f"good{i:02d}"])} for i in range(11)]
    recs = goods[:9] + [{"key": f"bad-{bad}", "image": str(files[bad])}] + goods[9:]  # row 9: the third batch of 4
    delivered: list[list[str]] = []
    with pytest.raises(RowError) as info, pipe(batch=4).bind(recs).run("torch", concurrency=16) as loader:
        for b in loader:
            delivered.append(list(b.keys))
    assert delivered == [[r["key"] for r in recs[0:4]], [r["key"] for r in recs[4:8]]], "the good batches before the bad one come first"
    e = info.value
    check_row_error(e, f"bad-{bad}", str(files[bad]), op="read" if bad == "missing" else "decode_image")
    assert e.index == 9
    assert e.cause_kind == ("NotFoundError" if bad == "missing" else "DecodeError")


def test_raise_mode_is_the_default_and_completion_order_still_raises(files: dict[str, Path]) -> None:
    recs = mixed_records(files, ["empty"])
    with pytest.raises(RowError) as info:
        list(pipe(batch=1).bind(recs).run("numpy", order="completion"))
    check_row_error(info.value, "bad-empty", str(files["empty"]))
    assert "empty" in info.value.cause


def test_missing_files_are_not_found_row_errors(files: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "x.png"
    recs = [{"key": "m", "image": str(missing)}, {"key": "g", "image": str(files["good00"])}]
    (b,) = list(pipe().bind(recs).run("numpy", on_failure="skip"))
    (e,) = b.errors
    assert e.uri == str(missing) and e.cause_kind == "NotFoundError" and e.op == "read"
    assert "not found" in str(e).lower()


def test_record_shape_problems_are_row_errors(files: dict[str, Path]) -> None:
    recs = [
        {"key": "no-field", "other": 1},
        {"key": "none", "image": None},
        {"key": "number", "image": 12},
        {"key": "ok", "image": str(files["good01"])},
    ]
    (b,) = list(pipe().bind(recs).run("numpy", on_failure="skip"))
    assert b.keys == ["ok"]
    errs = {e.key: e for e in b.errors}
    assert set(errs) == {"no-field", "none", "number"}
    assert all(e.slot == "image" for e in errs.values())
    assert "image" in str(errs["no-field"])
    assert "None" in str(errs["none"]) or "optional" in str(errs["none"])


def test_other_decoders_report_their_op(tmp_path: Path) -> None:
    st = safetensors_bytes({"a": np.zeros(3, np.float32), "b": np.ones(2, np.int64)})
    recs = [
        {"key": "npy-garbage", "npy": b"not an npy", "st": st, "k": "a"},
        {"key": "npy-truncated", "npy": npy_bytes(np.arange(100.0))[:150], "st": st, "k": "a"},
        {"key": "st-no-tensor", "npy": npy_bytes(np.arange(3.0)), "st": st, "k": "zzz"},
        {"key": "st-garbage", "npy": npy_bytes(np.arange(3.0)), "st": b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}", "k": "a"},
        {"key": "st-no-key-field", "npy": npy_bytes(np.arange(3.0)), "st": st},
        {"key": "fine", "npy": npy_bytes(np.arange(3.0)), "st": st, "k": "b"},
    ]
    p = dataio.pipeline(
        dataio.slot("npy").decode_npy(),
        dataio.slot("st").decode_safetensors(tensor_key=dataio.col("k")),
        dataio.batch(6),
    )
    (b,) = list(p.bind(recs).run("numpy", on_failure="skip"))
    assert b.keys == ["fine"]
    np.testing.assert_array_equal(b["st"][0], np.ones(2, np.int64))
    errs = {e.key: e for e in b.errors}
    assert errs["npy-garbage"].op == "decode_npy" and errs["npy-garbage"].slot == "npy"
    assert errs["npy-truncated"].op == "decode_npy" and "truncated" in str(errs["npy-truncated"])
    assert errs["st-no-tensor"].op == "decode_safetensors" and "zzz" in str(errs["st-no-tensor"])
    assert errs["st-garbage"].op == "decode_safetensors" and errs["st-garbage"].slot == "st"
    assert errs["st-no-key-field"].op == "decode_safetensors" and "k" in str(errs["st-no-key-field"])
    assert all(e.cause_kind == "DecodeError" for e in errs.values())


def test_skipped_rows_are_compacted_out_of_every_slot() -> None:
    """A row that fails in its second slot is dropped from the first slot's
    batch buffer too, and the surviving rows stay aligned with the keys."""
    imgs = [natural_image(20, 24, seed=i) for i in range(8)]
    recs = [{"key": f"k{i}", "a": png(imgs[i]), "b": b"junk" if i in (1, 4, 5) else png(imgs[i])} for i in range(8)]
    p = dataio.pipeline(
        dataio.slot("a").decode_image().resize(h=10, w=12),
        dataio.slot("b").decode_image().resize(h=10, w=12).normalize("unit"),
        dataio.slot("raw", field="a").decode_image(),
        dataio.batch(8),
    )
    (b,) = list(p.bind(recs).run("numpy", on_failure="skip"))
    assert b.keys == ["k0", "k2", "k3", "k6", "k7"]
    assert sorted(e.key for e in b.errors) == ["k1", "k4", "k5"] and all(e.slot == "b" for e in b.errors)
    assert b["a"].shape == (5, 10, 12, 3) and b["b"].shape == (5, 3, 10, 12)
    ref = rows(list(dataio.pipeline(dataio.slot("a").decode_image().resize(h=10, w=12), dataio.batch(8)).bind(recs).run("numpy")), "a")
    for j, k in enumerate(b.keys):
        np.testing.assert_array_equal(b["a"][j], ref[k])
        np.testing.assert_allclose(b["b"][j], np.transpose(ref[k], (2, 0, 1)) / 255.0, atol=1e-6)
        np.testing.assert_array_equal(b["raw"][j], imgs[int(k[1:])])


def test_an_exception_in_a_record_map_reaches_the_caller_with_its_cause(files: dict[str, Path]) -> None:
    def bad_map(r: dict[str, Any]) -> dict[str, Any]:
        return {"image": r["no-such-field"]}

    p = dataio.pipeline(dataio.map(bad_map), chain(), dataio.batch(2))
    # A bug in user code comes back as the user's own exception, with a note
    # saying where dataio called it.
    with pytest.raises(KeyError, match="no-such-field") as info:
        list(p.bind([{"key": "x", "image": str(files["good00"])}]).run("numpy"))
    notes = getattr(info.value, "__notes__", [])
    assert any("dataio.map record function" in n and "position 0" in n for n in notes), notes
