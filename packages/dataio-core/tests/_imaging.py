"""Shared helpers of the pipeline tests: natural-looking test images, the
encoders and crafted files the tests feed the engine, reference transforms
(PIL / torchvision) and small runners around ``pipe.bind(...).run(...)``.

Not a conftest: the pipeline tests import it as ``from _imaging import ...``
(pytest puts this directory on ``sys.path`` because it holds a conftest.py and
no ``__init__.py``).
"""

from __future__ import annotations

import gc
import io
import json
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

import dataio
from dataio import _native

# ---------------------------------------------------------------------------
# Test images


def natural_image(h: int, w: int, seed: int = 0, *, channels: int = 3) -> np.ndarray:
    """An image-like HWC uint8 array: a smooth two-colour gradient, an
    ellipse, a rectangle and a polygon, mild noise and a slight blur.

    Colours stay inside [30, 225] so no colour conversion clips (that keeps
    the gray and CMYK references honest), and the content has edges in both
    directions so flips, crops and resamples are visible."""
    r = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    c0, c1 = r.uniform(40, 215, 3), r.uniform(40, 215, 3)
    t = (xx / max(w, 1) * r.uniform(0.3, 1.0) + yy / max(h, 1) * r.uniform(0.3, 1.0)) / 2
    base = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]
    base += r.normal(0, 3, (h, w, 1))
    img = Image.fromarray(np.clip(base, 30, 225).astype(np.uint8))
    draw = ImageDraw.Draw(img)

    def colour() -> tuple[int, ...]:
        return tuple(int(v) for v in r.uniform(40, 215, 3))

    draw.ellipse([w * 0.1, h * 0.15, w * r.uniform(0.4, 0.6), h * r.uniform(0.5, 0.8)], fill=colour())
    draw.rectangle([w * r.uniform(0.5, 0.6), h * 0.05, w * 0.95, h * r.uniform(0.3, 0.45)], fill=colour())
    draw.polygon([(w * 0.2, h * 0.95), (w * 0.5, h * 0.55), (w * 0.85, h * 0.9)], fill=colour())
    img = img.filter(ImageFilter.GaussianBlur(0.7))
    out = np.asarray(img)
    if channels == 1:
        return np.asarray(img.convert("L"))
    if channels == 4:
        alpha = np.clip(60 + 180 * (xx / max(w, 1)), 0, 255).astype(np.uint8)
        return np.dstack([out, alpha])
    return out


def encode(arr: np.ndarray, fmt: str = "JPEG", **kw: Any) -> bytes:
    """Encodes an HWC (or HW) uint8 array with Pillow."""
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, fmt, **kw)
    return buf.getvalue()


def jpeg(arr: np.ndarray, quality: int = 92, **kw: Any) -> bytes:
    return encode(arr, "JPEG", quality=quality, **kw)


def png(arr: np.ndarray) -> bytes:
    return encode(arr, "PNG")


def webp_lossless(arr: np.ndarray) -> bytes:
    # exact=True: keep the colour of fully transparent pixels
    return encode(arr, "WEBP", lossless=True, exact=True)


def exif_jpeg(arr: np.ndarray, orientation: int, quality: int = 92) -> bytes:
    """A JPEG whose EXIF block carries an Orientation tag (0x0112)."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode(arr, "JPEG", quality=quality, exif=exif.tobytes())


def cmyk_jpeg(arr: np.ndarray, quality: int = 95) -> bytes:
    """A CMYK JPEG (Pillow writes Adobe-style inverted CMYK)."""
    buf = io.BytesIO()
    Image.fromarray(arr).convert("CMYK").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def pil_decode(data: bytes, mode: str = "RGB") -> np.ndarray:
    """Pillow's full decode, in `mode` (no EXIF transposition)."""
    return np.asarray(Image.open(io.BytesIO(data)).convert(mode))


def pil_image(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


#: Antialiased resampling vs PIL (same separable filters in fixed point; each
#: of the two passes may round differently by a level): mean/max abs error.
RESAMPLE_TOL = dict(mean=0.5, max=2.0)


def as_u8(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.int32)


def diff(a: Any, b: Any) -> tuple[float, int]:
    """(mean, max) absolute difference in uint8 levels; shapes must agree."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"shape {a.shape} != reference shape {b.shape}"
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(d.mean()), float(d.max())


def assert_close(got: Any, ref: Any, *, mean: float, max: float, what: str = "") -> None:  # noqa: A002 - the keyword callers pass
    m, mx = diff(got, ref)
    assert m <= mean and mx <= max, f"{what}: mean abs err {m:.3f} (limit {mean}), max abs err {mx} (limit {max})"


# ---------------------------------------------------------------------------
# Crafted payloads


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


_ST_DTYPES = {
    np.dtype("float32"): "F32",
    np.dtype("float64"): "F64",
    np.dtype("float16"): "F16",
    np.dtype("int64"): "I64",
    np.dtype("int32"): "I32",
    np.dtype("int16"): "I16",
    np.dtype("int8"): "I8",
    np.dtype("uint8"): "U8",
    np.dtype("bool"): "BOOL",
}


def safetensors_bytes(tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> bytes:
    """A safetensors file: 8-byte little-endian header length, JSON header
    (dtype, shape, data_offsets per tensor), then the raw little-endian data.
    Built by hand so the tests need no extra package."""
    header: dict[str, Any] = {}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        arr = np.array(arr, order="C", copy=True)  # (ascontiguousarray would make 0-d arrays 1-d)
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _ST_DTYPES[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def huge_png(width: int, height: int) -> bytes:
    """A well-formed PNG header claiming width x height RGB pixels, with one
    tiny IDAT: a decompression-bomb shaped file of a few dozen bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def huge_jpeg(width: int, height: int) -> bytes:
    """A real baseline JPEG whose SOF0 header was patched to claim
    width x height (JPEG allows up to 65535 per side)."""
    data = bytearray(jpeg(natural_image(16, 16, 3)))
    i = data.find(b"\xff\xc0")
    assert i > 0, "no SOF0 marker"
    # marker(2) length(2) precision(1) height(2) width(2)
    data[i + 5 : i + 7] = struct.pack(">H", height)
    data[i + 7 : i + 9] = struct.pack(">H", width)
    return bytes(data)


# ---------------------------------------------------------------------------
# References


def tv_center_crop(arr: np.ndarray, h: int, w: int) -> np.ndarray:
    """torchvision.transforms.functional.center_crop on an HWC array
    (zero padding when the crop is larger than the image)."""
    try:
        import torchvision.transforms.functional as F
    except ImportError:  # the formula of torchvision 0.24's center_crop
        ih, iw = arr.shape[:2]
        if h > ih or w > iw:
            pl, pt = (w - iw) // 2 if w > iw else 0, (h - ih) // 2 if h > ih else 0
            pr, pb = (w - iw + 1) // 2 if w > iw else 0, (h - ih + 1) // 2 if h > ih else 0
            pad = [(pt, pb), (pl, pr)] + [(0, 0)] * (arr.ndim - 2)
            arr = np.pad(arr, pad)
            ih, iw = arr.shape[:2]
            if (ih, iw) == (h, w):
                return arr
        top, left = int(round((ih - h) / 2.0)), int(round((iw - w) / 2.0))
        return arr[top : top + h, left : left + w]
    return np.asarray(F.center_crop(Image.fromarray(arr), [h, w]))


def tv_resize_short_size(ih: int, iw: int, size: int) -> tuple[int, int]:
    """(h, w) of torchvision's resize(img, size) for an int size."""
    short, long = (iw, ih) if iw <= ih else (ih, iw)
    new_short, new_long = size, int(size * long / short)
    return (new_long, new_short) if iw <= ih else (new_short, new_long)


def tv_eval_transform(arr: np.ndarray, resize: int, crop: int, mean: Sequence[float], std: Sequence[float]) -> np.ndarray:
    """torchvision's Compose([Resize(resize), CenterCrop(crop), ToTensor(),
    Normalize(mean, std)]) on an HWC uint8 array, as CHW float32. Without
    torchvision, the same steps through PIL and numpy."""
    try:
        import torchvision.transforms as TV
    except ImportError:
        h, w = tv_resize_short_size(arr.shape[0], arr.shape[1], resize)
        x = tv_center_crop(pil_resize(arr, h, w), crop, crop).astype(np.float32) / 255.0
        x = (x - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
        return np.ascontiguousarray(np.transpose(x, (2, 0, 1)))
    tf = TV.Compose([TV.Resize(resize), TV.CenterCrop(crop), TV.ToTensor(), TV.Normalize(list(mean), list(std))])
    return tf(Image.fromarray(arr)).numpy()


def pil_resize(arr: np.ndarray, h: int, w: int, resample: int = Image.BILINEAR) -> np.ndarray:
    return np.asarray(Image.fromarray(arr).resize((w, h), resample))


# ---------------------------------------------------------------------------
# Runners


def run_all(pipe: dataio.Pipeline, records: Iterable[Any], output: str = "numpy", **options: Any) -> list[dataio.Batch]:
    """Every batch of one epoch."""
    with pipe.bind(records).run(output, **options) as loader:
        return list(loader)


def rows(batches: Sequence[dataio.Batch], slot: str) -> dict[str, Any]:
    """key -> a copy of that row's sample of `slot`, over a list of batches
    (copies: the results do not keep engine buffers alive)."""
    out: dict[str, Any] = {}
    for b in batches:
        value = b[slot]
        assert len(value) == len(b.keys), f"slot {slot!r} has {len(value)} rows for {len(b.keys)} keys"
        for i, k in enumerate(b.keys):
            out[k] = None if value[i] is None else np.array(value[i], copy=True)
    return out


def decode_all(chain: Any, payloads: Sequence[Any], **options: Any) -> list[np.ndarray]:
    """Runs one slot chain over `payloads` (bytes or paths), one sample per
    record, and returns the samples in order as numpy arrays."""
    name = chain.name
    records = [{"key": f"r{i}", chain.field: p} for i, p in enumerate(payloads)]
    pipe = dataio.pipeline(chain, dataio.batch(max(1, len(records))))
    got = rows(run_all(pipe, records, "numpy", **options), name)
    return [got[f"r{i}"] for i in range(len(records))]


def decode_one(chain: Any, payload: Any, **options: Any) -> np.ndarray:
    return decode_all(chain, [payload], **options)[0]


def live_buffers() -> tuple[int, int]:
    """Engine buffers alive after a full garbage collection."""
    gc.collect()
    return _native.live_buffers()
