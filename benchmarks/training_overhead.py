"""What the training features cost: the image pipeline of
benchmarks/image_pipeline.py with and without seeded shuffle, sharding,
group_by (via from_sampler) and a field-gated optional slot, all in one run
on the same files; plus the time and size of ``state_dict()``.

    python benchmarks/training_overhead.py [--images 1000] [--epochs 3]

Prints samples/s per variant and its ratio to the plain pipeline (ratios,
not absolute times, are the result).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import dataio
from dataio import cond as c


def image_chain(name: str = "image") -> dataio.pipeline.Slot:
    return dataio.slot(name).decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet")


def variants(files: list[str]) -> dict[str, tuple]:
    records = [{"key": f"k{i}", "image": f, "mask_id": i if i % 2 else None} for i, f in enumerate(files)]
    plain = dataio.pipeline(image_chain(), dataio.batch(64, prefetch=4))
    gated = dataio.pipeline(
        image_chain(),
        dataio.slot("flag", optional=True, field="mask_id").active_when(c.col("mask_id").is_not_null()).decode_bytes(),
        dataio.batch(64, prefetch=4),
    )
    grouped = dataio.pipeline(image_chain(), dataio.group_by("batch_id", prefetch=4))
    sampler = [list(range(i, min(i + 64, len(records)))) for i in range(0, len(records), 64)]
    return {
        "plain": (plain, records, {}),
        "seeded shuffle": (plain, records, {"seed": 42}),
        "shard 0 of 1, pad": (plain, records, {"seed": 42, "shard": {"id": 0, "of": 1, "pad": True}}),
        "group_by (from_sampler)": (grouped, dataio.from_sampler(sampler, lambda i: records[i]), {}),
        "active_when gate": (gated, records, {}),
    }


def rate(pipe, records, kw: dict, epochs: int) -> float:
    loader = pipe.bind(records).run("torch", concurrency=64, **kw)
    for _ in loader:  # warm-up epoch
        pass
    rates = []
    for _ in range(epochs):
        n, t = 0, time.perf_counter()
        for b in loader:
            n += len(b)
        rates.append(n / (time.perf_counter() - t))
    loader.close()
    return statistics.median(rates)


def state_dict_cost(files: list[str]) -> tuple[float, int]:
    pipe = dataio.pipeline(image_chain(), dataio.batch(64))
    big = [{"image": files[i % len(files)]} for i in range(1_000_000)]
    loader = pipe.bind(big).run("torch", seed=1)
    next(iter(loader))
    t = time.perf_counter()
    for _ in range(1000):
        state = loader.state_dict()
    per_call = (time.perf_counter() - t) / 1000
    loader.close()
    return per_call, len(json.dumps(state))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    from datasets import build_images

    files = build_images(args.images, quiet=True)
    results = {name: rate(*v, args.epochs) for name, v in variants(files).items()}
    base = results["plain"]
    print(f"{'variant':<26} {'samples/s':>10} {'× plain':>8}")
    for name, r in results.items():
        print(f"{name:<26} {r:>10.0f} {r / base:>8.3f}")
    per_call, size = state_dict_cost(files)
    print(f"state_dict(): {per_call * 1e6:.1f} µs per call, {size} bytes of JSON for a 1,000,000-record dataset")
    return 0


if __name__ == "__main__":
    sys.exit(main())
