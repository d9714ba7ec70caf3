"""Format readers against their reference libraries, side by side in one run.

    python benchmarks/formats.py [--gb 2] [--records 200000] [--rows 5000000]

* safetensors: a sharded checkpoint of ``--gb`` GB read into torch with every
  byte touched — dataio.read_safetensors vs safetensors.torch.load_file per
  shard — warm (page cache) and cold (pages evicted with posix_fadvise
  DONTNEED before each run; dataio asks for readahead of every shard first);
  the yardstick row times the same touch over tensors already in RAM, so its
  ratio is the fraction of memory bandwidth a warm read reaches;
* TFRecord: iterate parsed Examples — dataio.iter_tfrecord vs the `tfrecord`
  package's reader;
* parquet: read two columns — dataio.read_parquet vs pyarrow.parquet.read_table.

Prints each pair's times and the ratio (reference time / dataio time;
above 1 means dataio is faster).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import dataio


def timed(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def evict(paths: list[str]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def touch(tensors: dict) -> int:
    # Every byte, at memory speed: an int64 reduction over each tensor's raw
    # bytes (a uint8 -> int64 sum would be compute-bound and hide the reads).
    total = 0
    for t in tensors.values():
        raw = t.reshape(-1).view(torch.uint8)
        if raw.numel() % 8 == 0:
            total += int(raw.view(torch.int64).sum())
        elif raw.numel():
            total += int(raw.sum(dtype=torch.int64))
    return total


def bench_safetensors(root: Path, gb: float) -> list[tuple[str, float, float]]:
    from safetensors.torch import load_file

    ckpt = root / "ckpt"
    n = max(2, int(gb * (1 << 30) / (32 << 20)))
    g = torch.Generator().manual_seed(0)
    dataio.write_safetensors(str(ckpt) + "/", {f"layer{i}.weight": torch.randn(8 << 20, generator=g) for i in range(n)}, max_shard_size="512MB")
    shards = sorted(str(p) for p in ckpt.glob("*.safetensors"))

    def ours() -> None:
        touch(dataio.read_safetensors(str(ckpt)))

    def ref() -> None:
        for s in shards:
            touch(load_file(s))

    rows = []
    ours(), ref()  # warm the page cache
    rows.append(("safetensors warm, every byte", timed(ref, 7), timed(ours, 7)))
    # The memory-bandwidth yardstick: the same touch over tensors already in
    # RAM (no map, no fault). "reference" here is that time; the ratio says
    # how close a warm dataio read comes to it.
    resident = {k: t.clone() for k, t in dataio.read_safetensors(str(ckpt)).items()}
    rows.append(("  yardstick: touch resident tensors", timed(functools.partial(touch, resident)), rows[-1][2]))
    del resident

    def cold(fn):
        def run() -> None:
            evict(shards)
            fn()
        return run

    rows.append(("safetensors cold, every byte", timed(cold(ref)), timed(cold(ours))))
    return rows


def bench_tfrecord(root: Path, records: int) -> list[tuple[str, float, float]]:
    from tfrecord.reader import tfrecord_loader

    path = str(root / "data.tfrecord")
    rng = np.random.default_rng(0)
    payloads = [rng.integers(0, 255, 512, dtype=np.uint8).tobytes() for _ in range(64)]
    dataio.write_tfrecord(path, ({"image": payloads[i % 64], "label": i % 1000, "score": [0.5, float(i)]} for i in range(records)))

    def ours() -> None:
        n = 0
        for ex in dataio.iter_tfrecord(path):
            n += ex["label"][0]

    def ref() -> None:
        n = 0
        for ex in tfrecord_loader(path, None, {"image": "byte", "label": "int", "score": "float"}):
            n += int(ex["label"][0])

    return [("TFRecord iterate parsed Examples", timed(ref), timed(ours))]


def bench_parquet(root: Path, rows: int) -> list[tuple[str, float, float]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(root / "t.parquet")
    rng = np.random.default_rng(0)
    pq.write_table(
        pa.table({"key": pa.array(np.arange(rows).astype(str)), "height": rng.integers(0, 2000, rows), "width": rng.integers(0, 2000, rows)}),
        path,
        row_group_size=100_000,
    )
    return [
        (
            "parquet read 2 columns",
            timed(lambda: pq.read_table(path, columns=["key", "height"]), repeat=9),
            timed(lambda: dataio.read_parquet(path, columns=["key", "height"]), repeat=9),
        )
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--root", default=None, help="scratch folder (default: a temp dir on the same disk as /tmp)")
    args = ap.parse_args()
    root = Path(args.root or tempfile.mkdtemp(prefix="dataio-fmt-"))
    try:
        rows = bench_safetensors(root, args.gb) + bench_tfrecord(root, args.records) + bench_parquet(root, args.rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'workload':<36} {'reference s':>12} {'dataio s':>10} {'ratio':>7}")
    for name, ref, ours in rows:
        print(f"{name:<36} {ref:>12.3f} {ours:>10.3f} {ref / ours:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
