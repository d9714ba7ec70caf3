"""Benchmark workloads: the data each workload of ``python -m dataio.bench`` reads.

* ``build_images(n, root)`` — natural-content JPEGs of mixed sizes, cut from
  scikit-image's bundled sample photographs (astronaut, coffee, chelsea,
  rocket, hubble_deep_field, retina, ...): each file is a random crop of one
  source (random aspect ratio and area), flipped or turned at random,
  slightly re-exposed, rescaled so its short side lies in 256..800 and saved
  at a JPEG quality in 70..95. Image ``i`` depends only on the seed and
  ``i``, so asking for more images later extends the cached folder, and a
  rerun with the same arguments does nothing.
* ``build_small_files(n, root)`` — ``n`` files of 1..8 KiB of random bytes
  (the bytes-passthrough workload).
* ``build_latents(n, root)`` — a latent cache: safetensors shards holding
  ``n`` float16 tensors of shape (4, 64, 64), plus the rows that point at
  them (the safetensors-latent workload).
* ``build_parquet(n, root)`` — one parquet file of ``n`` rows: ``key``
  (string), ``label`` (int64), ``score`` (float32) and ``tokens`` (128
  bytes) (the parquet-rows workload).

Everything is written once under ``~/.cache/dataio/`` (atomically) and
reused by later runs. ``benchmarks/datasets.py`` is a command-line front::

    python benchmarks/datasets.py --images 2000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .._progress import Progress

__all__ = ["DATA_ROOT", "DEFAULT_ROOT", "build_images", "build_latents", "build_parquet", "build_small_files", "describe", "main", "usable_cpus"]

VERSION = 1
SEED = 20240611
CACHE = Path(os.environ.get("DATAIO_CACHE") or Path(os.path.expanduser("~")) / ".cache" / "dataio")
DEFAULT_ROOT = CACHE / f"bench-images-v{VERSION}"
DATA_ROOT = CACHE / f"bench-data-v{VERSION}"

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


def build_images(n: int, root: str | os.PathLike[str] = DEFAULT_ROOT, workers: int | None = None, quiet: bool = False) -> list[str]:
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


def describe(paths: list[str], root: str | os.PathLike[str] = DEFAULT_ROOT) -> dict:
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



# ----------------------------------------------------------------------------
# The other workloads: small files, a safetensors latent cache, parquet rows.
# Each is one folder named after its parameters, with a ``done.json`` written
# last: a folder without it is rebuilt.
# ----------------------------------------------------------------------------


def _ready(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "done.json").read_text())
    except (OSError, ValueError):
        return None


def _finish(folder: Path, info: dict) -> dict:
    tmp = folder / "done.json.tmp"
    tmp.write_text(json.dumps(info))
    os.replace(tmp, folder / "done.json")
    return info


def build_small_files(n: int, root: str | os.PathLike[str] = DATA_ROOT, quiet: bool = False) -> dict:
    """``n`` files of 1..8 KiB (random bytes) in 100-file folders; returns ``{"paths": [...], "bytes": total}``."""
    import numpy as np

    folder = Path(root) / f"small-files-{n}"
    info = _ready(folder)
    if info is None:
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(SEED)
        sizes = rng.integers(1024, 8 * 1024 + 1, n)
        paths, total = [], 0
        with Progress(n, "[datasets] small files", "file", enabled=None if not quiet else False) as bar:
            for i, size in enumerate(sizes):
                sub = folder / f"{i // 100:04d}"
                sub.mkdir(exist_ok=True)
                p = sub / f"{i:06d}.bin"
                p.write_bytes(rng.integers(0, 256, int(size), dtype=np.uint8).tobytes())
                paths.append(str(p))
                total += int(size)
                bar.update()
        info = _finish(folder, {"paths": paths, "bytes": total})
    return info


def build_latents(n: int, root: str | os.PathLike[str] = DATA_ROOT, per_file: int = 128, shape: tuple[int, ...] = (4, 64, 64), quiet: bool = False) -> dict:
    """A latent cache of ``n`` float16 tensors in safetensors shards of ``per_file``;
    returns ``{"rows": [{"key", "cache_path", "tensor_key"}], "bytes": total}``."""
    import numpy as np

    from ..formats import write_safetensors

    folder = Path(root) / f"latents-{n}-{per_file}-{'x'.join(map(str, shape))}"
    info = _ready(folder)
    if info is None:
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(SEED + 1)
        rows, total = [], 0
        files = -(-n // per_file)
        with Progress(files, "[datasets] latent shards", "file", enabled=None if not quiet else False) as bar:
            for f in range(files):
                path = folder / f"cache-{f:04d}.safetensors"
                count = min(per_file, n - f * per_file)
                tensors = {f"latent_{j:04d}": rng.standard_normal(shape).astype(np.float16) for j in range(count)}
                write_safetensors(str(path), tensors)
                total += path.stat().st_size
                rows += [{"key": f"{f:04d}/{k}", "cache_path": str(path), "tensor_key": k} for k in tensors]
                bar.update()
        info = _finish(folder, {"rows": rows, "bytes": total, "shape": list(shape), "dtype": "float16"})
    return info


def build_parquet(n: int, root: str | os.PathLike[str] = DATA_ROOT, token_bytes: int = 128, quiet: bool = False) -> dict:
    """One parquet file of ``n`` rows (row groups of 16384); returns ``{"path": ..., "rows": n, "bytes": size}``."""
    folder = Path(root) / f"parquet-{n}-{token_bytes}"
    info = _ready(folder)
    if info is None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(SEED + 2)
        tokens = rng.integers(0, 256, (n, token_bytes), dtype=np.uint8)
        table = pa.table(
            {
                "key": [f"row{i:08d}" for i in range(n)],
                "label": rng.integers(0, 1000, n, dtype=np.int64),
                "score": rng.random(n, dtype=np.float32),
                "tokens": pa.array([t.tobytes() for t in tokens], type=pa.binary()),
            }
        )
        path = folder / "rows.parquet"
        tmp = folder / "rows.parquet.tmp"
        pq.write_table(table, tmp, row_group_size=16384)
        os.replace(tmp, path)
        info = _finish(folder, {"path": str(path), "rows": n, "bytes": path.stat().st_size})
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/datasets.py", description="Builds (or checks) the cached JPEG workload of the image benchmark.")
    ap.add_argument("--images", type=int, default=2000, help="number of JPEGs (default 2000)")
    ap.add_argument("--root", default=str(DEFAULT_ROOT), help=f"cache folder (default {DEFAULT_ROOT})")
    ap.add_argument("--workers", type=int, default=None, help="processes used to make them (default: usable CPUs)")
    args = ap.parse_args(argv)
    paths = build_images(args.images, args.root, args.workers)
    print(json.dumps(describe(paths, args.root), indent=2))
    return 0
