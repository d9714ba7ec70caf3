"""Two slots, one record map, batches into torch — and where the loader waits.

The README's multi-slot pipeline on a small labelled JPEG dataset this script
writes to a temporary folder: a record map renames the table's columns, the
``image`` slot decodes and transforms natively, the ``label`` slot passes the
integer through, and ``batch(..., drop_last=True)`` stacks both. A tiny
linear model takes one step per batch. At the end ``loader.report()`` says
how fast each stage went and what the pipeline was waiting on.

    python examples/multi_slot_pipeline.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import dataio


def make_table(root: Path, n: int = 160) -> list[dict]:
    """``n`` JPEGs of mixed sizes in four classes (a brighter channel per class)."""
    rng = np.random.default_rng(0)
    table = []
    for i in range(n):
        h, w = int(rng.integers(240, 420)), int(rng.integers(240, 420))
        label = i % 4
        pixels = rng.integers(0, 120, (h, w, 3), dtype=np.uint8)
        if label < 3:
            pixels[..., label] += 120
        path = root / f"{i:04d}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        table.append({"path": str(path), "class_id": label})
    return table


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = make_table(Path(tmp))

        pipe = dataio.pipeline(
            dataio.map(lambda r: {"image": r["path"], "label": r["class_id"]}),

            dataio.slot("image")
                .decode_image(mode="rgb")
                .resize_short(256)
                .center_crop(h=224, w=224)
                .normalize("imagenet"),

            dataio.slot("label").decode_bytes(),
            dataio.batch(64, drop_last=True, prefetch=4),
        )
        print(pipe.describe())

        model = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(3, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        with pipe.bind(table).run("torch", concurrency=64) as loader:
            for epoch in range(2):
                for batch in loader:
                    images, labels = batch["image"], batch["label"]
                    assert images.shape == (64, 3, 224, 224) and images.dtype == torch.float32
                    assert labels.dtype == torch.int64 and labels.shape == (64,)
                    loss = torch.nn.functional.cross_entropy(model(images), labels)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                print(f"epoch {epoch}: {len(loader)} batches of 64, last loss {loss.item():.3f}")
                print(loader.report())
    print("multi_slot_pipeline: OK")


if __name__ == "__main__":
    main()
