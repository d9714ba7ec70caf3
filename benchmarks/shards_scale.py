"""What planning an epoch of a sharded dataset costs as it grows.

A synthetic index (no data: a sized source declaring its layout, as
``tar_records`` does) of S shards x M samples: the loader's memory for the
epoch order (RSS growth), the time to the first batch from the start of an
epoch and after resuming deep into it, and the size of ``state_dict()``,
for 100 shards against 10,000 shards (10^6 against 10^8 samples by
default). Nothing here reads a shard: it measures the order and the
checkpoint, which must grow with shards, not samples.

    python benchmarks/shards_scale.py [--samples-per-shard 10000] [--shards 100 10000]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import dataio


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class SyntheticShards:
    """``len()`` samples in shards of equal size, each record just its index."""

    def __init__(self, shards: int, per_shard: int, window: int) -> None:
        self.counts = [per_shard] * shards
        self.total = shards * per_shard
        self.window = window

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"key": i, "x": i}

    def _dataio_layout(self) -> tuple[list[int], int]:
        return self.counts, self.window


PIPE = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(256))


def measure(shards: int, per_shard: int, window: int) -> dict[str, Any]:
    records = SyntheticShards(shards, per_shard, window)
    before = rss_mib()
    t0 = time.perf_counter()
    loader = PIPE.bind(records).run("numpy", seed=1, shard={"id": 3, "of": 8, "pad": True})
    it = iter(loader)
    first = next(it)
    first_s = time.perf_counter() - t0
    grown = rss_mib() - before
    for _ in range(3):
        next(it)
    state = loader.state_dict()
    loader.close()
    # Resume deep into the epoch: three quarters of this rank's share.
    state = dict(state, position=(records.total // 8) * 3 // 4)
    t0 = time.perf_counter()
    resumed = PIPE.bind(records).run("numpy", seed=1, shard={"id": 3, "of": 8, "pad": True})
    resumed.load_state_dict(state)
    again = next(iter(resumed))
    resume_s = time.perf_counter() - t0
    resumed.close()
    # The rows are where the order says: distinct records, all in range.
    assert len(set(first.keys)) == len(first.keys) == 256 and len(again.keys) == 256
    return {
        "shards": shards,
        "samples": records.total,
        "rss_growth_mib": round(grown, 1),
        "first_batch_s": round(first_s, 4),
        "resume_first_batch_s": round(resume_s, 4),
        "state_dict_bytes": len(json.dumps(state)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, nargs="+", default=[100, 10_000])
    ap.add_argument("--samples-per-shard", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=8192)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    measure(10, 1000, args.window)  # warm up: the pools, imports and first allocations
    rows = [measure(s, args.samples_per_shard, args.window) for s in args.shards]
    cols = ["shards", "samples", "rss_growth_mib", "first_batch_s", "resume_first_batch_s", "state_dict_bytes"]
    print(" | ".join(f"{c:>20}" for c in cols))
    for r in rows:
        print(" | ".join(f"{r[c]:>20,}" if isinstance(r[c], int) else f"{r[c]:>20}" for c in cols))
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(
            f"{b['shards'] / a['shards']:.0f}x the shards and samples: RSS growth x{b['rss_growth_mib'] / max(a['rss_growth_mib'], 0.1):.1f}, "
            f"first batch x{b['first_batch_s'] / a['first_batch_s']:.1f}, state_dict x{b['state_dict_bytes'] / a['state_dict_bytes']:.2f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
