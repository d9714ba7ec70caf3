"""Pixel parity of every native op against PIL / torchvision references.

Tolerances, in uint8 levels:

* decode: **exact**. The engine decodes JPEG with libjpeg-turbo's ISLOW
  IDCT and fancy chroma upsampling, as Pillow does; PNG and lossless WebP are
  lossless. Region-of-interest decodes (crops) must match a full decode
  cropped, bit for bit.
* resampling (bilinear / bicubic / lanczos, antialiased): mean <= 0.5,
  max <= 2. Both sides run the same separable filters in fixed point; each of
  the two passes may round differently by one level.
* nearest / box: only the tie-breaking of source positions differs, so a
  small mean bound (and, for nearest, "every output value is a source value").
* DCT-domain downscaling (JPEG decoded at 1/2, 1/4, 1/8 before the resample)
  changes the filter, not the picture: mean <= 3 against a full decode.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from _imaging import (
    RESAMPLE_TOL,
    assert_close,
    cmyk_jpeg,
    decode_all,
    decode_one,
    diff,
    encode,
    exif_jpeg,
    jpeg,
    natural_image,
    npy_bytes,
    pil_decode,
    pil_image,
    pil_resize,
    png,
    rows,
    run_all,
    safetensors_bytes,
    tv_center_crop,
    tv_eval_transform,
    tv_resize_short_size,
    webp_lossless,
)
from PIL import Image, ImageOps

import dataio
from dataio import transforms as T

EXACT = dict(mean=0.0, max=0.0)
RESAMPLE = RESAMPLE_TOL
SIZES = [(48, 64), (97, 131), (240, 320), (333, 500)]

S = dataio.slot("image")


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    return [natural_image(h, w, seed=10 + i) for i, (h, w) in enumerate(SIZES)]


@pytest.fixture(scope="module")
def big() -> np.ndarray:
    return natural_image(1200, 1600, seed=77)


# ---------------------------------------------------------------------------
# decode_image


@pytest.mark.parametrize("subsampling", [0, 1, 2], ids=["444", "422", "420"])
@pytest.mark.parametrize("quality", [75, 95])
def test_baseline_jpeg_decodes_exactly_like_pil(images: list[np.ndarray], subsampling: int, quality: int) -> None:
    payloads = [jpeg(a, quality=quality, subsampling=subsampling) for a in images]
    for dct in (False, True):  # no resize: DCT scaling has nothing to do
        got = decode_all(S.decode_image(mode="rgb", dct_scaling=dct), payloads)
        for data, out in zip(payloads, got):
            assert out.dtype == np.uint8
            assert_close(out, pil_decode(data), **EXACT, what=f"jpeg q{quality} ss{subsampling} dct={dct}")


def test_progressive_jpeg(images: list[np.ndarray]) -> None:
    payloads = [jpeg(a, progressive=True) for a in images]
    assert all(pil_image(p).info.get("progressive") or pil_image(p).info.get("progression") for p in payloads)
    for data, out in zip(payloads, decode_all(S.decode_image(), payloads)):
        assert_close(out, pil_decode(data), **EXACT, what="progressive")


def test_grayscale_jpeg_in_every_mode() -> None:
    g = natural_image(101, 77, seed=3, channels=1)
    data = jpeg(g)
    assert pil_image(data).mode == "L"
    rgb, gray, rgba = (decode_one(S.decode_image(mode=m), data) for m in ("rgb", "gray", "rgba"))
    ref = pil_decode(data, "L")
    assert gray.shape == (101, 77, 1) and rgb.shape == (101, 77, 3) and rgba.shape == (101, 77, 4)
    assert_close(gray[..., 0], ref, **EXACT, what="L jpeg as gray")
    for ch in range(3):
        assert_close(rgb[..., ch], ref, **EXACT, what=f"L jpeg as rgb, channel {ch}")
        assert_close(rgba[..., ch], ref, **EXACT, what=f"L jpeg as rgba, channel {ch}")
    assert (rgba[..., 3] == 255).all()


def test_color_jpeg_as_gray_is_the_luma_plane(images: list[np.ndarray]) -> None:
    data = jpeg(images[2])
    out = decode_one(S.decode_image(mode="gray"), data)
    assert out.shape == images[2].shape[:2] + (1,)
    im = Image.open(io.BytesIO(data))
    im.draft("L", im.size)  # libjpeg's own grayscale output: the Y plane
    assert_close(out[..., 0], np.asarray(im), **EXACT, what="gray = Y")
    # and within a rounding step of converting the RGB decode
    assert_close(out[..., 0], pil_decode(data, "L"), mean=0.1, max=1, what="gray vs convert('L')")


def test_color_jpeg_as_rgba_has_opaque_alpha(images: list[np.ndarray]) -> None:
    data = jpeg(images[1])
    out = decode_one(S.decode_image(mode="rgba"), data)
    assert out.shape == images[1].shape[:2] + (4,)
    assert_close(out[..., :3], pil_decode(data), **EXACT, what="rgba colour")
    assert (out[..., 3] == 255).all()


def test_cmyk_jpeg(images: list[np.ndarray]) -> None:
    data = cmyk_jpeg(images[2])
    assert pil_image(data).mode == "CMYK"
    rgb = decode_one(S.decode_image(mode="rgb"), data)
    gray = decode_one(S.decode_image(mode="gray"), data)
    # Pillow's CMYK->RGB multiplies with a /255 rounding of its own: one level at most.
    assert_close(rgb, pil_decode(data, "RGB"), mean=0.05, max=1, what="cmyk -> rgb")
    assert_close(gray[..., 0], pil_decode(data, "L"), mean=0.1, max=1, what="cmyk -> gray")
    # and it still looks like the picture that was encoded
    assert diff(rgb, images[2])[0] < 4


@pytest.mark.parametrize("fmt", ["png", "webp"])
def test_lossless_formats_rgb_gray_rgba(images: list[np.ndarray], fmt: str) -> None:
    enc = png if fmt == "png" else webp_lossless
    for a in images[:3]:
        rgba_src = np.dstack([a, (np.arange(a.shape[1], dtype=np.uint16)[None, :].repeat(a.shape[0], 0) * 255 // max(a.shape[1] - 1, 1)).astype(np.uint8)])
        for src in (a, rgba_src):
            data = enc(src)
            rgb = decode_one(S.decode_image(mode="rgb"), data)
            gray = decode_one(S.decode_image(mode="gray"), data)
            rgba = decode_one(S.decode_image(mode="rgba"), data)
            assert_close(rgb, src[..., :3], **EXACT, what=f"{fmt} rgb")
            assert_close(rgb, pil_decode(data, "RGB"), **EXACT, what=f"{fmt} rgb vs PIL")
            assert_close(gray[..., 0], pil_decode(data, "L"), **EXACT, what=f"{fmt} gray vs PIL convert('L')")
            assert_close(rgba, pil_decode(data, "RGBA"), **EXACT, what=f"{fmt} rgba vs PIL")


def test_gray_and_palette_png() -> None:
    g = natural_image(50, 70, seed=4, channels=1)
    data = png(g)
    assert_close(decode_one(S.decode_image(mode="gray"), data)[..., 0], g, **EXACT, what="L png")
    assert_close(decode_one(S.decode_image(mode="rgb"), data), np.dstack([g] * 3), **EXACT, what="L png as rgb")
    pal = Image.fromarray(natural_image(50, 70, seed=5)).quantize(64)
    buf = io.BytesIO()
    pal.save(buf, "PNG")
    assert_close(decode_one(S.decode_image(mode="rgb"), buf.getvalue()), np.asarray(pal.convert("RGB")), **EXACT, what="palette png")


def test_lossy_webp(images: list[np.ndarray]) -> None:
    data = encode(images[2], "WEBP", quality=85)
    out = decode_one(S.decode_image(), data)
    # a different WebP decoder may round its YUV->RGB step differently
    assert_close(out, pil_decode(data), mean=1.0, max=6, what="lossy webp")


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied(images: list[np.ndarray], orientation: int) -> None:
    src = images[1]  # 97 x 131: not square, so transposes show
    data = exif_jpeg(src, orientation)
    assert pil_image(data).getexif().get(0x0112) == orientation
    ref = np.asarray(ImageOps.exif_transpose(pil_image(data)).convert("RGB"))
    out = decode_one(S.decode_image(), data)
    assert out.shape == ref.shape, f"orientation {orientation}: {out.shape} vs {ref.shape}"
    assert_close(out, ref, **EXACT, what=f"orientation {orientation}")
    # geometry runs on the upright image
    crop = decode_one(S.decode_image().center_crop(h=40, w=60), data)
    assert_close(crop, tv_center_crop(ref, 40, 60), **EXACT, what=f"orientation {orientation} + center_crop")
    small = decode_one(S.decode_image(dct_scaling=False).resize(h=50, w=30), data)
    assert_close(small, pil_resize(ref, 50, 30), **RESAMPLE, what=f"orientation {orientation} + resize")


# ---------------------------------------------------------------------------
# resize family


@pytest.mark.parametrize("size", [(24, 32), (100, 77), (230, 310), (400, 260), (700, 900)])
def test_resize_bilinear_antialias_matches_pil(images: list[np.ndarray], size: tuple[int, int]) -> None:
    h, w = size
    for a in images:
        out = decode_one(S.decode_image().resize(h=h, w=w), png(a))
        assert out.shape == (h, w, 3)
        assert_close(out, pil_resize(a, h, w, Image.BILINEAR), **RESAMPLE, what=f"png {a.shape} -> {size}")
    # JPEG without DCT scaling: PIL decode + resize is the reference
    data = jpeg(images[3])
    out = decode_one(S.decode_image(dct_scaling=False).resize(h=h, w=w), data)
    assert_close(out, pil_resize(pil_decode(data), h, w, Image.BILINEAR), **RESAMPLE, what=f"jpeg -> {size}")


@pytest.mark.parametrize("interp, pil_filter", [("bicubic", Image.BICUBIC), ("lanczos", Image.LANCZOS)])
def test_resize_other_smooth_filters_match_pil(images: list[np.ndarray], interp: str, pil_filter: int) -> None:
    a = images[3]
    for h, w in [(100, 150), (200, 321), (700, 900)]:
        out = decode_one(S.decode_image().resize(h=h, w=w, interpolation=interp), png(a))
        assert_close(out, pil_resize(a, h, w, pil_filter), **RESAMPLE, what=f"{interp} -> {(h, w)}")


def test_resize_area_and_nearest(images: list[np.ndarray]) -> None:
    a = images[3]
    for h, w in [(111, 166), (333, 250), (666, 1000)]:
        area = decode_one(S.decode_image().resize(h=h, w=w, interpolation="area"), png(a))
        assert_close(area, pil_resize(a, h, w, Image.BOX), mean=0.5, max=255, what=f"area -> {(h, w)}")
        near = decode_one(S.decode_image().resize(h=h, w=w, interpolation="nearest", antialias=False), png(a))
        assert diff(near, pil_resize(a, h, w, Image.NEAREST))[0] <= 1.0
        # nearest never invents a colour: every output pixel is some source pixel
        src_colours = {tuple(p) for p in a.reshape(-1, 3)}
        assert all(tuple(p) in src_colours for p in near.reshape(-1, 3)[:: max(1, near.size // 3000)])


def test_resize_without_antialias_matches_torch_interpolate(images: list[np.ndarray]) -> None:
    import torch
    import torch.nn.functional as F

    a = images[3]
    t = torch.from_numpy(a.copy()).permute(2, 0, 1)[None].float()
    for h, w in [(100, 150), (260, 390), (700, 900)]:
        out = decode_one(S.decode_image().resize(h=h, w=w, antialias=False), png(a))
        ref = F.interpolate(t, size=(h, w), mode="bilinear", align_corners=False, antialias=False)
        ref = ref[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8).numpy()
        assert_close(out, ref, mean=0.5, max=2, what=f"bilinear no-antialias -> {(h, w)}")


@pytest.mark.parametrize("shape", [(240, 320), (320, 240), (97, 131), (500, 200), (256, 256)])
def test_resize_short(shape: tuple[int, int]) -> None:
    a = natural_image(*shape, seed=sum(shape))
    for size in (64, 128, 300):
        out = decode_one(S.decode_image().resize_short(size), png(a))
        eh, ew = tv_resize_short_size(*shape, size)
        assert out.shape == (eh, ew, 3), f"{shape} short->{size}: {out.shape} vs torchvision {(eh, ew)}"
        assert min(out.shape[:2]) == size
        assert_close(out, pil_resize(a, eh, ew), **RESAMPLE, what=f"resize_short {shape} -> {size}")


def test_resize_short_with_max_size() -> None:
    a = natural_image(100, 400, seed=9)  # long side 4x the short side
    out = decode_one(S.decode_image().resize_short(64, max_size=200), png(a))
    # torchvision: short 64 would make the long side 256 > 200, so long=200, short=int(200*64/256)=50
    assert out.shape == (50, 200, 3)
    assert_close(out, pil_resize(a, 50, 200), **RESAMPLE, what="resize_short max_size")
    out = decode_one(S.decode_image().resize_short(64, max_size=300), png(a))
    assert out.shape == (64, 256, 3)


@pytest.mark.parametrize("shape", [(240, 320), (320, 241), (97, 131), (130, 130)])
def test_resize_long(shape: tuple[int, int]) -> None:
    a = natural_image(*shape, seed=3 + sum(shape))
    for size in (50, 200, 400):
        h, w = shape
        eh, ew = (size, size * w // h) if h >= w else (size * h // w, size)
        out = decode_one(S.decode_image().resize_long(size), png(a))
        assert out.shape == (eh, ew, 3), f"{shape} long->{size}"
        assert max(out.shape[:2]) == size
        assert_close(out, pil_resize(a, eh, ew), **RESAMPLE, what=f"resize_long {shape} -> {size}")


def test_resize_short_then_center_crop_is_one_fused_resample_with_torchvision_results(images: list[np.ndarray]) -> None:
    for a in images[1:]:
        out = decode_one(S.decode_image().resize_short(96).center_crop(h=80, w=88), png(a))
        eh, ew = tv_resize_short_size(*a.shape[:2], 96)
        ref = tv_center_crop(pil_resize(a, eh, ew), 80, 88)
        assert_close(out, ref, **RESAMPLE, what=f"resize_short+center_crop {a.shape}")


# ---------------------------------------------------------------------------
# crops


@pytest.mark.parametrize("crop", [(10, 10), (31, 47), (97, 131), (96, 130), (1, 1)])
def test_center_crop_inside_the_image_is_exact(images: list[np.ndarray], crop: tuple[int, int]) -> None:
    a = images[1]  # 97 x 131: odd margins exercise the rounding
    h, w = crop
    out = decode_one(S.decode_image().center_crop(h=h, w=w), png(a))
    assert_close(out, tv_center_crop(a, h, w), **EXACT, what=f"center_crop {crop}")


@pytest.mark.parametrize("crop", [(120, 140), (100, 131), (97, 200), (60, 150), (150, 60), (300, 301)])
def test_center_crop_larger_than_the_image_zero_pads_like_torchvision(images: list[np.ndarray], crop: tuple[int, int]) -> None:
    a = images[1]
    h, w = crop
    for data in (png(a), jpeg(a)):
        out = decode_one(S.decode_image().center_crop(h=h, w=w), data)
        ref = tv_center_crop(pil_decode(data), h, w)
        assert out.shape == (h, w, 3)
        assert_close(out, ref, **EXACT, what=f"padded center_crop {crop}")


def test_center_crop_of_a_large_jpeg_decodes_only_the_region_exactly(big: np.ndarray) -> None:
    data = jpeg(big, quality=90)
    full = pil_decode(data)
    for h, w in [(224, 224), (333, 517), (1199, 1599), (17, 9)]:
        out = decode_one(S.decode_image().center_crop(h=h, w=w), data)
        assert_close(out, tv_center_crop(full, h, w), **EXACT, what=f"jpeg roi center_crop {(h, w)}")


@pytest.mark.parametrize("box", [(0, 0, 10, 10), (7, 9, 123, 211), (8, 16, 64, 64), (1, 1, 1, 1), (200, 300, 97, 131)])
def test_crop_is_exact_for_png_and_region_decoded_jpeg(big: np.ndarray, box: tuple[int, int, int, int]) -> None:
    top, left, h, w = box
    data = jpeg(big, quality=90)
    ref = pil_decode(data)[top : top + h, left : left + w]
    assert_close(decode_one(S.decode_image().crop(top=top, left=left, h=h, w=w), data), ref, **EXACT, what=f"jpeg crop {box}")
    small = big[:400, :500]
    assert_close(decode_one(S.decode_image().crop(top=top, left=left, h=h, w=w), png(small)), small[top : top + h, left : left + w], **EXACT, what=f"png crop {box}")


@pytest.mark.parametrize("box", [(-3, -5, 20, 30), (40, 50, 30, 40), (-10, 60, 80, 10), (90, 125, 20, 20)])
def test_crop_outside_the_image_is_zero_padded(images: list[np.ndarray], box: tuple[int, int, int, int]) -> None:
    """Like torchvision.transforms.functional.crop: pixels outside the image are 0."""
    a = images[1]  # 97 x 131
    top, left, h, w = box
    out = decode_one(S.decode_image().crop(top=top, left=left, h=h, w=w), png(a))
    ref = np.zeros((h, w, 3), np.uint8)
    ys, xs = slice(max(top, 0), min(top + h, a.shape[0])), slice(max(left, 0), min(left + w, a.shape[1]))
    ref[ys.start - top : ys.stop - top, xs.start - left : xs.stop - left] = a[ys, xs]
    assert out.shape == (h, w, 3)
    assert_close(out, ref, **EXACT, what=f"crop {box}")


def test_crops_compose(images: list[np.ndarray]) -> None:
    a = images[3]
    out = decode_one(S.decode_image().crop(top=10, left=20, h=200, w=300).center_crop(h=100, w=101).crop(top=5, left=7, h=50, w=60), png(a))
    step1 = a[10:210, 20:320]
    step2 = tv_center_crop(step1, 100, 101)
    assert_close(out, step2[5:55, 7:67], **EXACT, what="crop o center_crop o crop")


# ---------------------------------------------------------------------------
# flips


def test_flips_with_probability_one_and_zero(images: list[np.ndarray]) -> None:
    a = images[2]
    data = png(a)
    cases = [
        (S.decode_image().hflip(p=1.0), a[:, ::-1]),
        (S.decode_image().vflip(p=1.0), a[::-1]),
        (S.decode_image().hflip(p=1.0).vflip(p=1.0), a[::-1, ::-1]),
        (S.decode_image().hflip(p=1.0).hflip(p=1.0), a),
        (S.decode_image().hflip(p=0.0), a),
        (S.decode_image().vflip(p=0.0), a),
    ]
    for chain, ref in cases:
        for seed in (None, 1, 2):
            out = decode_all(chain, [data] * 4, seed=seed)
            for o in out:
                assert_close(o, ref, **EXACT, what=f"{chain!r} seed={seed}")


def test_ops_after_a_flip_see_the_flipped_image(images: list[np.ndarray]) -> None:
    a = images[2]  # 240 x 320
    out = decode_one(S.decode_image().hflip(p=1.0).crop(top=10, left=0, h=50, w=40), png(a))
    assert_close(out, a[:, ::-1][10:60, 0:40], **EXACT, what="hflip then crop")
    out = decode_one(S.decode_image().vflip(p=1.0).crop(top=0, left=5, h=30, w=70), png(a))
    assert_close(out, a[::-1][0:30, 5:75], **EXACT, what="vflip then crop")
    out = decode_one(S.decode_image().crop(top=0, left=0, h=50, w=40).hflip(p=1.0), png(a))
    assert_close(out, a[0:50, 0:40][:, ::-1], **EXACT, what="crop then hflip")
    out = decode_one(S.decode_image().hflip(p=1.0).resize(h=60, w=80), png(a))
    assert_close(out, pil_resize(np.ascontiguousarray(a[:, ::-1]), 60, 80), **RESAMPLE, what="hflip then resize")


def test_flip_with_normalize_and_chw(images: list[np.ndarray]) -> None:
    a = images[0]
    out = decode_one(S.decode_image().hflip(p=1.0).normalize("symmetric"), png(a))
    ref = np.transpose(a[:, ::-1].astype(np.float32) / 255.0 * 2 - 1, (2, 0, 1))
    np.testing.assert_allclose(out, ref, atol=1e-6)


# ---------------------------------------------------------------------------
# normalize, to_chw, cast

MEAN_STD = {
    "imagenet": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    "clip": ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]),
    "symmetric": ([0.5] * 3, [0.5] * 3),
    "unit": ([0.0] * 3, [1.0] * 3),
}


@pytest.mark.parametrize("name", list(MEAN_STD))
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_normalize(images: list[np.ndarray], name: str, layout: str) -> None:
    a = images[1]
    out = decode_one(S.decode_image().normalize(name, layout=layout), png(a))
    mean, std = (np.array(v, np.float32) for v in MEAN_STD[name])
    ref = (a.astype(np.float32) / 255.0 - mean) / std
    if layout == "CHW":
        ref = np.transpose(ref, (2, 0, 1))
    assert out.dtype == np.float32 and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_normalize_with_explicit_mean_std_and_gray() -> None:
    a = natural_image(30, 40, seed=2)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 0.125)
    out = decode_one(S.decode_image().normalize((mean, std)), png(a))
    ref = np.transpose((a / 255.0 - np.array(mean)) / np.array(std), (2, 0, 1))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    g = natural_image(30, 40, seed=2, channels=1)
    out = decode_one(S.decode_image(mode="gray").normalize(([0.5], [0.25])), png(g))
    assert out.shape == (1, 30, 40)
    np.testing.assert_allclose(out[0], (g / 255.0 - 0.5) / 0.25, rtol=1e-5, atol=1e-5)


def test_the_imagenet_chain_against_torchvision(images: list[np.ndarray]) -> None:
    mean, std = MEAN_STD["imagenet"]
    for a in images:
        out = decode_one(S.decode_image().resize_short(64).center_crop(h=56, w=56).normalize("imagenet"), png(a))
        ref = tv_eval_transform(a, 64, 56, mean, std)
        assert out.shape == ref.shape == (3, 56, 56)
        # back to uint8 levels: one level is 1/255/std after normalization
        err = np.abs(out - ref) * np.asarray(std, np.float32)[:, None, None] * 255
        assert err.mean() <= RESAMPLE["mean"] and err.max() <= RESAMPLE["max"] + 0.01, (err.mean(), err.max())


def test_to_chw_keeps_uint8(images: list[np.ndarray]) -> None:
    a = images[0]
    out = decode_one(S.decode_image().to_chw(), png(a))
    assert out.dtype == np.uint8 and out.shape == (3,) + a.shape[:2]
    np.testing.assert_array_equal(out, np.transpose(a, (2, 0, 1)))
    out = decode_one(S.decode_image().resize(h=20, w=30).to_chw(), png(a))
    np.testing.assert_array_equal(out, np.transpose(decode_one(S.decode_image().resize(h=20, w=30), png(a)), (2, 0, 1)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int32", "int64", "float16", "uint8"])
def test_cast_pixels(images: list[np.ndarray], dtype: str) -> None:
    a = images[0]
    out = decode_one(S.decode_image().cast(dtype), png(a))
    assert out.dtype == np.dtype(dtype) and out.shape == a.shape
    np.testing.assert_array_equal(out, a.astype(dtype))
    chw = decode_one(S.decode_image().to_chw().cast(dtype), png(a))
    np.testing.assert_array_equal(chw, np.transpose(a, (2, 0, 1)).astype(dtype))


def test_cast_after_normalize(images: list[np.ndarray]) -> None:
    a = images[0]
    out = decode_one(S.decode_image().normalize("imagenet").cast("float16"), png(a))
    ref = decode_one(S.decode_image().normalize("imagenet"), png(a))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, ref.astype(np.float16))


def test_cast_to_bfloat16_reaches_torch(images: list[np.ndarray]) -> None:
    import torch

    a = images[0]
    pipe = dataio.pipeline(S.decode_image().normalize("symmetric").cast("bfloat16"), dataio.batch(2))
    (b,) = run_all(pipe, [{"image": png(a)}, {"image": png(a)}], "torch")
    t = b["image"]
    assert t.dtype == torch.bfloat16 and tuple(t.shape) == (2, 3) + a.shape[:2]
    ref = torch.from_numpy(np.transpose(a.astype(np.float32) / 255 * 2 - 1, (2, 0, 1)).copy()).to(torch.bfloat16)
    assert torch.equal(t[0], ref) and torch.equal(t[1], ref)


# ---------------------------------------------------------------------------
# decode_bytes / decode_npy / decode_safetensors


def test_decode_bytes_on_bytes_and_paths(tmp_path: Path) -> None:
    payloads = [b"hello", b"", bytes(range(256)), b"\x00\xff" * 1000]
    f = tmp_path / "blob.bin"
    f.write_bytes(b"from a file \x00\x01")
    got = decode_all(dataio.slot("raw").decode_bytes(), [*payloads, str(f)])
    for p, g in zip([*payloads, f.read_bytes()], got):
        assert g.dtype == np.uint8 and g.shape == (len(p),)
        assert g.tobytes() == p
    # equal lengths stack into one (N, L) tensor
    pipe = dataio.pipeline(dataio.slot("raw").decode_bytes(), dataio.batch(3))
    (b,) = run_all(pipe, [{"raw": bytes([i]) * 4} for i in range(3)])
    assert isinstance(b["raw"], np.ndarray) and b["raw"].shape == (3, 4)
    np.testing.assert_array_equal(b["raw"], np.repeat(np.arange(3, dtype=np.uint8)[:, None], 4, 1))


def test_decode_bytes_on_numbers_and_bools() -> None:
    pipe = dataio.pipeline(
        dataio.slot("i", field="n").decode_bytes(),
        dataio.slot("f", field="x").decode_bytes(),
        dataio.slot("b", field="flag").decode_bytes(),
        dataio.slot("big", field="big").decode_bytes().cast("float32"),
        dataio.batch(4),
    )
    records = [{"n": i * 10 - 7, "x": i / 4, "flag": i % 2 == 0, "big": 2**40 + i} for i in range(4)]
    (b,) = run_all(pipe, records)
    assert b["i"].dtype == np.int64 and b["i"].tolist() == [r["n"] for r in records]
    assert b["f"].dtype == np.float64 and b["f"].tolist() == [r["x"] for r in records]
    assert b["b"].dtype == np.bool_ and b["b"].tolist() == [r["flag"] for r in records]
    assert b["big"].dtype == np.float32 and b["big"].tolist() == [float(np.float32(r["big"])) for r in records]
    (b,) = run_all(pipe, [{"n": np.int32(5), "x": np.float32(0.5), "flag": True, "big": 1}])
    assert b["i"].tolist() == [5] and b["f"].tolist() == [0.5]


NPY_ARRAYS = {
    "f32_2d": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "i64_3d": np.arange(-12, 12, dtype=np.int64).reshape(2, 3, 4),
    "u8_1d": np.arange(200, dtype=np.uint8),
    "bool": np.array([[True, False, True]]),
    "f16": np.linspace(-2, 2, 9, dtype=np.float16),
    "i8": np.array([-128, 0, 127], dtype=np.int8),
    "u16": np.array([0, 1, 65535], dtype=np.uint16),
    "f64_scalar": np.array(3.25),
    "fortran_2d": np.asfortranarray(np.arange(15, dtype=np.int32).reshape(3, 5)),
    "fortran_3d": np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 1.5),
    "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
    "big_endian_f8": np.array([1.5, -2.25], dtype=">f8"),
    "empty": np.zeros((0, 3), np.float32),
}


def test_decode_npy_from_bytes_and_files(tmp_path: Path) -> None:
    names = list(NPY_ARRAYS)
    payloads: list[object] = []
    for i, name in enumerate(names):
        data = npy_bytes(NPY_ARRAYS[name])
        if i % 2:
            p = tmp_path / f"{name}.npy"
            p.write_bytes(data)
            payloads.append(str(p))
        else:
            payloads.append(data)
    assert np.load(io.BytesIO(npy_bytes(NPY_ARRAYS["fortran_2d"]))).flags.f_contiguous
    got = decode_all(dataio.slot("arr").decode_npy(), payloads)
    for name, g in zip(names, got):
        ref = NPY_ARRAYS[name]
        assert g.shape == ref.shape, name
        assert g.dtype == ref.dtype.newbyteorder("="), name
        np.testing.assert_array_equal(g, ref, err_msg=name)


def test_decode_npy_then_cast() -> None:
    a = np.arange(10, dtype=np.int16).reshape(2, 5) - 3
    got = decode_one(dataio.slot("arr").decode_npy().cast("float32"), npy_bytes(a))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a.astype(np.float32))
    f = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    got = decode_one(dataio.slot("arr").decode_npy().cast("int8"), npy_bytes(f))
    np.testing.assert_array_equal(got, f.astype(np.int8))


def _st_writer():  # the safetensors package when installed, else the hand-built format
    try:
        from safetensors.numpy import save

        return lambda tensors: save(tensors)
    except ImportError:
        return safetensors_bytes


def test_decode_safetensors_with_a_fixed_key_and_a_column_key(tmp_path: Path) -> None:
    tensors = {
        "weight": np.arange(24, dtype=np.float32).reshape(4, 6) / 3,
        "bias": np.arange(6, dtype=np.int64) - 2,
        "mask": np.array([True, False, True, True]),
        "half": np.linspace(0, 1, 5).astype(np.float16),
        "scalar": np.array(7.5, dtype=np.float64),
    }
    files = []
    for i, write in enumerate([safetensors_bytes, _st_writer()]):
        p = tmp_path / f"t{i}.safetensors"
        p.write_bytes(write(tensors))
        files.append(p)
    # a fixed key
    got = decode_all(dataio.slot("w", field="path").decode_safetensors("weight"), [str(f) for f in files] + [files[0].read_bytes()])
    for g in got:
        assert g.dtype == np.float32
        np.testing.assert_array_equal(g, tensors["weight"])
    # a per-record key
    names = list(tensors)
    records = [{"key": f"r{i}", "path": str(files[i % 2]), "tensor_key": names[i % len(names)]} for i in range(10)]
    pipe = dataio.pipeline(dataio.slot("t", field="path").decode_safetensors(tensor_key=dataio.col("tensor_key")), dataio.batch(10))
    got_rows = rows(run_all(pipe, records), "t")
    for r in records:
        ref = tensors[r["tensor_key"]]
        g = got_rows[r["key"]]
        assert g.dtype == ref.dtype and g.shape == ref.shape, r
        np.testing.assert_array_equal(g, ref)


def test_decode_safetensors_bf16_reaches_torch(tmp_path: Path) -> None:
    import torch

    ref = torch.linspace(-3, 3, 12, dtype=torch.bfloat16).reshape(3, 4)
    raw = ref.view(torch.int16).numpy().view(np.uint8).tobytes()
    header = b'{"x":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,24]}}'
    header += b" " * (-len(header) % 8)
    data = len(header).to_bytes(8, "little") + header + raw
    pipe = dataio.pipeline(dataio.slot("x").decode_safetensors("x"), dataio.batch(2))
    (b,) = run_all(pipe, [{"x": data}, {"x": data}], "torch")
    assert b["x"].dtype == torch.bfloat16 and tuple(b["x"].shape) == (2, 3, 4)
    assert torch.equal(b["x"][1], ref)


# ---------------------------------------------------------------------------
# DCT-domain scaling


@pytest.mark.parametrize("chain", [
    lambda s: s.resize(h=600, w=800),  # 2x
    lambda s: s.resize(h=300, w=400),  # 4x
    lambda s: s.resize(h=150, w=200),  # 8x
    lambda s: s.resize_short(256).center_crop(h=224, w=224),  # 4.7x, the classic eval chain
    lambda s: s.resize_long(100),  # 16x
], ids=["2x", "4x", "8x", "imagenet", "16x"])
def test_dct_scaling_stays_close_to_a_full_decode(big: np.ndarray, chain) -> None:
    data = jpeg(big, quality=90)
    fast = decode_one(chain(S.decode_image(dct_scaling=True)), data)
    full = decode_one(chain(S.decode_image(dct_scaling=False)), data)
    assert fast.shape == full.shape
    m, _ = diff(fast, full)
    assert m < 3.0, f"dct_scaling changes the picture: mean abs diff {m:.2f} levels"
    # and the full-decode path is the PIL reference
    ref_small = decode_one(chain(dataio.slot("image").decode_image()), png(pil_decode(data)))
    assert_close(full, ref_small, **RESAMPLE, what="dct_scaling=False vs the same chain on a lossless copy")


def test_dct_scaling_does_something_for_big_shrinks(big: np.ndarray) -> None:
    """DCT scaling is an actual different path (else the test above proves nothing)."""
    data = jpeg(big, quality=90)
    fast = decode_one(S.decode_image(dct_scaling=True).resize(h=150, w=200), data)
    full = decode_one(S.decode_image(dct_scaling=False).resize(h=150, w=200), data)
    assert not np.array_equal(fast, full)


def test_transforms_ops_in_branches_run_the_same_kernels(images: list[np.ndarray]) -> None:
    a = images[3]  # 333 x 500
    out = decode_one(S.decode_image().when(dataio.cond.shape(axis=0).gt(10)).then(T.resize(h=60, w=80)).otherwise(T.resize(h=60, w=80)), png(a))
    np.testing.assert_array_equal(out, decode_one(S.decode_image().resize(h=60, w=80), png(a)))


# ---------------------------------------------------------------------------
# more formats, tiny images, compositions


@pytest.mark.parametrize("fmt", ["PNG", "WEBP", "TIFF"])
@pytest.mark.parametrize("orientation", [2, 3, 5, 6, 8])
def test_exif_orientation_of_other_formats(images: list[np.ndarray], fmt: str, orientation: int) -> None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    kw = {"lossless": True} if fmt == "WEBP" else {}
    data = encode(images[0], fmt, exif=exif.tobytes(), **kw)
    ref = np.asarray(ImageOps.exif_transpose(pil_image(data)).convert("RGB"))
    out = decode_one(S.decode_image(), data)
    assert out.shape == ref.shape, f"{fmt} orientation {orientation}: {out.shape} vs {ref.shape}"
    assert_close(out, ref, **EXACT, what=f"{fmt} orientation {orientation}")


@pytest.mark.parametrize("fmt", ["BMP", "TIFF", "GIF"])
def test_bmp_tiff_gif(images: list[np.ndarray], fmt: str) -> None:
    data = encode(images[1], fmt)
    for mode, pil_mode in [("rgb", "RGB"), ("rgba", "RGBA"), ("gray", "L")]:
        out = decode_one(S.decode_image(mode=mode), data)
        ref = pil_decode(data, pil_mode)
        assert_close(out.reshape(ref.shape), ref, **EXACT, what=f"{fmt} as {mode}")


def test_gray_alpha_and_16_bit_png() -> None:
    la = np.dstack([natural_image(20, 30, seed=3, channels=1), np.linspace(0, 255, 30, dtype=np.uint8)[None, :].repeat(20, 0)])
    data = png(la)
    assert pil_image(data).mode == "LA"
    for mode, pil_mode in [("rgb", "RGB"), ("rgba", "RGBA"), ("gray", "L")]:
        out = decode_one(S.decode_image(mode=mode), data)
        ref = pil_decode(data, pil_mode)
        assert_close(out.reshape(ref.shape), ref, **EXACT, what=f"LA png as {mode}")
    import struct
    import zlib

    a16 = natural_image(20, 30, seed=2).astype(np.uint16) * 257 + np.random.default_rng(0).integers(0, 257, (20, 30, 3)).astype(np.uint16)
    raw = b"".join(b"\x00" + a16[y].astype(">u2").tobytes() for y in range(20))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 30, 20, 16, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    out = decode_one(S.decode_image(), data)
    # 16 -> 8 bits: Pillow keeps the high byte, a rounding converter may land one above
    assert_close(out, (a16 >> 8).astype(np.uint8), mean=1.0, max=1, what="16-bit png")


def test_tiny_and_degenerate_images() -> None:
    one = png(np.array([[[10, 20, 30]]], np.uint8))
    up = decode_one(S.decode_image().resize(h=3, w=4), one)
    assert up.shape == (3, 4, 3) and (up == [10, 20, 30]).all()
    pad = decode_one(S.decode_image().center_crop(h=3, w=3), one)
    ref = np.zeros((3, 3, 3), np.uint8)
    ref[1, 1] = [10, 20, 30]
    np.testing.assert_array_equal(pad, ref)
    assert decode_one(S.decode_image().resize_short(5), one).shape == (5, 5, 3)
    line = natural_image(1, 50, seed=4)
    assert decode_one(S.decode_image().resize_short(8), png(line)).shape == (8, 400, 3)
    assert decode_one(S.decode_image().resize_long(8), png(line)).shape == (1, 8, 3)
    j = jpeg(natural_image(300, 300, seed=5))
    dot = decode_one(S.decode_image(dct_scaling=False).resize(h=1, w=1), j)
    assert_close(dot, pil_resize(pil_decode(j), 1, 1), mean=1, max=1, what="resize to 1x1")


def interior(a: np.ndarray, margin: int) -> np.ndarray:
    return a[margin:-margin, margin:-margin]


def test_crop_then_resize_matches_the_sequential_result_inside(big: np.ndarray) -> None:
    """crop -> resize runs as one resample of the crop window. Away from the
    window's edges that is exactly "crop, then resize"; at the edges the
    resampling filter may also see the pixels just outside the window
    (like PIL's resize(box=...)), so the edge rows are compared loosely."""
    data = jpeg(big, quality=90)
    full = pil_decode(data)
    out = decode_one(S.decode_image(dct_scaling=False).crop(top=100, left=200, h=400, w=300).resize(h=50, w=40), data)
    ref = pil_resize(np.ascontiguousarray(full[100:500, 200:500]), 50, 40)
    assert_close(interior(out, 2), interior(ref, 2), **RESAMPLE, what="crop -> resize, interior")
    boxed = np.asarray(Image.fromarray(full).resize((40, 50), Image.BILINEAR, box=(200, 100, 500, 500)))
    assert_close(out, boxed, **RESAMPLE, what="crop -> resize vs PIL resize(box=crop)")


def test_padded_center_crop_then_resize_matches_inside(big: np.ndarray) -> None:
    """center_crop larger than the image, then resize: the picture part is
    resampled from the source alone (the zero margin is not blended in), so
    only rows and columns away from the picture's border are compared."""
    src = big[:400, :400]
    out = decode_one(S.decode_image().center_crop(h=500, w=450).resize(h=100, w=90), png(src))
    ref = pil_resize(tv_center_crop(src, 500, 450), 100, 90)
    # margin: 50 rows / 25 columns of zeros each side = 10 rows / 5 columns after the 5x shrink
    np.testing.assert_array_equal(out[:9], 0)
    np.testing.assert_array_equal(out[:, :4], 0)
    assert_close(out[12:-12, 7:-7], ref[12:-12, 7:-7], **RESAMPLE, what="padded crop -> resize, picture interior")


@pytest.mark.parametrize("crop", [(40, 60), (41, 61), (96, 130), (120, 140), (97, 200)])
def test_center_crop_after_a_flip_crops_the_flipped_image(images: list[np.ndarray], crop: tuple[int, int]) -> None:
    a = images[1]  # 97 x 131: odd margins, where "round half to even" picks a side
    h, w = crop
    out = decode_one(S.decode_image().hflip(p=1.0).center_crop(h=h, w=w), png(a))
    assert_close(out, tv_center_crop(np.ascontiguousarray(a[:, ::-1]), h, w), **EXACT, what=f"hflip -> center_crop {crop}")
    out = decode_one(S.decode_image().vflip(p=1.0).center_crop(h=h, w=w), png(a))
    assert_close(out, tv_center_crop(np.ascontiguousarray(a[::-1]), h, w), **EXACT, what=f"vflip -> center_crop {crop}")


@pytest.mark.parametrize("orientation", [2, 5, 6, 7])
def test_flips_and_crops_run_on_the_upright_image(images: list[np.ndarray], orientation: int) -> None:
    data = exif_jpeg(images[1], orientation)
    upright = np.asarray(ImageOps.exif_transpose(pil_image(data)).convert("RGB"))
    out = decode_one(S.decode_image().hflip(p=1.0).crop(top=3, left=5, h=30, w=20), data)
    assert_close(out, np.ascontiguousarray(upright[:, ::-1])[3:33, 5:25], **EXACT, what=f"orientation {orientation} + hflip + crop")


def test_dct_scaling_with_flips_and_region_decodes(big: np.ndarray) -> None:
    data = jpeg(big, quality=90)
    lossless = png(pil_decode(data))
    for chain in (
        lambda s: s.hflip(p=1.0).resize_short(256).center_crop(h=224, w=224),
        lambda s: s.vflip(p=1.0).crop(top=100, left=300, h=500, w=600).resize(h=100, w=120),
    ):
        fast = decode_one(chain(S.decode_image()), data)
        full = decode_one(chain(S.decode_image(dct_scaling=False)), data)
        assert diff(fast, full)[0] < 3.0
        # the same window of the same pixels: at most a float rounding step apart
        assert_close(full, decode_one(chain(S.decode_image()), lossless), mean=0.01, max=1, what="region decode + flips vs the same chain on a lossless copy")
