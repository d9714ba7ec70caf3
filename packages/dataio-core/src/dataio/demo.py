"""``python -m dataio.demo``: the main job of the README.

Makes a small image dataset (once, cached), then trains a tiny model for two
epochs with the README's first pipeline feeding torch, and prints the
throughput. The images are procedural but image-like: smooth gradients,
shapes and texture, JPEG-encoded at mixed sizes and qualities, in four
classes the model can learn.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import dataio
from dataio._progress import Progress

CLASSES = ("circle", "square", "triangle", "stripes")
VERSION = 1


def cache_dir() -> Path:
    base = os.environ.get("DATAIO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dataio")
    return Path(base) / f"demo-v{VERSION}"


def make_dataset(n: int, root: Path) -> list[dict]:
    """Writes ``n`` JPEGs under ``root`` (skipped when already there)."""
    manifest = root / "manifest.json"
    if manifest.exists():
        records = json.loads(manifest.read_text())
        if len(records) >= n and all(os.path.exists(r["image"]) for r in records[:n]):
            return records[:n]
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    rng = np.random.default_rng(1234)
    root.mkdir(parents=True, exist_ok=True)
    records = []
    with Progress(n, "making the demo dataset", "img") as bar:
        for i in range(n):
            label = i % len(CLASSES)
            short = int(rng.integers(256, 640))
            long = int(short * rng.uniform(1.0, 1.6))
            w, h = (long, short) if rng.random() < 0.6 else (short, long)
            yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
            c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
            t = (xx / w * rng.uniform(0.3, 1.0) + yy / h * rng.uniform(0.3, 1.0)) / 2
            base = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]
            base += rng.normal(0, 6, (h, w, 1))
            img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
            draw = ImageDraw.Draw(img)
            color = tuple(int(v) for v in rng.uniform(0, 255, 3))
            cx, cy, r = w * rng.uniform(0.3, 0.7), h * rng.uniform(0.3, 0.7), short * rng.uniform(0.15, 0.35)
            if CLASSES[label] == "circle":
                draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color)
            elif CLASSES[label] == "square":
                draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=color)
            elif CLASSES[label] == "triangle":
                draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=color)
            else:
                step = int(rng.integers(8, 24))
                for x in range(0, w, step * 2):
                    draw.rectangle([x, 0, x + step, h], fill=color)
            img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))
            path = root / f"{i:05d}.jpg"
            img.save(path, quality=int(rng.integers(70, 96)))
            records.append({"key": f"{i:05d}", "image": str(path), "label": label})
            bar.update()
    manifest.write_text(json.dumps(records))
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dataio.demo", description="Train a tiny model on a dataio pipeline.")
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args(argv)

    import torch

    records = make_dataset(args.images, cache_dir())
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(args.batch, prefetch=4),
    )
    print(pipe.describe())

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.AvgPool2d(4),
        torch.nn.Conv2d(3, 16, 5, stride=2),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, len(CLASSES)),
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    def train_step(images: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
        opt.zero_grad()
        logits = model(images)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        return loss.item(), (logits.argmax(1) == labels).float().mean().item()

    samples = 0
    wait = 0.0
    t_start = time.perf_counter()
    first_batch = None
    with pipe.bind(records).run("torch", concurrency="auto", seed=0) as loader:
        steps = len(loader)
        for epoch in range(args.epochs):
            with Progress(steps, f"epoch {epoch}", "batch") as bar:
                t_wait = time.perf_counter()
                for batch in loader:
                    now = time.perf_counter()
                    wait += now - t_wait
                    if first_batch is None:
                        first_batch = now - t_start
                    loss, acc = train_step(batch["image"], batch["label"])
                    samples += len(batch)
                    bar.update(extra=f"loss {loss:.3f} acc {acc:.2f}")
                    t_wait = time.perf_counter()
            print(f"epoch {epoch}: loss {loss:.3f}, batch accuracy {acc:.2f}")
        stats = loader.stats()
    total = time.perf_counter() - t_start
    print(
        f"throughput: {samples / total:,.0f} samples/s end to end ({samples} samples, {total:.2f} s); "
        f"the loader alone delivered {samples / max(wait, 1e-9):,.0f} samples/s of waiting time; "
        f"first batch after {first_batch:.3f} s; {dataio._native.pool_info()[0]} CPU threads"
    )
    print(f"last epoch: decode+transform {stats.get('decode_seconds', 0):.2f} s on the pool, read {stats.get('bytes_read', 0) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
