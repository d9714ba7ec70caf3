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
                                   [--light] [--shards N] [--batches-per-task 1,2]

``--light``: the light pipeline instead (decode → random_resized_crop(160) →
hflip → normalize, ``batch(32)``), where the trainer's fixed costs per batch
weigh most. ``--shards N``: the same JPEGs written with
``webdataset.TarWriter`` into N tar shards and read through
``dataio.tar_records`` (for Ray the trainer plans by reading every record,
``records[i]``, and ships the sample bytes in the planned batches) instead of
a list of file paths. ``--batches-per-task``: the Ray runs for each value
(planned batches per actor call). Shard-scale Ray's figure (issue 32)::

    python benchmarks/ray_scale.py --images 300 --light --shards 6 --workers 2 --batches-per-task 1,2,4 --epochs 5

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
LIGHT_BATCH = 32


def image_pipeline() -> dataio.Pipeline:
    chain = dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet")
    return dataio.pipeline(chain, dataio.batch(BATCH, prefetch=4))


def light_pipeline() -> dataio.Pipeline:
    chain = dataio.slot("image").decode_image(mode="rgb").random_resized_crop(160, 160).hflip().normalize("imagenet")
    return dataio.pipeline(chain, dataio.batch(LIGHT_BATCH))


def tar_shards(files: list[str], shards: int, folder: Path) -> list[str]:
    """The JPEGs in ``shards`` WebDataset tar shards (``{"__key__", "image"}``
    per sample, in file order), written once under ``folder``."""
    import webdataset as wds

    folder.mkdir(parents=True, exist_ok=True)
    per = [len(files) // shards + (1 if s < len(files) % shards else 0) for s in range(shards)]
    urls, start = [], 0
    for s, count in enumerate(per):
        path = folder / f"shard-{s:04d}.tar"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            with wds.TarWriter(str(tmp)) as sink:
                for f in files[start : start + count]:
                    sink.write({"__key__": Path(f).stem, "image": Path(f).read_bytes()})
            os.replace(tmp, path)
        urls.append(str(path))
        start += count
    return urls


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
    ap.add_argument("--light", action="store_true", help="the light pipeline (random_resized_crop(160), hflip, normalize, batch(32))")
    ap.add_argument("--shards", type=int, help="read the JPEGs from this many tar shards (dataio.tar_records)")
    ap.add_argument("--batches-per-task", default="1", help="RayExecutor(batches_per_task=) values of the Ray runs (default 1)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    worker_counts = [int(x) for x in args.workers.split(",") if x]
    per_task = [int(x) for x in args.batches_per_task.split(",") if x]

    from dataio_bench.datasets import DATA_ROOT, build_images

    files = build_images(args.images, quiet=True)
    records: Any = [{"key": Path(f).stem, "image": f} for f in files]
    if args.shards:
        records = dataio.tar_records(tar_shards(files, args.shards, DATA_ROOT / f"ray-scale-tar-{args.images}-{args.shards}"))
    pipe = light_pipeline() if args.light else image_pipeline()
    batch = LIGHT_BATCH if args.light else BATCH
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
            for k in per_task:
                name = f"ray-{n}" + (f"/bpt{k}" if per_task != [1] else "")
                with RayExecutor(num_workers=n, batches_per_task=k) as ex, pipe.bind(records).run("torch", executor=ex) as loader:
                    results[name] = measure(loader, args.epochs)
                print(f"{name}: {json.dumps(results[name])}", file=sys.stderr)
        results["transport"] = transport(max(32, args.images // BATCH))
    finally:
        ray.shutdown()

    base = results["local"]
    cores = len(os.sched_getaffinity(0))
    source = f"{args.shards} tar shards" if args.shards else "files"
    kind = "light pipeline" if args.light else "matrix image pipeline"
    print(f"{args.images} JPEGs from {source}, {kind}, batch {batch}, {cores} cores, median of {args.epochs} epochs after a warm-up")
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
        Path(args.json).write_text(json.dumps({"images": args.images, "shards": args.shards, "light": args.light, "cores": cores, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
