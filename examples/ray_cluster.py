"""Decode on a Ray cluster's CPU workers, get the local run's batches.

A pipeline with random crops and flips runs with ``executor=RayExecutor(...)``:
two Ray actors decode the batches and the trainer reassembles them in order.
The batches are bit for bit those of a local run. The run stops after a few
batches, saves ``loader.state_dict()``, and resumes with one worker instead
of two: nothing lost, nothing repeated. Then the same epoch becomes a Ray
Data dataset (``dataio_ray.to_dataset``) read with ``iter_torch_batches``.

With ``RAY_ADDRESS`` set it uses that cluster; otherwise it starts a local
one with two nodes of one CPU each (``ray.cluster_utils.Cluster``) and
stops it at the end. Needs the dataio-ray plugin (``pip install --find-links
wheelhouse/ dataio-ray``; the README's Install section builds wheelhouse/).

    python examples/ray_cluster.py
"""

# requires-plugin: dataio-ray

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import ray
import ray.data
import torch
from PIL import Image

import dataio
from dataio_ray import RayExecutor, to_dataset

SEED = 7


def make_records(root: Path, n: int = 96) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for i in range(n):
        path = root / f"{i:03d}.jpg"
        h, w = int(rng.integers(80, 160)), int(rng.integers(80, 160))
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 3 + i) % 256, (yy * 2) % 256, (xx + yy) % 256], -1).astype(np.uint8)
        Image.fromarray(img).save(path, quality=90)
        records.append({"key": f"k{i:03d}", "image": str(path), "label": i % 10})
    return records


def build_pipeline() -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").random_resized_crop(h=64, w=64).hflip(p=0.5).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(8),
    )


def start_cluster() -> object | None:
    """A local two-node cluster unless RAY_ADDRESS names one."""
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
        return None
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    return cluster


def snapshot(batch: dataio.Batch) -> tuple:
    return (list(batch.keys), batch["image"].clone(), batch["label"].clone())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        records = make_records(Path(tmp))
        pipe = build_pipeline()
        with pipe.bind(records).run("torch", seed=SEED) as loader:
            reference = [snapshot(b) for b in loader]

        cluster = start_cluster()
        try:
            # Two workers: the first batches, then a checkpoint.
            # The executor owns the actors: leaving its block releases them.
            with RayExecutor(num_workers=2) as ex, pipe.bind(records).run("torch", seed=SEED, executor=ex) as loader:
                first = []
                for batch in loader:
                    first.append(snapshot(batch))
                    if len(first) == 4:
                        break
                state = json.loads(json.dumps(loader.state_dict()))
                print(loader.report())

            # One worker resumes where the two stopped.
            with RayExecutor(num_workers=1) as ex, pipe.bind(records).run("torch", seed=SEED, executor=ex) as loader:
                loader.load_state_dict(state)
                rest = [snapshot(b) for b in loader]

            resumed = first + rest
            assert len(resumed) == len(reference)
            for (k1, img1, lab1), (k2, img2, lab2) in zip(resumed, reference):
                assert k1 == k2 and torch.equal(img1, img2) and torch.equal(lab1, lab2), "the Ray run differs from the local one"
            print(f"{len(first)} batches on 2 workers + {len(rest)} on 1 worker == the local run, bit for bit")

            # The same epoch as a Ray Data dataset, decoded inside Ray Data's tasks.
            ctx = ray.data.DataContext.get_current()
            ctx.execution_options.preserve_order = True
            ctx.enable_progress_bars = False
            ds = to_dataset(pipe.bind(records), seed=SEED)
            images = torch.cat([b["image"] for b in ds.iter_torch_batches(batch_size=16)])
            assert torch.equal(images, torch.cat([img for _, img, _ in reference]))
            print(f"to_dataset: {len(images)} rows, the same samples")
        finally:
            ray.shutdown()
            if cluster is not None:
                cluster.shutdown()
    print("ray_cluster: OK")


if __name__ == "__main__":
    main()
