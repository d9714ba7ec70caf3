"""The bucket workload: the spec benchmark's decode pipeline, variable-size
JPEG → per-record bucket → symmetric CHW normalize.

Every image is assigned the bucket whose aspect ratio is nearest its own
(224×224, 192×256 or 256×192, h×w); a bucket sampler walks the images in
order and cuts each bucket's stream into batches of up to 64, so every batch
holds one bucket's images and has one size. Each image is resized to its
bucket's size (bilinear, antialiased: aspect ratios differ by at most ~15%),
then normalized with mean = std = 0.5 to CHW float32.

  dataio          records carry their bucket's size: ``resize(h=col("h"), w=col("w"))``,
                  ``normalize("symmetric")``, ``group_by("batch_id")`` over ``from_sampler``
  torch           DataLoader(batch_sampler=the buckets), PIL resize + torchvision
                  ToTensor/Normalize, num_workers = cores
  torchvision-io  the same DataLoader decoding with torchvision.io.decode_jpeg and
                  transforms.v2 on uint8 tensors
  decode-only     the limit: simplejpeg full-size decode of the same files
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import datasets
from .harness import Cell, Unavailable
from .image import DecodeOnly, ImageCell, _TorchLoader
from .workloads import DataioCell, Workload

#: (name, h, w)
BUCKETS = (("square", 224, 224), ("landscape", 192, 256), ("portrait", 256, 192))


def assign_buckets(sizes: list[tuple[int, int]], batch: int) -> list[list[tuple[int, int, int]]]:
    """Batches of (image index, h, w): each image to the bucket of nearest
    aspect ratio; per bucket, consecutive images in batches of ``batch``;
    batches in the order their first image comes."""
    import math

    open_batches: dict[str, list[tuple[int, int, int]]] = {}
    batches: list[tuple[int, list[tuple[int, int, int]]]] = []
    for i, (w, h) in enumerate(sizes):
        name, bh, bw = min(BUCKETS, key=lambda b: abs(math.log((w / h) / (b[2] / b[1]))))
        cur = open_batches.setdefault(name, [])
        if not cur:
            batches.append((i, cur))
        cur.append((i, bh, bw))
        if len(cur) == batch:
            open_batches[name] = []
    return [b for _, b in sorted(batches, key=lambda t: t[0])]


class BucketCell(ImageCell):
    """Batches are (n, 3, h, w) float32 with (h, w) one of the buckets; the digest is the per-channel mean."""

    SIZES = frozenset((h, w) for _, h, w in BUCKETS)


class DataioBucket(DataioCell, BucketCell):
    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(
            dataio.slot("image").decode_image(mode="rgb").resize(h=dataio.col("h"), w=dataio.col("w")).normalize("symmetric"),
            dataio.group_by("batch_id", max_open_groups=1, prefetch=self.cfg["prefetch"]),
        )

    def records(self) -> Any:
        import dataio

        files = self.data["files"]
        return dataio.from_sampler(self.data["batches"], lambda r: {"image": files[r[0]], "h": r[1], "w": r[2]})

    def tensor(self, b: Any) -> Any:
        return b["image"]


class _TorchBucket(BucketCell, _TorchLoader):
    """The image workload's DataLoader, its batches cut by the bucket sampler."""

    def transform(self) -> Any:
        raise NotImplementedError

    def dataset(self) -> Any:
        import torch

        files, tf = self.data["files"], self.transform()

        class Images(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return len(files)

            def __getitem__(self, item: tuple[int, int, int]) -> Any:
                i, h, w = item
                return tf(files[i], h, w)

        return Images()

    def batching(self) -> dict[str, Any]:
        return {"batch_sampler": self.data["batches"]}


def _pil_bucket(path: str, h: int, w: int) -> Any:
    from PIL import Image
    from torchvision import transforms as T

    with Image.open(path) as im:
        img = im.convert("RGB").resize((w, h), Image.BILINEAR)
    return T.Normalize((0.5,) * 3, (0.5,) * 3)(T.ToTensor()(img))


def _tvio_bucket(path: str, h: int, w: int) -> Any:
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    from torchvision.transforms import v2

    img = decode_jpeg(read_file(path), mode=ImageReadMode.RGB)
    img = v2.functional.resize(img, [h, w], antialias=True)
    return v2.functional.normalize(v2.functional.to_dtype(img, torch.float32, scale=True), [0.5] * 3, [0.5] * 3)


class TorchPILBucket(_TorchBucket):
    LABEL = "torch DataLoader + PIL/torchvision"
    MODULES = ("torch", "torch.utils.data", "torchvision.transforms", "PIL.Image")
    HINT = "uv pip install torch==2.9.1 torchvision==0.24.1 pillow"

    def transform(self) -> Any:
        return _pil_bucket


class TorchvisionIOBucket(_TorchBucket):
    LABEL = "torch DataLoader + torchvision.io"
    MODULES = ("torch", "torch.utils.data", "torchvision.io", "torchvision.transforms.v2")
    HINT = "uv pip install torch==2.9.1 torchvision==0.24.1"

    def transform(self) -> Any:
        return _tvio_bucket


class BucketWorkload(Workload):
    name = "bucket"
    title = "per-record bucket pipeline"
    limits = ("decode-only",)
    tol = 0.03
    relative = False

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioBucket, "torch": TorchPILBucket, "torchvision-io": TorchvisionIOBucket, "decode-only": DecodeOnly}

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 64, "torch_prefetch_factor": args.torch_prefetch_factor}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        try:
            paths = datasets.build_images(args.images, args.data_dir)
        except ImportError as e:
            raise Unavailable(f"making the JPEGs needs scikit-image and pillow ({e}); they are in the bench dependency group") from e
        from PIL import Image

        sizes = []
        for p in paths:
            with Image.open(p) as im:
                sizes.append(im.size)
            with open(p, "rb") as f:  # a warm page cache for every candidate alike
                f.read()
        batch = args.batch or 64
        batches = assign_buckets(sizes, batch)
        yield {"files": paths, "batches": batches, "dataset": datasets.describe(paths, args.data_dir)}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        ds = data["dataset"]
        counts = {(h, w): 0 for _, h, w in BUCKETS}
        for b in data["batches"]:
            counts[(b[0][1], b[0][2])] += len(b)
        mix = ", ".join(f"{n} {h}×{w}: {counts[(h, w)]}" for n, h, w in BUCKETS)
        return (
            f"{ds['images']} JPEGs (short side {ds['short_side_min']}–{ds['short_side_max']}) in {len(data['batches'])} bucket batches "
            f"of up to {cfg['batch']} ({mix}): decode RGB → resize to the record's bucket (bilinear, antialiased) → normalize "
            f"mean=std=0.5 → CHW float32"
        )
