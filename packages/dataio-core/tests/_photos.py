"""Natural-content JPEGs of mixed sizes, made on the spot: the data of
``test_image_quality.py`` and the image workload of the benchmark harness
(``benchmarks/harness``, whose ``dataio_bench.datasets`` loads this file and
caches the images under ``~/.cache/dataio/``).

``build_images(n, root)`` cuts each file from one of scikit-image's bundled
sample photographs (astronaut, coffee, chelsea, rocket, hubble_deep_field,
retina, ...): a random crop (random aspect ratio and area), flipped or turned
at random, slightly re-exposed, rescaled so its short side lies in 256..800
and saved at a JPEG quality in 70..95. Image ``i`` depends only on the seed
and ``i``, so asking for more images later extends the folder, and a rerun
with the same arguments does nothing. ``describe(paths, root)`` sums them up
for reports.

Not a conftest: tests import it as ``from _photos import ...`` (pytest puts
this directory on ``sys.path``). Needs numpy, pillow and scikit-image.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dataio._progress import Progress

__all__ = ["build_images", "describe", "usable_cpus"]

VERSION = 1
SEED = 20240611
SHORT_SIDE = (256, 800)
QUALITY = (70, 95)

# Colour photographs bundled with scikit-image (no download needed), and a few
# greyscale natural textures that are tinted into colour. Weighted so the
# colour photographs dominate.
COLOR_SOURCES = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "hubble_deep_field",
    "retina",
    "immunohistochemistry",
    "stereo_motorcycle",
)
GRAY_SOURCES = ("camera", "brick", "grass", "gravel", "moon")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _load_sources() -> list[tuple[Any, bool]]:
    """The source photographs as (HxWx3 uint8 array, is_greyscale) pairs (those this skimage has)."""
    import numpy as np
    from skimage import data

    out = []
    for name in COLOR_SOURCES:
        try:
            img = getattr(data, name)()
        except (ImportError, OSError, ValueError, AttributeError):  # missing here, or needs a download
            continue
        if name == "stereo_motorcycle":
            out.append((np.ascontiguousarray(img[0][..., :3]), False))  # the left view
        else:
            out.append((np.ascontiguousarray(img[..., :3]), False))
    n_color = len(out)
    for name in GRAY_SOURCES:
        try:
            g = getattr(data, name)()
        except (ImportError, OSError, ValueError, AttributeError):
            continue
        out.append((np.repeat(g[..., None], 3, axis=2).astype(np.uint8), True))
    if n_color == 0:
        raise RuntimeError("scikit-image has none of the sample photographs; install scikit-image>=0.19")
    return out


_SOURCES: list[tuple[Any, bool]] | None = None


def _sources() -> list[tuple[Any, bool]]:
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = _load_sources()
    return _SOURCES


def _make_one(args: tuple[int, str]) -> tuple[int, int, int, int, int]:
    """Writes image ``i`` to ``path`` (atomically); returns (i, w, h, quality, bytes)."""
    import numpy as np
    from PIL import Image

    i, path = args
    rng = np.random.default_rng([SEED, i])
    srcs = _sources()
    # 85% colour photographs, 15% tinted greyscale textures.
    gray_idx = [k for k, (_, gray) in enumerate(srcs) if gray]
    color_idx = [k for k, (_, gray) in enumerate(srcs) if not gray]
    use_gray = bool(gray_idx) and rng.random() < 0.15
    src, _ = srcs[int(rng.choice(gray_idx if use_gray else color_idx))]
    H, W = src.shape[:2]

    # Random crop: aspect ratio w/h in [0.625, 1.6], 30..100% of the area.
    aspect = float(np.exp(rng.uniform(np.log(0.625), np.log(1.6))))
    area = rng.uniform(0.3, 1.0) * H * W
    ch = np.sqrt(area / aspect)
    cw = ch * aspect
    shrink = min(1.0, H / ch, W / cw)
    ch, cw = max(32, int(ch * shrink)), max(32, int(cw * shrink))
    y0 = int(rng.integers(0, H - ch + 1))
    x0 = int(rng.integers(0, W - cw + 1))
    crop = src[y0 : y0 + ch, x0 : x0 + cw].astype(np.float32)

    if use_gray:  # tint a greyscale texture
        tint = rng.uniform(0.55, 1.0, 3).astype(np.float32)
        crop = crop * tint[None, None, :]
    # Exposure / contrast jitter so repeated crops of one photo still differ.
    gain = rng.uniform(0.8, 1.2)
    bias = rng.uniform(-20, 20)
    crop = np.clip(crop * gain + bias, 0, 255).astype(np.uint8)
    img = Image.fromarray(crop)
    if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if rng.random() < 0.2:
        img = img.transpose(Image.Transpose.ROTATE_90)

    short = int(rng.integers(SHORT_SIDE[0], SHORT_SIDE[1] + 1))
    w, h = img.size
    if w <= h:
        nw, nh = short, max(short, round(h * short / w))
    else:
        nw, nh = max(short, round(w * short / h)), short
    img = img.resize((nw, nh), Image.Resampling.LANCZOS)
    quality = int(rng.integers(QUALITY[0], QUALITY[1] + 1))
    tmp = f"{path}.tmp{os.getpid()}"
    img.save(tmp, format="JPEG", quality=quality)
    os.replace(tmp, path)
    return i, nw, nh, quality, os.path.getsize(path)


def build_images(n: int, root: str | os.PathLike[str], workers: int | None = None, quiet: bool = False) -> list[str]:
    """Makes sure ``root`` holds images 0..n-1 and returns their paths."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    manifest_path = root / "manifest.json"
    manifest: dict = {"version": VERSION, "seed": SEED, "images": {}}
    if manifest_path.exists():
        try:
            loaded = json.loads(manifest_path.read_text())
            if loaded.get("version") == VERSION and loaded.get("seed") == SEED:
                manifest = loaded
        except (OSError, ValueError):
            pass
    paths = [str(root / f"{i:06d}.jpg") for i in range(n)]
    missing = [(i, p) for i, p in enumerate(paths) if str(i) not in manifest["images"] or not os.path.exists(p)]
    if missing:
        workers = workers or usable_cpus()
        if not quiet:
            print(f"[datasets] writing {len(missing)} JPEGs to {root} on {workers} processes", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        bar = Progress(len(missing), "[datasets] JPEGs", "img", enabled=None if not quiet else False)

        def record(res: tuple[int, int, int, int, int]) -> None:
            i, w, h, q, size = res
            manifest["images"][str(i)] = {"w": w, "h": h, "quality": q, "bytes": size}
            bar.update()

        if workers > 1 and len(missing) > 16:
            import multiprocessing as mp

            _sources()  # load once here; the forked workers inherit them
            with mp.get_context("fork").Pool(workers) as pool:
                for res in pool.imap_unordered(_make_one, missing, chunksize=8):
                    record(res)
        else:
            for item in missing:
                record(_make_one(item))
        bar.close()
        if not quiet:
            print(f"[datasets] {len(missing)} JPEGs in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        tmp = manifest_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest))
        os.replace(tmp, manifest_path)
    return paths


def describe(paths: list[str], root: str | os.PathLike[str]) -> dict:
    """Summary of the workload (sizes, qualities, bytes) for reports."""
    manifest = json.loads((Path(root) / "manifest.json").read_text())["images"]
    rows = [manifest[str(i)] for i in range(len(paths))]
    shorts = sorted(min(r["w"], r["h"]) for r in rows)
    mpix = sum(r["w"] * r["h"] for r in rows) / 1e6
    total = sum(r["bytes"] for r in rows)
    return {
        "images": len(rows),
        "root": str(root),
        "short_side_min": shorts[0],
        "short_side_median": shorts[len(shorts) // 2],
        "short_side_max": shorts[-1],
        "mean_megapixels": round(mpix / len(rows), 3),
        "total_megapixels": round(mpix, 1),
        "quality_range": [min(r["quality"] for r in rows), max(r["quality"] for r in rows)],
        "total_mb": round(total / 1e6, 1),
        "mean_kb": round(total / len(rows) / 1e3, 1),
    }
