"""The quality bound of the image pipeline: what the model sees stays what
torchvision shows it, whatever the engine skips (DCT-scaled decode, region
decode, chroma upsampling left to the resample).

Reference: ``torchvision.io.decode_jpeg → Resize(256, antialias=True) →
CenterCrop(224) → Normalize(imagenet)`` on natural photographs of mixed
sizes (the benchmark's own JPEGs: crops of scikit-image's photographs, short
side 256–800, quality 70–95). Bound, in normalized units: the mean over
images of the per-image mean absolute difference ≤ 0.025, and every image's
≤ 0.10."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torchvision.io import ImageReadMode, decode_jpeg, read_file
from torchvision.transforms import v2

import dataio
from _photos import build_images, describe

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
MEAN_BOUND, WORST_BOUND = 0.025, 0.10


def _torchvision(path: str) -> np.ndarray:
    tf = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    return tf(decode_jpeg(read_file(path), mode=ImageReadMode.RGB)).numpy()


def test_the_imagenet_chain_stays_within_the_quality_bound_of_torchvision(tmp_path: Path) -> None:
    paths = build_images(48, tmp_path, workers=1, quiet=True)
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(256).center_crop(h=224, w=224).normalize("imagenet"),
        dataio.batch(16),
    )
    got = {int(i): img for b in pipe.bind([{"image": p} for p in paths]).run("numpy") for i, img in zip(b.indices, b["image"])}
    diffs = np.array([np.abs(got[i] - _torchvision(p)).mean() for i, p in enumerate(paths)])
    ds = describe(paths, tmp_path)
    print(f"\nmean abs diff vs torchvision: mean {diffs.mean():.4f}, worst {diffs.max():.4f} (short sides {ds['short_side_min']}-{ds['short_side_max']})")
    assert diffs.mean() <= MEAN_BOUND, diffs.mean()
    assert diffs.max() <= WORST_BOUND, (diffs.max(), paths[int(diffs.argmax())])
