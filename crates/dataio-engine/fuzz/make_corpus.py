"""Writes the seed corpus of every fuzz target (small, valid or nearly valid
inputs that start the fuzzer deep inside each format).

Run with the dev environment's Python (it needs dataio, numpy, PIL):
    python crates/dataio-engine/fuzz/make_corpus.py
The files are committed; this script says how they were made and remakes
them byte for byte (fixed seeds).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import struct
import tarfile
import tempfile
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

import dataio

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
RNG = np.random.default_rng(1234)


def put(target: str, name: str, data: bytes) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def photo(h: int, w: int, c: int = 3) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 7 + y * 3) % 256, (y * 11) % 256, (x * y) % 256, (x + 128) % 256][:c], axis=-1)
    return (base + RNG.integers(0, 16, size=base.shape)).clip(0, 255).astype(np.uint8)


def exif(orientation: int) -> bytes:
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def encode(img: Image.Image, fmt: str, **kw: object) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **kw)
    return out.getvalue()


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def images() -> dict[str, bytes]:
    rgb = Image.fromarray(photo(12, 16))
    out = {
        "jpeg-baseline": encode(rgb, "JPEG", quality=80),
        "jpeg-progressive": encode(rgb, "JPEG", quality=70, progressive=True),
        "jpeg-gray": encode(rgb.convert("L"), "JPEG"),
        "jpeg-cmyk": encode(rgb.convert("CMYK"), "JPEG"),
        "jpeg-exif6": encode(rgb, "JPEG", exif=exif(6)),
        "jpeg-444": encode(Image.fromarray(photo(24, 40)), "JPEG", subsampling=0),
        "png-rgb": encode(rgb, "PNG"),
        "png-rgba": encode(Image.fromarray(photo(8, 8, 4), "RGBA"), "PNG"),
        "png-palette": encode(rgb.quantize(8), "PNG", transparency=2),
        "png-16bit": encode(Image.fromarray(photo(6, 6, 1)[..., 0].astype(np.uint16) * 257), "PNG"),
        "png-gray": encode(rgb.convert("L"), "PNG"),
        "png-exif": encode(rgb, "PNG", exif=exif(8)),
        "webp-lossy": encode(rgb, "WEBP", quality=50),
        "webp-lossless": encode(Image.fromarray(photo(8, 8, 4), "RGBA"), "WEBP", lossless=True, exif=exif(3)),
        "gif": encode(rgb.quantize(16), "GIF"),
        "gif-anim": encode(
            rgb.quantize(8), "GIF", save_all=True, append_images=[Image.fromarray(photo(12, 16)).quantize(8)], duration=10
        ),
        "bmp": encode(rgb, "BMP"),
        "bmp-rle": encode(rgb.quantize(16), "BMP"),
        "tiff": encode(rgb, "TIFF"),
        "tiff-lzw": encode(rgb, "TIFF", compression="tiff_lzw", exif=exif(6)),
        "tiff-gray16": encode(Image.fromarray(photo(6, 6, 1)[..., 0].astype(np.uint16) * 257), "TIFF"),
    }
    # ImageMagick's raw EXIF profile in a zTXt chunk.
    plain = out["png-rgb"]
    e = exif(6)
    text = b"\nexif\n" + f"{len(e):8d}\n".encode() + e.hex().encode() + b"\n"
    chunk = png_chunk(b"zTXt", b"Raw profile type exif\0\0" + zlib.compress(text))
    at = plain.index(b"IDAT") - 4
    out["png-raw-profile"] = plain[:at] + chunk + plain[at:]
    return out


def npy() -> None:
    cases = {
        "f4-2d": np.arange(12, dtype="<f4").reshape(3, 4),
        "u1-1d": np.arange(7, dtype=np.uint8),
        "i8-be": np.arange(6, dtype=">i8").reshape(2, 3),
        "f2-3d": np.ones((2, 2, 2), dtype=np.float16),
        "bool": np.array([True, False, True]),
        "fortran": np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    for name, arr in cases.items():
        for version in (1, 2, 3) if name == "f4-2d" else (None,):
            buf = io.BytesIO()
            if version is None:
                np.save(buf, arr)
            else:
                np.lib.format.write_array(buf, arr, version=(version, 0))
            put("npy", f"{name}-v{version or 1}", buf.getvalue())


def safetensors() -> None:
    def st(tensors: dict[str, tuple[str, list[int], bytes]], meta: dict[str, str] | None = None) -> bytes:
        header: dict[str, object] = {}
        data = b""
        for k, (dtype, shape, raw) in tensors.items():
            header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        if meta:
            header["__metadata__"] = meta
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        return struct.pack("<Q", len(h)) + h + data

    put("safetensors", "two", st({"w": ("F32", [2, 2], np.arange(4, dtype="<f4").tobytes()), "b": ("I64", [2], b"\1" * 16)}))
    put("safetensors", "meta", st({"x": ("BF16", [3], b"\0\x3f" * 3)}, {"format": "pt"}))
    put("safetensors", "scalar", st({"s": ("U8", [], b"\7")}))
    put("safetensors", "empty", st({"e": ("F16", [0, 4], b"")}))
    put("safetensors", "f8", st({"q": ("F8_E4M3", [2], b"\1\2"), "r": ("BOOL", [1], b"\1")}))


def tfrecords(tmp: Path) -> None:
    examples = [
        {"image": b"\xff\xd8\xff" + bytes(range(20)), "label": 3, "score": [0.5, 1.5], "name": "a"},
        {"ids": list(range(10)), "empty": []},
        {"neg": [-1, -(2**40)], "f": 2.0},
    ]
    path = tmp / "t.tfrecord"
    dataio.write_tfrecord(str(path), examples)
    data = path.read_bytes()
    for flag in (0, 1):
        put("tfrecord", f"examples-crc{flag}", bytes([flag]) + data)
    put("tfrecord", "empty", b"\1")
    gz = tmp / "t.tfrecord.gz"
    dataio.write_tfrecord(str(gz), examples, gzip_compress=True)
    put("gzip", "tfrecord", gz.read_bytes())


def tars() -> None:
    def tar(members: list[tuple[str, bytes]], fmt: int) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 0
                t.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    wds = [("s/000.jpg", b"J0"), ("s/000.cls", b"1"), ("s/001.jpg", b"J1"), ("s/001.cls", b"2"), ("s/001.seg.png", b"P")]
    put("tar_index", "ustar", tar(wds, tarfile.USTAR_FORMAT))
    put("tar_index", "gnu-longname", tar([("d/" + "x" * 120 + ".txt", b"long"), ("k.json", b"{}")], tarfile.GNU_FORMAT))
    put("tar_index", "pax", tar([("p/\u00e9t\u00e9.txt", b"pax"), ("p/2.bin", bytes(600))], tarfile.PAX_FORMAT))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        d = tarfile.TarInfo("dir")
        d.type = tarfile.DIRTYPE
        t.addfile(d)
        ln = tarfile.TarInfo("dir/link")
        ln.type = tarfile.SYMTYPE
        ln.linkname = "../etc/passwd"
        t.addfile(ln)
    put("tar_index", "dir-and-link", buf.getvalue())
    put("gzip", "tar", gzip.compress(tar(wds, tarfile.USTAR_FORMAT), mtime=0))
    put("gzip", "two-members", gzip.compress(b"a" * 100, mtime=0) + gzip.compress(b"b" * 10, mtime=0))
    put("gzip", "empty", gzip.compress(b"", mtime=0))


def plans() -> None:
    s = dataio.slot
    pipes = {
        "image": dataio.pipeline(
            s("image").decode_image().random_resized_crop(32, 32).hflip().normalize(), s("label").decode_bytes(), dataio.batch(4)
        ),
        "optional-npy": dataio.pipeline(s("x", optional=True).decode_npy().cast("float16"), dataio.batch(2, drop_last=True)),
        "col-params": dataio.pipeline(
            s("image").decode_image(mode="gray").resize(dataio.col("h"), dataio.col("w")).center_crop(8, 8), dataio.batch(3)
        ),
        "safetensors": dataio.pipeline(s("t").decode_safetensors(tensor_key=dataio.col("name")), dataio.batch(1)),
    }
    for name, p in pipes.items():
        put("plan", name, json.dumps(p.to_json()).encode())


def texts() -> None:
    """JSON Lines and CSV shards; a CSV seed's first byte picks the
    delimiter (low 2 bits: , ; tab |) and typed columns (bit 2)."""
    put("jsonl", "empty", b"")
    put("jsonl", "mixed.jsonl", '{"text": "a caption", "n": 1}\n\n{"text": "数据 😀", "meta": {"k": [1, 2.5, null, true]}}\n[1,2]\n"x"\n'.encode())
    put("csv", "empty", b"\0")
    put("csv", "typed", b"\x04id,label,score\n1,0,0.5\n2,1,\n3,x,1e3\n")
    put("csv", "quoted", b'\0path,caption\r\na.jpg,"a cat,\non a ""mat"""\r\n\r\nb.jpg\n')
    put("csv", "tsv", "\x02a\tb\n1\t数据\n\"x\t".encode())


def main() -> None:
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    npy()
    safetensors()
    with tempfile.TemporaryDirectory() as tmp:
        tfrecords(Path(tmp))
    tars()
    for name, data in images().items():
        put("image", name, bytes([len(name) % 4]) + data)
        put("image", name + "-crop", bytes([1 + 4 * len(name)]) + data)
        if name.startswith("jpeg"):
            for i, plan in enumerate([b"\0\x08\0\0", b"\x10\x02\x05\x07", b"\x21\x03\x0b\x31"]):
                put("jpeg", f"{name}-{i}", plan + data)
            put("jpeg_complete", name, data)
            put("jpeg_complete", name + "-cut", data[: len(data) * 4 // 5])
    plans()
    texts()
    put("shard_index_file", "index", json.dumps(
        {"format": "Tar", "identity": "size=512,etag=e", "payload_len": 512,
         "samples": {"Tar": [{"key": "a", "members": [["jpg", 0, 100]]}]}}).encode())
    put("shard_index_file", "count", b"1 size=512,etag=e")
    n = sum(1 for _ in CORPUS.rglob("*") if _.is_file())
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(f"{n} seed files, {size} bytes, in {CORPUS}")


if __name__ == "__main__":
    main()
