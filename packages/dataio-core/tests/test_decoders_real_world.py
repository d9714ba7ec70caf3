"""Decoders on real-world files: no panic crosses the API, the EXIF
orientation means the same in every format, and alpha and 16-bit samples
follow one documented rule (docs/formats.md, "Images")."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from _imaging import natural_image
from PIL import Image, ImageOps

import dataio
from dataio.errors import DataioError, DecodeError, RowError


def _photo(h: int = 48, w: int = 64, channels: int = 3, seed: int = 3) -> np.ndarray:
    return natural_image(h, w, seed, channels=channels)


# -- 1. no panic past the API -------------------------------------------------

TILED_PLANAR = [
    ("u8-raw", np.uint8, 3, None),
    ("u8-lzw", np.uint8, 3, "lzw"),
    ("u16-rgb", np.uint16, 3, None),
    ("u16-rgba", np.uint16, 4, None),
]


def _planar_tiff(path: Path, dtype: type, channels: int, compression: str | None, tiled: bool = True) -> np.ndarray:
    rng = np.random.default_rng(7)
    hi = 255 if dtype == np.uint8 else 65535
    arr = rng.integers(0, hi, (channels, 40, 48), dtype=dtype)
    kw = {"tile": (16, 16)} if tiled else {"rowsperstrip": 8}
    tifffile.imwrite(path, arr, planarconfig="separate", photometric="rgb", compression=compression, extrasamples=["unassalpha"] if channels == 4 else None, **kw)
    return arr


@pytest.mark.parametrize("name, dtype, channels, compression", TILED_PLANAR, ids=[t[0] for t in TILED_PLANAR])
def test_tiled_planar_tiffs_are_refused_by_name_not_with_a_panic(tmp_path: Path, name: str, dtype: type, channels: int, compression: str | None) -> None:
    path = tmp_path / f"{name}.tif"
    _planar_tiff(path, dtype, channels, compression)
    with pytest.raises(DecodeError) as info:
        dataio.read_image(str(path), mode="rgb")
    msg = str(info.value)
    assert str(path) in msg and "unsupported TIFF layout" in msg and "PlanarConfiguration=2" in msg, msg
    assert isinstance(info.value, DataioError) and isinstance(info.value, Exception)


def test_no_panic_message_reaches_stderr_and_except_exception_works(tmp_path: Path) -> None:
    path = tmp_path / "tiled.tif"
    _planar_tiff(path, np.uint8, 3, "lzw")
    code = f"""
import dataio
try:
    dataio.read_image({str(path)!r})
except Exception as e:
    print("caught", type(e).__name__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "caught DecodeError"
    assert "panick" not in out.stderr and "RUST_BACKTRACE" not in out.stderr, out.stderr


def test_striped_planar_tiffs_decode_like_tifffile(tmp_path: Path) -> None:
    path = tmp_path / "strips.tif"
    arr = _planar_tiff(path, np.uint8, 3, None, tiled=False)
    got = dataio.read_image(str(path), mode="rgb")
    np.testing.assert_array_equal(got, np.moveaxis(arr, 0, -1))


def test_in_a_pipeline_the_row_error_names_record_slot_and_op(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tif"
    _planar_tiff(bad, np.uint16, 3, None)
    good = tmp_path / "good.png"
    Image.fromarray(_photo()).save(good)
    records = [{"key": "good", "img": str(good)}, {"key": "bad", "img": str(bad)}]
    pipe = dataio.pipeline(dataio.slot("picture", field="img").decode_image().resize(h=8, w=8), dataio.batch(2))
    with pytest.raises(RowError) as info:
        list(pipe.bind(records).run("numpy"))
    e = info.value
    assert (e.key, e.slot, e.op, e.uri) == ("bad", "picture", "decode_image", str(bad)), e
    assert "unsupported TIFF layout" in str(e)
    (b,) = list(pipe.bind(records).run("numpy", on_failure="skip"))
    assert b.keys == ["good"] and [x.key for x in b.errors] == ["bad"]


# -- 2. EXIF orientation, one rule for every format ---------------------------

ORIENTATIONS = range(1, 9)


def _exif(orientation: int) -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif


def _encode(arr: np.ndarray, fmt: str, orientation: int) -> bytes:
    out = io.BytesIO()
    kw = {"lossless": True} if fmt == "WEBP" else ({"quality": 95} if fmt == "JPEG" else {})
    Image.fromarray(arr).save(out, format=fmt, exif=_exif(orientation), **kw)
    return out.getvalue()


def _png_with_exif_after_idat(arr: np.ndarray, orientation: int) -> bytes:
    plain = io.BytesIO()
    Image.fromarray(arr).save(plain, format="PNG")
    data = plain.getvalue()
    exif = _exif(orientation).tobytes()
    exif = exif[6:] if exif.startswith(b"Exif\x00\x00") else exif
    chunk = struct.pack(">I", len(exif)) + b"eXIf" + exif + struct.pack(">I", zlib.crc32(b"eXIf" + exif) & 0xFFFFFFFF)
    iend = data.rindex(b"IEND") - 4
    return data[:iend] + chunk + data[iend:]


def _png_with_imagemagick_raw_exif(arr: np.ndarray, orientation: int, chunk: bytes) -> bytes:
    """A PNG carrying its EXIF as ImageMagick writes it: a ``Raw profile type
    exif`` text chunk (hex digits, 72 per line, after a name and a length)."""
    plain = io.BytesIO()
    Image.fromarray(arr).save(plain, format="PNG")
    data = plain.getvalue()
    exif = _exif(orientation).tobytes()
    exif = exif if exif.startswith(b"Exif\x00\x00") else b"Exif\x00\x00" + exif
    hexed = exif.hex()
    text = ("\nexif\n" + f"{len(exif):8d}\n" + "\n".join(hexed[i : i + 72] for i in range(0, len(hexed), 72)) + "\n").encode()
    key = b"Raw profile type exif\x00"
    body = {b"tEXt": key + text, b"zTXt": key + b"\x00" + zlib.compress(text), b"iTXt": key + b"\x01\x00\x00\x00" + zlib.compress(text)}[chunk]
    made = struct.pack(">I", len(body)) + chunk + body + struct.pack(">I", zlib.crc32(chunk + body) & 0xFFFFFFFF)
    idat = data.index(b"IDAT") - 4
    return data[:idat] + made + data[idat:]


@pytest.mark.parametrize("chunk", [b"zTXt", b"tEXt", b"iTXt"])
@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_png_orientation_from_imagemagick_raw_exif_profile_as_pil_reads_it(tmp_path: Path, orientation: int, chunk: bytes) -> None:
    stored = _photo(36, 52)
    data = _png_with_imagemagick_raw_exif(stored, orientation, chunk)
    path = tmp_path / "magick.png"
    path.write_bytes(data)
    got = dataio.read_image(str(path))
    if chunk != b"iTXt":  # PIL reads the profile from tEXt/zTXt only; the turn must be the one it makes
        pil = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
        np.testing.assert_array_equal(got, pil)
    np.testing.assert_array_equal(got, _upright(stored, orientation))
    np.testing.assert_array_equal(dataio.read_image(str(path), apply_exif_orientation=False), stored)


def _upright(stored: np.ndarray, orientation: int) -> np.ndarray:
    """What PIL's ImageOps.exif_transpose makes of ``stored`` tagged ``orientation``."""
    img = Image.fromarray(stored)
    img.info["exif"] = _exif(orientation).tobytes()
    img.getexif()[0x0112] = orientation
    return np.asarray(ImageOps.exif_transpose(img))


@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_every_format_turns_upright_by_the_same_exif_rule(tmp_path: Path, orientation: int) -> None:
    stored = _photo(36, 52)
    upright = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(_encode(stored, "PNG", orientation)))).convert("RGB"))
    np.testing.assert_array_equal(_upright(stored, orientation), upright)
    for fmt, data in [("JPEG", _encode(stored, "JPEG", orientation)), ("PNG", _encode(stored, "PNG", orientation)), ("WEBP", _encode(stored, "WEBP", orientation)), ("PNG-late", _png_with_exif_after_idat(stored, orientation))]:
        path = tmp_path / f"o{orientation}-{fmt}.img"
        path.write_bytes(data)
        got = dataio.read_image(str(path))
        as_stored = dataio.read_image(str(path), apply_exif_orientation=False)
        assert as_stored.shape == stored.shape, (fmt, "apply_exif_orientation=False keeps the stored pixels")
        if fmt != "JPEG":  # lossless: the stored pixels themselves
            np.testing.assert_array_equal(as_stored, stored, err_msg=fmt)
        # The same turn in every format: PIL's exif_transpose of the pixels as stored.
        np.testing.assert_array_equal(got, _upright(as_stored, orientation), err_msg=f"{fmt}, orientation {orientation}")


def test_pipelines_apply_the_same_rule_and_can_turn_it_off(tmp_path: Path) -> None:
    stored = _photo(30, 50)
    records = [{"key": fmt, "image": _encode(stored, fmt, 6)} for fmt in ("PNG", "WEBP")]
    upright = dataio.pipeline(dataio.slot("image").decode_image(), dataio.batch(2))
    (b,) = list(upright.bind(records).run("numpy"))
    assert b["image"].shape == (2, 50, 30, 3)
    raw = dataio.pipeline(dataio.slot("image").decode_image(apply_exif_orientation=False), dataio.batch(2))
    (b,) = list(raw.bind(records).run("numpy"))
    np.testing.assert_array_equal(b["image"][0], stored)
    np.testing.assert_array_equal(b["image"][1], stored)


# -- 3. transparency and 16-bit samples ----------------------------------------


def _pngs_with_alpha() -> dict[str, bytes]:
    rgba = _photo(32, 40, channels=4, seed=9)
    rgba[..., 3] = np.linspace(0, 255, 40, dtype=np.uint8)[None, :]
    rgba[:8, :8, 3] = 0  # fully transparent corner with a non-black color under it
    out = {}
    for name, img in [
        ("rgba", Image.fromarray(rgba, "RGBA")),
        ("la", Image.fromarray(rgba[..., [0, 3]], "LA")),
        ("palette-trns", Image.fromarray(rgba[..., :3]).quantize(16)),
    ]:
        buf = io.BytesIO()
        if name == "palette-trns":
            img.info["transparency"] = 3
            img.save(buf, format="PNG", transparency=3)
        else:
            img.save(buf, format="PNG")
        out[name] = buf.getvalue()
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="WEBP", lossless=True, exact=True)
    out["webp-rgba"] = buf.getvalue()
    return out


@pytest.mark.parametrize("name", ["rgba", "la", "palette-trns", "webp-rgba"])
def test_rgb_drops_alpha_as_pil_does_and_rgba_keeps_it(tmp_path: Path, name: str) -> None:
    data = _pngs_with_alpha()[name]
    path = tmp_path / f"{name}.img"
    path.write_bytes(data)
    pil = Image.open(io.BytesIO(data))
    np.testing.assert_array_equal(dataio.read_image(str(path), mode="rgb"), np.asarray(pil.convert("RGB")))
    np.testing.assert_array_equal(dataio.read_image(str(path), mode="rgba"), np.asarray(pil.convert("RGBA")))
    gray = dataio.read_image(str(path), mode="gray")[..., 0].astype(int)
    assert np.abs(gray - np.asarray(pil.convert("RGB").convert("L"), dtype=int)).max() <= 1


def test_sixteen_bit_samples_scale_to_eight_bits_by_v_over_257_rounded(tmp_path: Path) -> None:
    values = np.array([0, 1, 128, 129, 257, 385, 386, 32767, 32768, 65278, 65279, 65535], dtype=np.uint16)
    expected = np.round(values.astype(np.float64) * 255 / 65535).astype(np.uint8)
    rgb16 = np.stack([values, values[::-1], values], -1)[None, :, :]
    tif = tmp_path / "rgb16.tif"
    tifffile.imwrite(tif, rgb16, photometric="rgb")
    got = dataio.read_image(str(tif), mode="rgb")
    np.testing.assert_array_equal(got[0, :, 0], expected)
    np.testing.assert_array_equal(got[0, :, 1], expected[::-1])
    gray16 = tmp_path / "gray16.png"
    Image.fromarray(values[None, :].astype(np.uint16)).save(gray16)
    np.testing.assert_array_equal(dataio.read_image(str(gray16), mode="gray")[0, :, 0], expected)
