"""What mixing costs: the image pipeline over one list of JPEG files against
`dataio.mix` of three lists holding the same files (50/30/20, weights
proportional to their sizes, stop="all_exhausted", so the same number of
samples), seeded, in alternating rounds; medians and the ratio.

    python benchmarks/mix.py [--images 1500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from PIL import Image

import dataio


def make_images(folder: Path, n: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        p = folder / f"{i:05d}.jpg"
        if not p.exists():
            h, w = int(rng.integers(256, 400)), int(rng.integers(256, 400))
            yy, xx = np.mgrid[0:h, 0:w]
            img = np.stack([(xx * 3 + i) % 256, (yy * 2) % 256, (xx + yy) % 256], -1).astype(np.uint8)
            Image.fromarray(img).save(p, "JPEG", quality=90)
        paths.append(str(p))
    return paths


PIPE = dataio.pipeline(
    dataio.slot("image").decode_image(mode="rgb").resize_short(160).center_crop(h=128, w=128).normalize("imagenet"),
    dataio.batch(64),
)


def rate(records: object) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = 0
    with PIPE.bind(records).run("torch", seed=0) as loader:
        for b in loader:
            n += len(b)
    return n / (time.perf_counter() - t0), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default="/tmp/dataio-mix-bench")
    args = ap.parse_args()
    paths = make_images(Path(args.data), args.images)
    records = [{"key": Path(p).stem, "image": p} for p in paths]
    a, b = int(len(records) * 0.5), int(len(records) * 0.8)
    parts = [records[:a], records[a:b], records[b:]]
    mixed = dataio.mix(parts, weights=[len(p) for p in parts], stop="all_exhausted")
    rate(records[:128])  # warm up the pools and the page cache
    one, three = [], []
    for _ in range(args.rounds):
        r, n1 = rate(records)
        one.append(r)
        r, n3 = rate(mixed)
        three.append(r)
    m1, m3 = statistics.median(one), statistics.median(three)
    print(f"{'candidate':<28} {'samples':>8} {'samples/s (median)':>20}  rounds")
    print(f"{'one source':<28} {n1:>8} {m1:>20,.0f}  {', '.join(f'{x:,.0f}' for x in one)}")
    print(f"{'mix of three (50/30/20)':<28} {n3:>8} {m3:>20,.0f}  {', '.join(f'{x:,.0f}' for x in three)}")
    print(f"mix / one source: {m3 / m1:.3f}")


if __name__ == "__main__":
    main()
