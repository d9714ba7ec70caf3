"""What moving decode to Ray workers costs and saves the trainer.

The image pipeline of the bench matrix (decode → resize_short(256) →
center_crop(224) → normalize, ``batch(64)``) over the same JPEGs, run:

* ``local`` — the native engine in this process (the CPU pool on every core);
* ``ray-N`` — ``RayExecutor(num_workers=N)`` on a local Ray cluster on this
  machine, one CPU per worker;
* ``transport`` — an actor that sends back a ready-made batch of the same
  size for every call (no decode): what carrying one batch from a worker to
  the trainer through Ray's object store costs, alone.

For each it reports samples/s and the **trainer process's own CPU seconds
per sample** (``time.process_time()`` of this process: its threads, the
engine's pool for ``local``, Ray's driver threads for ``ray-N``; never the
workers' processes), and the ratios to ``local``. For the Ray runs also the
trainer's wait for each batch's results (``transfer_seconds`` per batch).

    python benchmarks/ray_scale.py [--images 1024] [--epochs 2] [--workers 1,2]

Needs dataio-ray (``pip install --find-links wheelhouse/ dataio-ray``, see the
README's Install section) and the bench group's scikit-image for the JPEGs (``dataio_bench.datasets.build_images``). With
``RAY_ADDRESS`` set it uses that cluster; otherwise it starts Ray on this
machine with one CPU per worker of the largest run (``ray.init(num_cpus=)``).
On a machine with fewer cores than workers + 1 the workers share cores with
the trainer: samples/s then says little, the CPU per sample still holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import dataio

BATCH = 64


def image_pipeline() -> dataio.Pipeline:
    chain = dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet")
    return dataio.pipeline(chain, dataio.batch(BATCH, prefetch=4))


def measure(loader: Any, epochs: int) -> dict[str, float]:
    """A warm-up epoch, then ``epochs`` timed ones: samples/s and trainer CPU
    seconds per sample (medians over the timed epochs)."""
    for _ in loader:  # warm-up: workers start, files enter the page cache
        pass
    rates, cpu = [], []
    transfer = batches = 0.0
    for _ in range(epochs):
        n = 0
        c0, t0 = time.process_time(), time.perf_counter()
        for b in loader:
            n += len(b)
        c1, t1 = time.process_time(), time.perf_counter()
        rates.append(n / (t1 - t0))
        cpu.append((c1 - c0) / n)
        stats = loader.stats()
        for w in stats.get("workers", []):
            transfer += w["transfer_seconds"]
            batches += w["batches"]
    out = {"samples_per_s": statistics.median(rates), "trainer_cpu_ms_per_sample": 1e3 * statistics.median(cpu)}
    if batches:
        out["transfer_ms_per_batch"] = 1e3 * transfer / batches
    return out


def transport(batches: int) -> dict[str, float]:
    """An actor returns a pre-made float32 64×3×224×224 batch per call; the
    trainer keeps two calls in flight and reads each result like the
    executor does (zero-copy numpy over the object store)."""
    import ray

    @ray.remote(num_cpus=1)
    class Sender:
        def __init__(self) -> None:
            self.batch = np.ones((BATCH, 3, 224, 224), dtype=np.float32)

        def send(self) -> Any:
            return self.batch

    sender = Sender.remote()
    ray.get(sender.send.remote())  # started
    c0, t0 = time.process_time(), time.perf_counter()
    pending = [sender.send.remote() for _ in range(2)]
    total = 0.0
    for i in range(batches):
        ref = pending.pop(0)
        total += float(ray.get(ref)[0, 0, 0, 0])
        if i + 2 < batches:
            pending.append(sender.send.remote())
    c1, t1 = time.process_time(), time.perf_counter()
    ray.kill(sender)
    assert total == batches
    return {"batches_per_s": batches / (t1 - t0), "ms_per_batch": 1e3 * (t1 - t0) / batches, "trainer_cpu_ms_per_batch": 1e3 * (c1 - c0) / batches}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs after a warm-up epoch (default 2)")
    ap.add_argument("--workers", default="1,2", help="worker counts of the Ray runs (default 1,2)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    worker_counts = [int(x) for x in args.workers.split(",") if x]

    from dataio_bench.datasets import build_images

    files = build_images(args.images, quiet=True)
    records = [{"key": Path(f).stem, "image": f} for f in files]
    pipe = image_pipeline()
    results: dict[str, dict[str, float]] = {}

    with pipe.bind(records).run("torch") as loader:
        results["local"] = measure(loader, args.epochs)
    print(f"local: {json.dumps(results['local'])}", file=sys.stderr)

    import ray

    from dataio_ray import RayExecutor

    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
    else:
        ray.init(num_cpus=max(worker_counts), include_dashboard=False, log_to_driver=False)
    try:
        for n in worker_counts:
            with RayExecutor(num_workers=n) as ex, pipe.bind(records).run("torch", executor=ex) as loader:
                results[f"ray-{n}"] = measure(loader, args.epochs)
            print(f"ray-{n}: {json.dumps(results[f'ray-{n}'])}", file=sys.stderr)
        results["transport"] = transport(max(32, args.images // BATCH))
    finally:
        ray.shutdown()

    base = results["local"]
    cores = len(os.sched_getaffinity(0))
    print(f"{args.images} JPEGs, batch {BATCH}, {cores} cores, median of {args.epochs} epochs after a warm-up")
    print(f"{'run':<10} {'samples/s':>10} {'× local':>8} {'trainer CPU ms/sample':>22} {'× local':>8} {'wait for results ms/batch':>26}")
    for name, r in results.items():
        if name == "transport":
            continue
        transfer = f"{r['transfer_ms_per_batch']:.2f}" if "transfer_ms_per_batch" in r else "-"
        print(
            f"{name:<10} {r['samples_per_s']:>10.0f} {r['samples_per_s'] / base['samples_per_s']:>8.2f} "
            f"{r['trainer_cpu_ms_per_sample']:>22.3f} {r['trainer_cpu_ms_per_sample'] / base['trainer_cpu_ms_per_sample']:>8.3f} {transfer:>26}"
        )
    t = results["transport"]
    print(
        f"transport alone (a {BATCH}x3x224x224 float32 batch, {BATCH * 3 * 224 * 224 * 4 / 2**20:.1f} MiB, per call): "
        f"{t['ms_per_batch']:.2f} ms per batch, trainer CPU {t['trainer_cpu_ms_per_batch']:.2f} ms per batch "
        f"({t['trainer_cpu_ms_per_batch'] / BATCH:.3f} ms per sample)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"images": args.images, "cores": cores, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
