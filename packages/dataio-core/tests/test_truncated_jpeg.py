"""A JPEG cut short is refused under every decode plan.

A region-of-interest or DCT-scaled decode stops at the last row a crop needs,
so the decoder alone never meets data missing after it: before the
completeness check, `crop` at the top delivered files cut at half their
length. Every file here is cut at many points, baseline and progressive,
4:2:0 and 4:4:4, with and without restart markers, and decoded as a file, a
shard member and a parquet `{bytes, path}` value under full decode,
`resize_short` + `center_crop`, a `crop` at the top and `random_resized_crop`
over several epochs: each cut file is a named RowError, never a sample.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _imaging import natural_image
from PIL import Image

import dataio
from dataio.errors import DecodeError, RowError

KINDS: dict[str, dict[str, Any]] = {
    "baseline-420": {"subsampling": 2},
    "baseline-444": {"subsampling": 0},
    "baseline-420-restart": {"subsampling": 2, "restart_marker_rows": 1},
    "progressive-420": {"subsampling": 2, "progressive": True},
    "progressive-444-restart": {"subsampling": 0, "progressive": True, "restart_marker_blocks": 4},
}
CUTS = [0.3, 0.5, 0.8, 0.9, 0.97, 0.995]


def encode(kind: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(natural_image(240, 320, seed=len(kind))).save(out, "JPEG", quality=90, **KINDS[kind])
    return out.getvalue()


def chains() -> dict[str, Any]:
    s = lambda: dataio.slot("image").decode_image(mode="rgb")  # noqa: E731 - a fresh slot each time
    return {
        "full": s(),
        "resize_short+center_crop": s().resize_short(128).center_crop(h=64, w=64),
        "crop-top": s().crop(top=0, left=0, h=64, w=64),
        "random_resized_crop": s().random_resized_crop(48, 48),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cut-jpegs")
    out: dict[str, Path] = {}
    for kind in KINDS:
        data = encode(kind)
        assert Image.open(io.BytesIO(data)).info.get("progressive", 0) == int("progressive" in kind)
        good = root / f"{kind}-whole.jpg"
        good.write_bytes(data)
        out[f"{kind}-whole"] = good
        # Valid files with bytes after the end-of-image marker: accepted, as PIL accepts them.
        tail = root / f"{kind}-tail.jpg"
        tail.write_bytes(data + b"\x00" * 17 + b"trailing bytes")
        out[f"{kind}-tail"] = tail
        for frac in CUTS:
            p = root / f"{kind}-cut{int(frac * 1000):03d}.jpg"
            p.write_bytes(data[: int(len(data) * frac)])
            out[p.stem] = p
    return out


def split(files: dict[str, Path]) -> tuple[list[str], list[str]]:
    good = sorted(k for k in files if k.endswith(("-whole", "-tail")))
    bad = sorted(k for k in files if "-cut" in k)
    return good, bad


@pytest.mark.parametrize("plan", list(chains()))
def test_every_cut_file_is_a_named_row_error_under_every_plan(files: dict[str, Path], plan: str) -> None:
    good, bad = split(files)
    recs = [{"key": k, "image": str(files[k])} for k in sorted(files)]
    pipe = dataio.pipeline(chains()[plan], dataio.batch(8))
    epochs = 3 if plan == "random_resized_crop" else 1
    for epoch in range(epochs):
        # Every skipped row reaches log_errors, also those of a batch whose
        # every row failed (not delivered; three in four files here are cut).
        logged: list[RowError] = []
        with pipe.bind(recs).run("numpy", on_failure="skip", seed=7, epoch=epoch, log_errors=logged.append) as loader:
            batches = list(loader)
        delivered = [k for b in batches for k in b.keys]
        errors = {e.key: e for e in logged}
        assert {e.key for b in batches for e in b.errors} <= set(errors)
        assert sorted(delivered) == good, f"{plan}, epoch {epoch}: cut files delivered: {sorted(set(delivered) - set(good))}"
        assert sorted(errors) == bad
        for key, e in errors.items():
            assert isinstance(e, RowError) and e.op == "decode_image" and e.slot == "image"
            assert e.uri == str(files[key]) and e.cause_kind == "DecodeError", (key, e)
            assert "truncated" in str(e) and str(files[key]) in str(e), str(e)


def test_read_image_refuses_every_cut_and_accepts_trailing_bytes(files: dict[str, Path]) -> None:
    good, bad = split(files)
    for key in bad:
        with pytest.raises(DecodeError, match="truncated"):
            dataio.read_image(str(files[key]))
    for key in good:
        got = np.asarray(dataio.read_image(str(files[key])))
        ref = np.asarray(Image.open(files[key]).convert("RGB"))
        assert got.shape == ref.shape


def test_shard_members_and_parquet_values_follow_the_same_rule(files: dict[str, Path], tmp_path: Path) -> None:
    wds = pytest.importorskip("webdataset")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    good, bad = split(files)
    names = sorted(files)
    shard = tmp_path / "train-0000.tar"
    with wds.TarWriter(str(shard)) as w:
        for k in names:
            w.write({"__key__": k, "jpg": files[k].read_bytes()})
    crop = lambda field: dataio.slot(field).decode_image(mode="rgb").crop(top=0, left=0, h=32, w=32)  # noqa: E731
    errors: list[RowError] = []
    with dataio.pipeline(crop("jpg"), dataio.batch(8)).bind(dataio.tar_records(str(shard))).run(
            "numpy", on_failure="skip", log_errors=errors.append) as loader:
        batches = list(loader)
    assert sorted(k for b in batches for k in b.keys) == good
    assert sorted(e.key for e in errors) == bad
    assert all(e.cause_kind == "DecodeError" and str(shard) in (e.uri or "") for e in errors), errors[0]

    table = pa.table({
        "key": names,
        "image": [{"bytes": files[k].read_bytes(), "path": f"{k}.jpg"} for k in names],
    })
    pq.write_table(table, tmp_path / "images.parquet")
    recs = dataio.parquet_records(str(tmp_path / "images.parquet"), key="key")
    errors = []
    with dataio.pipeline(crop("image"), dataio.batch(8)).bind(recs).run("numpy", on_failure="skip", log_errors=errors.append) as loader:
        batches = list(loader)
    assert sorted(k for b in batches for k in b.keys) == good
    assert sorted(e.key for e in errors) == bad
