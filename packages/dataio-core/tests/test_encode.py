"""encode_image: a slot's last op turns its pixels into an image file's bytes
(JPEG through libjpeg-turbo, lossless PNG and WebP), checked by decoding the
bytes back with PIL and against the same pipeline without the encoder."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import dataio
from dataio.errors import PlanError, RowError


def _photo(h: int, w: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    px = np.stack([x * 200 // w, y * 200 // h, (x + y) * 100 // (h + w)], axis=-1).astype(np.int16)
    px += rng.integers(-20, 20, size=px.shape, dtype=np.int16)
    buf = io.BytesIO()
    Image.fromarray(np.clip(px, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


RECORDS = [{"image": _photo(200 + 17 * i, 300 - 11 * i, i), "key": f"s{i}"} for i in range(6)]


def _pixels(chain_end: dataio.Slot | None = None) -> list[np.ndarray]:
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize_short(96), dataio.batch(4))
    return [row for b in pipe.bind(RECORDS).run("numpy") for row in b["image"]]


def _encoded(fmt: str, **kw: int) -> list[bytes]:
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize_short(96).encode_image(fmt, **kw), dataio.batch(4))
    return [bytes(row) for b in pipe.bind(RECORDS).run("numpy") for row in b["image"]]


@pytest.mark.parametrize("fmt,pil", [("png", "PNG"), ("webp", "WEBP")])
def test_png_and_webp_hold_the_pipelines_pixels_exactly(fmt: str, pil: str) -> None:
    pixels = _pixels()
    files = _encoded(fmt)
    assert len(files) == len(pixels) == len(RECORDS)
    for px, data in zip(pixels, files):
        im = Image.open(io.BytesIO(data))
        assert im.format == pil
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), px)


def test_jpeg_is_a_jpeg_of_the_pixels_and_quality_trades_size() -> None:
    pixels = _pixels()
    hi, lo = _encoded("jpeg", quality=95), _encoded("jpeg", quality=30)
    for px, a, b in zip(pixels, hi, lo):
        im = Image.open(io.BytesIO(a))
        assert im.format == "JPEG" and im.size == (px.shape[1], px.shape[0])
        err = np.abs(np.asarray(im.convert("RGB")).astype(np.int16) - px).mean()
        assert err < 4, err
        assert len(b) < len(a)


def test_the_plan_keeps_encode_image_last_on_uint8_pixels() -> None:
    with pytest.raises(PlanError, match="last op"):
        dataio.pipeline(dataio.slot("image").decode_image().encode_image().resize(8, 8), dataio.batch(2)).bind(RECORDS)
    with pytest.raises(PlanError, match="uint8 HWC"):
        dataio.pipeline(dataio.slot("image").decode_image().normalize().encode_image(), dataio.batch(2)).bind(RECORDS)
    with pytest.raises(PlanError, match="quality"):
        dataio.transforms.encode_image("jpeg", quality=0)
    with pytest.raises(PlanError, match="format"):
        dataio.transforms.encode_image("gif")


def test_rgba_to_jpeg_fails_the_row_naming_the_op() -> None:
    pipe = dataio.pipeline(dataio.slot("image").decode_image("rgba").encode_image("jpeg"), dataio.batch(2))
    with pytest.raises(RowError) as e:
        list(pipe.bind(RECORDS[:2]).run("numpy"))
    assert (e.value.op, e.value.slot, e.value.key) == ("encode_image", "image", "s0")
    assert "cannot encode: JPEG has no alpha" in str(e.value)
    # RGBA into PNG keeps the alpha channel.
    png = dataio.pipeline(dataio.slot("image").decode_image("rgba").encode_image("png"), dataio.batch(2))
    (batch,) = png.bind(RECORDS[:2]).run("numpy")
    assert Image.open(io.BytesIO(bytes(batch["image"][0]))).mode == "RGBA"
