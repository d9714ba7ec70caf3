"""The README's pipeline examples, run as written, on small JPEG datasets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from _imaging import jpeg, natural_image, tv_center_crop
from PIL import Image

import dataio

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
# Small sources (short side < 512), so resize_short(256) never shrinks by 2x
# or more: no DCT-domain scaling, and PIL's bilinear resize is the reference.
SIZES = [(180, 240), (300, 200), (256, 256), (150, 400), (333, 290), (97, 131), (260, 500), (224, 224), (410, 300), (120, 160)]


@pytest.fixture(scope="module")
def jpeg_dir(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("spec-jpegs")
    paths = []
    for i, (h, w) in enumerate(SIZES):
        p = root / f"{i:02d}.jpg"
        p.write_bytes(jpeg(natural_image(h, w, seed=100 + i), quality=90))
        paths.append(p)
    return paths


def reference_imagenet(path: Path) -> np.ndarray:
    """torchvision's classic eval transform: Resize(256), CenterCrop(224), in uint8 HWC."""
    im = Image.open(path).convert("RGB")
    w, h = im.size
    if w <= h:
        size = (256, int(256 * h / w))
    else:
        size = (int(256 * w / h), 256)
    resized = np.asarray(im.resize(size, Image.BILINEAR))
    return tv_center_crop(resized, 224, 224)


def denormalize(chw: np.ndarray) -> np.ndarray:
    """CHW imagenet-normalized float32 back to HWC uint8 levels (as float)."""
    hwc = np.transpose(chw, (1, 2, 0))
    return (hwc * IMAGENET_STD + IMAGENET_MEAN) * 255.0


def test_the_first_example_runs_verbatim(jpeg_dir: list[Path]) -> None:
    records = [{"key": f"img{i:03d}", "image": str(jpeg_dir[i % len(jpeg_dir)])} for i in range(70)]
    seen: list[torch.Tensor] = []
    keys: list[str] = []

    def train_step(images: torch.Tensor) -> None:
        seen.append(images)

    # -- the README, verbatim ------------------------------------------------
    pipe = dataio.pipeline(
        dataio.slot("image")
            .decode_image(mode="rgb")
            .resize_short(256)
            .center_crop(h=224, w=224)
            .normalize("imagenet"),
        dataio.batch(64, prefetch=4),
    )

    with pipe.bind(records).run("torch", concurrency=64) as loader:
        for batch in loader:
            train_step(batch["image"])
            keys.extend(batch.keys)
    # ------------------------------------------------------------------------

    assert [tuple(t.shape) for t in seen] == [(64, 3, 224, 224), (6, 3, 224, 224)]
    assert all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in seen)
    assert keys == [r["key"] for r in records], "submit order is the record order"
    images = torch.cat(seen).numpy()
    # Pixel parity with torchvision's Resize(256) + CenterCrop(224) on PIL:
    # both are antialiased bilinear resamples of the same decode; fixed-point
    # rounding differs by at most a level or two.
    for i in range(len(jpeg_dir)):
        ref = reference_imagenet(jpeg_dir[i])
        got = denormalize(images[i])
        err = np.abs(got - ref.astype(np.float32))
        assert err.mean() <= 0.5 and err.max() <= 2.5, f"{jpeg_dir[i].name}: mean {err.mean():.3f} max {err.max():.2f}"
    # Records 10.. reuse the same files: identical tensors.
    np.testing.assert_array_equal(images[0], images[10])
    np.testing.assert_array_equal(images[3], images[63])


def test_the_multi_slot_example_with_a_record_map(jpeg_dir: list[Path]) -> None:
    table = [{"path": str(jpeg_dir[i % len(jpeg_dir)]), "class_id": (i * 7) % 5} for i in range(133)]

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

    batches = []
    with pipe.bind(table).run("torch", concurrency=64) as loader:
        assert len(loader) == 2, "133 records in batches of 64, last one dropped"
        for batch in loader:
            batches.append(batch)
    assert len(batches) == 2
    for b in batches:
        assert tuple(b["image"].shape) == (64, 3, 224, 224) and b["image"].dtype == torch.float32
        labels = b["label"]
        assert isinstance(labels, torch.Tensor) and labels.dtype == torch.int64 and tuple(labels.shape) == (64,)
        assert labels.tolist() == [table[i]["class_id"] for i in b.indices]
    assert [i for b in batches for i in b.indices] == list(range(128))
    # The label row and the image row belong to the same record.
    first = batches[1]
    row = 5
    ref = reference_imagenet(Path(table[first.indices[row]]["path"]))
    err = np.abs(denormalize(first["image"][row].numpy()) - ref)
    assert err.mean() <= 0.5
