"""Benchmark workloads: the data each workload of ``python -m dataio_bench`` reads.

* ``build_images(n, root)`` — natural-content JPEGs of mixed sizes, cut from
  scikit-image's bundled sample photographs, made by the core tests' helper
  ``packages/dataio-core/tests/_photos.py`` (see there). Image ``i`` depends
  only on the seed and ``i``, so asking for more images later extends the
  cached folder, and a rerun with the same arguments does nothing.
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
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from dataio._progress import Progress

from .harness import usable_cpus

__all__ = ["DATA_ROOT", "DEFAULT_ROOT", "build_images", "build_latents", "build_parquet", "build_small_files", "describe", "main", "usable_cpus"]


def _load_photos() -> Any:
    """The JPEG maker of the core's tests (``packages/dataio-core/tests/_photos.py``:
    test_image_quality.py measures the pipeline on the same photographs). The
    harness is installed only editable, from a checkout (it is never
    published), so the file is found from here; it goes into ``sys.modules``
    so that forked workers can unpickle its functions."""
    path = Path(__file__).resolve().parents[4] / "packages" / "dataio-core" / "tests" / "_photos.py"
    spec = importlib.util.spec_from_file_location("dataio_bench._photos", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"the JPEG maker {path} is missing: install the harness editable from a checkout")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_photos = _load_photos()

VERSION = 1
SEED = 20240611
CACHE = Path(os.environ.get("DATAIO_CACHE") or Path(os.path.expanduser("~")) / ".cache" / "dataio")
DEFAULT_ROOT = CACHE / f"bench-images-v{_photos.VERSION}"
DATA_ROOT = CACHE / f"bench-data-v{VERSION}"


def build_images(n: int, root: str | os.PathLike[str] = DEFAULT_ROOT, workers: int | None = None, quiet: bool = False) -> list[str]:
    """Makes sure ``root`` holds images 0..n-1 and returns their paths."""
    return _photos.build_images(n, root, workers, quiet)


def describe(paths: list[str], root: str | os.PathLike[str] = DEFAULT_ROOT) -> dict:
    """Summary of the workload (sizes, qualities, bytes) for reports."""
    return _photos.describe(paths, root)


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

    from dataio import write_safetensors

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
