"""The image workload: the spec's first pipeline against its peers.

Every candidate reads the same JPEG files on the same cores and does the
same work: decode to RGB -> resize the short side to 256 (bilinear,
antialiased) -> center crop 224x224 -> normalize with the ImageNet mean/std
-> CHW float32 -> batches of 64 handed to torch.

  dataio          the spec's first pipeline, ``run("torch")`` (``concurrency="auto"``: 64 here)
  torch           torch.utils.data.DataLoader, PIL + torchvision transforms,
                  num_workers = cores, persistent workers
  torchvision-io  the same DataLoader, decoding with torchvision.io.decode_jpeg
                  and transforming uint8 tensors (transforms.v2)
  spdl            SPDL: FFmpeg demux/decode with a scale+crop filter on a
                  thread pipeline, torch normalizes each batch
  dali            NVIDIA DALI CPU pipeline (device_id=None)
  ray             Ray Data: map_batches (PIL + torchvision) over the paths,
                  iter_torch_batches, num_cpus = cores
  decode-only     the limit: simplejpeg (libjpeg-turbo) full-size decode of the
                  same files on ``cores`` threads; no resize, no batches
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import datasets
from .harness import Cell, Unavailable, need
from .workloads import DataioCell, Workload

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CROP = 224
SHORT = 256


class ImageCell(Cell):
    """Batches are (<= batch, 3, 224, 224) float32 torch tensors; the digest is the per-channel sum."""

    def expected(self) -> int:
        return len(self.data["files"])

    def tensor(self, b: Any) -> Any:
        return b

    #: the (h, w) sizes a batch may have
    SIZES: frozenset[tuple[int, int]] = frozenset({(CROP, CROP)})

    def count(self, b: Any) -> int:
        import torch

        x = self.tensor(b)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"batch is {type(x).__name__}, not a torch.Tensor")
        if x.dtype != torch.float32 or x.dim() != 4 or x.shape[1] != 3 or tuple(x.shape[2:]) not in self.SIZES or not 0 < x.shape[0] <= self.batch:
            raise AssertionError(f"batch is {tuple(x.shape)} {x.dtype}, expected (<= {self.batch}, 3, h, w) float32 with (h, w) in {sorted(self.SIZES)}")
        return int(x.shape[0])

    def digest(self, b: Any) -> list[float]:
        import torch

        x = self.tensor(b)
        chan = x.sum(dim=(2, 3), dtype=torch.float64).sum(dim=0) / (x.shape[2] * x.shape[3])
        return [float(v) for v in chan]

    def sample_means(self, b: Any) -> list[float]:
        return [float(v) for v in self.tensor(b).mean(dim=(1, 2, 3))]


class DataioImage(DataioCell, ImageCell):
    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(
            dataio.slot("image").decode_image(mode="rgb").resize_short(SHORT).center_crop(h=CROP, w=CROP).normalize("imagenet"),
            dataio.batch(self.batch, prefetch=self.cfg["prefetch"]),
        )

    def records(self) -> Any:
        return [{"image": f} for f in self.data["files"]]

    def tensor(self, b: Any) -> Any:
        return b["image"]


class _TorchLoader(ImageCell):
    """A torch DataLoader over a map-style dataset of the files."""

    def dataset(self) -> Any:
        raise NotImplementedError

    def batching(self) -> dict[str, Any]:
        """How the DataLoader forms batches (in file order, ``batch`` at a time)."""
        return {"batch_size": self.batch, "shuffle": False}

    def start(self) -> None:
        import torch

        pf = self.cfg["torch_prefetch_factor"]
        self.loader = torch.utils.data.DataLoader(
            self.dataset(), **self.batching(), num_workers=self.cores, pin_memory=False, persistent_workers=True, prefetch_factor=pf
        )
        self.info = {"num_workers": self.cores, "prefetch_factor": pf, "persistent_workers": True}

    def epoch(self) -> Iterator[Any]:
        yield from self.loader

    def close(self) -> None:
        it = getattr(self.loader, "_iterator", None)
        if it is not None:
            it._shutdown_workers()


class TorchPIL(_TorchLoader):
    LABEL = "torch DataLoader + PIL/torchvision"
    MODULES = ("torch", "torch.utils.data", "torchvision.transforms", "PIL.Image")
    HINT = "uv pip install torch==2.9.1 torchvision==0.24.1 pillow"

    def dataset(self) -> Any:
        import torch
        from PIL import Image
        from torchvision import transforms as T

        tf = T.Compose(
            [T.Resize(SHORT, interpolation=T.InterpolationMode.BILINEAR, antialias=True), T.CenterCrop(CROP), T.ToTensor(), T.Normalize(MEAN, STD)]
        )
        files = self.data["files"]

        class Files(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return len(files)

            def __getitem__(self, i: int) -> Any:
                with Image.open(files[i]) as im:
                    return tf(im.convert("RGB"))

        return Files()


class TorchvisionIO(_TorchLoader):
    LABEL = "torch DataLoader + torchvision.io"
    MODULES = ("torch", "torch.utils.data", "torchvision.io", "torchvision.transforms.v2")
    HINT = "uv pip install torch==2.9.1 torchvision==0.24.1"

    def dataset(self) -> Any:
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg, read_file
        from torchvision.transforms import v2

        tf = v2.Compose([v2.Resize(SHORT, antialias=True), v2.CenterCrop(CROP), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
        files = self.data["files"]

        class Files(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return len(files)

            def __getitem__(self, i: int) -> Any:
                return tf(decode_jpeg(read_file(files[i]), mode=ImageReadMode.RGB))

        return Files()


class Spdl(ImageCell):
    LABEL = "SPDL (FFmpeg)"
    MODULES = ("torch", "spdl.io", "spdl.pipeline")
    HINT = "uv pip install spdl-core spdl-io; apt-get install -y libavcodec59 libavformat59 libavfilter8 libswscale6 libavdevice59"
    # FFmpeg filter: scale so that the short side is 256 (the other side keeps
    # the aspect ratio), bilinear (swscale widens the kernel when shrinking,
    # i.e. antialiased), center crop 224x224 (crop's default is centered), RGB.
    FILTER = f"scale=w={SHORT}:h={SHORT}:force_original_aspect_ratio=increase:flags=bilinear,crop=w={CROP}:h={CROP},format=pix_fmts=rgb24"

    def load(self) -> None:
        super().load()
        io = need("spdl.io", self.HINT)
        try:  # FFmpeg is loaded lazily; make a missing library show up here.
            io.decode_packets(io.demux_image(self.data["files"][0]), filter_desc=self.FILTER)
        except Exception as e:
            raise Unavailable(f"SPDL cannot decode with FFmpeg: {type(e).__name__}: {e} (install: {self.HINT})") from e

    def start(self) -> None:
        import torch
        from spdl import io
        from spdl.pipeline import PipelineBuilder

        self.PipelineBuilder = PipelineBuilder
        scale = (1.0 / (255.0 * torch.tensor(STD))).view(1, 3, 1, 1)
        bias = (-torch.tensor(MEAN) / torch.tensor(STD)).view(1, 3, 1, 1)
        filt = self.FILTER

        def decode(path: str) -> Any:
            return io.decode_packets(io.demux_image(path), filter_desc=filt)

        def to_batch(frames: Any) -> Any:
            hwc = io.to_torch(io.convert_frames(frames))  # (N, 224, 224, 3) uint8
            out = torch.empty((hwc.shape[0], 3, CROP, CROP), dtype=torch.float32)
            out.copy_(hwc.permute(0, 3, 1, 2))
            return out.mul_(scale).add_(bias)

        self.decode, self.to_batch = decode, to_batch
        self.info = {"num_threads": self.cores, "decode_concurrency": self.cores, "sink_buffer": self.cfg["prefetch"], "filter": self.FILTER}

    def epoch(self) -> Iterator[Any]:
        # An SPDL pipeline is one pass over its source: one per epoch.
        pipe = (
            self.PipelineBuilder()
            .add_source(self.data["files"])
            .pipe(self.decode, concurrency=self.cores, output_order="input")
            .aggregate(self.batch)
            .pipe(self.to_batch)
            .add_sink(self.cfg["prefetch"])
            .build(num_threads=self.cores)
        )
        with pipe.auto_stop():
            yield from pipe.get_iterator(timeout=600)


class Dali(ImageCell):
    LABEL = "DALI (CPU)"
    MODULES = ("torch", "nvidia.dali", "nvidia.dali.plugin.pytorch")
    HINT = "uv pip install nvidia-dali-cuda120"

    def start(self) -> None:
        import nvidia.dali.plugin.pytorch as plugin
        from nvidia import dali

        fn, types = dali.fn, dali.types
        files = self.data["files"]

        @dali.pipeline_def(batch_size=self.batch, num_threads=self.cores, device_id=None, prefetch_queue_depth=self.cfg["prefetch"])
        def pipe():  # type: ignore[no-untyped-def]
            jpegs, _ = fn.readers.file(files=files, name="Reader", random_shuffle=False, pad_last_batch=True)
            img = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            img = fn.resize(img, resize_shorter=SHORT, interp_type=types.INTERP_LINEAR, antialias=True)
            return fn.crop_mirror_normalize(
                img, crop=(CROP, CROP), mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD], dtype=types.FLOAT, output_layout="CHW"
            )

        p = pipe()
        p.build()
        self.info = {"num_threads": self.cores, "prefetch_queue_depth": self.cfg["prefetch"]}
        self.it = plugin.DALIGenericIterator(p, ["image"], reader_name="Reader", last_batch_policy=plugin.LastBatchPolicy.PARTIAL, auto_reset=True)

    def epoch(self) -> Iterator[Any]:
        for out in self.it:
            yield out[0]["image"]


def ray_transform(batch: dict[str, Any]) -> dict[str, Any]:
    """Ray Data's map_batches function (module level: Ray workers import it by name)."""
    import numpy as np
    from PIL import Image
    from torchvision import transforms as T

    tf = T.Compose([T.Resize(SHORT, interpolation=T.InterpolationMode.BILINEAR, antialias=True), T.CenterCrop(CROP), T.ToTensor(), T.Normalize(MEAN, STD)])
    out = []
    for p in batch["path"]:
        with Image.open(str(p)) as im:
            out.append(tf(im.convert("RGB")).numpy())
    return {"image": np.stack(out)}


class Ray(ImageCell):
    LABEL = "Ray Data"
    MODULES = ("torch", "ray", "ray.data", "PIL.Image", "torchvision.transforms")
    HINT = "uv pip install 'ray[data]'"
    SWEEP = False  # starting a local cluster and its workers takes 20-60 s per cell

    def start(self) -> None:
        import ray
        import ray.data

        ray.init(num_cpus=self.cores, include_dashboard=False, log_to_driver=False, object_store_memory=512 * 2**20, configure_logging=False)
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True  # the output check compares images in file order
        ctx.enable_progress_bars = False
        items = [{"path": p} for p in self.data["files"]]
        self.ds = ray.data.from_items(items).map_batches(ray_transform, batch_size=self.batch, batch_format="numpy")
        self.info = {"num_cpus": self.cores, "map_batches_batch_size": self.batch, "preserve_order": True}

    def epoch(self) -> Iterator[Any]:
        for b in self.ds.iter_torch_batches(batch_size=self.batch, prefetch_batches=self.cfg["prefetch"]):
            yield b["image"]

    def close(self) -> None:
        import ray

        ray.shutdown()


class DecodeOnly(ImageCell):
    """Full-size libjpeg-turbo decode on ``cores`` threads; yields batch-sized groups of shapes."""

    LABEL = "decode-only limit (simplejpeg)"
    MODULES = ("simplejpeg",)
    HINT = "uv pip install simplejpeg"
    USES_TORCH = False  # its memory stays its own

    def start(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import simplejpeg

        self.sj = simplejpeg
        self.pool = ThreadPoolExecutor(self.cores)
        self.info = {"threads": self.cores}

    def epoch(self) -> Iterator[Any]:
        sj = self.sj

        def decode(path: str) -> Any:
            with open(path, "rb") as f:
                data = f.read()
            return sj.decode_jpeg(data, colorspace="RGB").shape

        group = []
        for shape in self.pool.map(decode, self.data["files"]):
            group.append(shape)
            if len(group) == self.batch:
                yield group
                group = []
        if group:
            yield group

    def count(self, b: Any) -> int:
        return len(b)

    def digest(self, b: Any) -> list[float]:
        return []

    def sample_means(self, b: Any) -> list[float]:
        return []

    def close(self) -> None:
        self.pool.shutdown()


class ImageWorkload(Workload):
    name = "image"
    title = "image pipeline"
    limits = ("decode-only",)
    tol = 0.03  # normalized units: ~1.7 grey levels of per-channel mean
    relative = False

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioImage, "torch": TorchPIL, "torchvision-io": TorchvisionIO, "spdl": Spdl, "dali": Dali, "ray": Ray, "decode-only": DecodeOnly}

    def peers(self) -> list[str]:
        return ["torch", "torchvision-io", "spdl", "dali", "ray"]

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 64, "torch_prefetch_factor": args.torch_prefetch_factor}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        try:
            paths = datasets.build_images(args.images, args.data_dir)
        except ImportError as e:
            raise Unavailable(f"making the JPEGs needs scikit-image and pillow ({e}); they are in the bench dependency group") from e
        for p in paths:  # a warm page cache for every candidate alike
            with open(p, "rb") as f:
                f.read()
        yield {"files": paths, "dataset": datasets.describe(paths, args.data_dir)}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        ds = data["dataset"]
        return (
            f"{ds['images']} JPEGs ({ds['total_mb']} MB, short side {ds['short_side_min']}–{ds['short_side_max']}, "
            f"{ds['mean_megapixels']} MP on average, quality {ds['quality_range'][0]}–{ds['quality_range'][1]}): decode RGB → "
            f"resize short side {SHORT} (bilinear, antialiased) → center crop {CROP} → normalize ImageNet → CHW float32, "
            f"batches of {cfg['batch']}"
        )
