"""Datasets in shards: dataio's shard source against webdataset, MosaicML Streaming and LitData, in one run.

    python benchmarks/shards.py [--samples 4000] [--shards 40] [--window 1000] [--buffer 1000]
                                [--wide-window 8192] [--workers 2] [--batch 64] [--epochs 2]
                                [--repeat 1] [--remote nginx] [--nginx-workers 1]
                                [--only NAMES] [--data DIR] [--quick] [--json PATH]

Every candidate reads **the same samples**: ``--samples`` JPEGs cut from
scikit-image's photographs (astronaut, coffee, chelsea, rocket; smooth
random gradients when scikit-image is missing), 200–500 px per side, written
with ``webdataset.TarWriter`` into ``--shards`` WebDataset tar shards in
storage order, each sample ``{"__key__": "SSSS/GGGGGG", "jpg": ..., "cls":
b"d"}``: the key holds the shard and the sample's global storage index, so the
order a loader delivers can be scored against the order on disk. The tar set
is made once and cached under ``--data`` (default
``/tmp/dataio-shards-bench``); the peers' formats are written from it, in the
same order, next to it when those peers are selected and importable:

* ``mds/`` — MosaicML Streaming's MDS (``streaming.MDSWriter(columns={"key":
  "str", "jpg": "bytes", "cls": "int"}, size_limit=<twice the largest tar
  shard>)``), a new MDS shard started at every tar shard's boundary
  (``flush_shard()``), so the MDS set has the tar set's shards and counts;
* ``litdata/`` — LitData chunks (``litdata.optimize(fn, inputs=<shard
  numbers>, chunk_size=ceil(samples / shards), num_workers=1,
  reorder_files=False)``, ``fn`` yielding a shard's samples as ``{"key": str,
  "jpg": bytes, "cls": int}``): the tar set's layout when ``--shards``
  divides ``--samples``, about as many chunks otherwise.

The files are read once before the first run (a warm page cache: locally
this measures the loaders' CPU work, not the disk; remotely the store answers
from memory).

**Where the shards live.** By default (local) every candidate reads the files
in place. ``--remote nginx`` serves the dataset folder from nginx on
127.0.0.1 (a child process on a free port, ``dataio.bench.nginx``: it answers
path-style S3 GETs, ranged GETs and HEADs of files under its root and ignores
signatures; Debian's ``apt-get install nginx``) as the bucket ``bench``:
dataio reads ``s3://bench/train-{0000..N}.tar`` (``configure_endpoint("s3",
ENDPOINT)``, dummy keys, the dataio-s3 plugin) with its shard cache and index
under a temp folder; webdataset reads ``ENDPOINT/bench/train-NNNN.tar`` over
HTTP (its ``curl`` pipe); Streaming gets ``remote="s3://bench/mds"`` with
``S3_ENDPOINT_URL=ENDPOINT`` (boto3) and a temp ``local``; LitData gets
``input_dir="s3://bench/litdata"`` with ``storage_options={"endpoint_url":
ENDPOINT, <dummy keys>}`` and a temp ``cache_dir``. nginx's access log
(``$body_bytes_sent`` of every request) gives the bytes each epoch fetched
from the store.

**Epochs.** Every candidate runs ``--epochs`` epochs (default 2) with one
loader, as a training loop does; each is measured on its own. Epoch 1 is
**cold**: before it the candidate's caches are emptied (dataio: its shard
index, and remotely its shard cache; Streaming: a fresh ``local`` remotely;
LitData: a fresh ``cache_dir``), and its time covers building the source
(dataio indexes the shards here: it reads every shard once, into the cache
when remote), the loader and its workers. Epoch 2 is **warm**: the same
loader iterated again (its next epoch and seed state, whatever caches epoch 1
filled; the torch DataLoaders start their workers again, as they do by
default).

Candidates (all do the same work per sample: decode the JPEG to RGB, resize
the short side to 160 (bilinear, antialiased), center-crop 128×128, normalize
with the ImageNet mean/std to float32 CHW, batches of ``--batch``):

* ``storage`` — dataio without a seed: the shards in storage order, no
  shuffle. The quality reference (what "not shuffled" scores), not a
  competitor.
* ``dataio`` — ``dataio.tar_records(urls, shuffle_window=--window)`` through
  ``slot("jpg").decode_image(mode="rgb").resize_short(160).center_crop(h=128,
  w=128).normalize("imagenet")``, ``slot("cls").decode_bytes()``,
  ``batch(--batch)``, ``run("torch", seed=0)``; its CPU pool has every usable
  core. The headline row.
* ``dataio-wide`` — the same with ``shuffle_window=--wide-window`` (dataio's
  default window, 8192).
* ``dataio-full-decode`` — ``dataio`` with ``decode_image(...,
  dct_scaling=False)``: every JPEG decoded at full size, as PIL does below
  (dataio's default decodes at 1/2, 1/4, ... in the DCT when the result is
  still at least the size the resize asks for).
* ``webdataset`` — ``wds.WebDataset(urls, shardshuffle=len(urls),
  detshuffle=True, seed=0).shuffle(--buffer, seed=0).decode("pil")
  .to_tuple("__key__", "jpg", "cls").map_tuple(None, transform, None)``
  under ``torch.utils.data.DataLoader(batch_size=--batch,
  num_workers=--workers)``; ``transform`` is PIL + numpy: ``resize`` of the
  short side to 160 (``BILINEAR``, which antialiases when shrinking),
  center crop 128, ``(x / 255 - mean) / std`` → float32 CHW. webdataset
  splits the shards between the workers, shuffles the shard order (a buffer
  of all shards) and then samples in a buffer of ``--buffer`` (yielding from
  100 on, its default ``initial``); the DataLoader hands out the workers'
  batches in turn. ``--window`` and ``--buffer`` are equal by default, so both
  shuffle with the same number of samples held. It has no cache: every epoch
  reads the shards again.
* ``streaming`` — MosaicML Streaming: a ``streaming.StreamingDataset``
  subclass whose ``__getitem__`` decodes ``jpg`` with PIL (as webdataset's
  ``"pil"`` decoder: ``open``, ``load``, ``convert("RGB")``) and applies the
  same ``transform``; ``StreamingDataset(local=..., remote=...,
  shuffle=True, shuffle_algo="py1e", shuffle_seed=0,
  shuffle_block_size=--window, batch_size=--batch)`` (remotely also
  ``cache_limit=<4× the dataset>``) under ``torch.utils.data.DataLoader(batch_size=
  --batch, num_workers=--workers)``. Locally ``local`` is the MDS folder and
  there is no remote (Streaming reads the shards in place).
* ``litdata`` — ``litdata.StreamingDataset(input_dir=..., cache_dir=<temp>,
  shuffle=True, seed=0, transform=<PIL decode + transform>)`` under
  ``litdata.StreamingDataLoader(batch_size=--batch, num_workers=--workers)``;
  LitData shuffles the chunk order and the items inside each chunk (its
  default ``item_shuffle_window``, 256) and gives each worker its own chunks.

Columns (one table per epoch; with ``--repeat N`` the candidates take turns,
N rounds, each round cold then warm, and rates and times are medians; quality
is from the first round):

* ``samples/s`` — samples delivered ÷ wall time from the start of the epoch
  (epoch 1: building the source and loader; epoch 2: asking the loader for
  its next epoch) to its last batch (first-batch time included), the consumer
  only recording each batch's keys, labels and per-image channel means;
  ``× wds``: this ÷ webdataset's in the same epoch.
* ``first batch s`` — the start of the epoch to the first batch in hand.
* ``cpu s`` — CPU time of this process and of its reaped children (the
  DataLoader workers and what they ran) during the epoch; not nginx's.
* ``store MB`` — with ``--remote``: bytes nginx sent during the epoch (the
  bodies of all requests), and ``req`` how many requests it answered.
* ``shards/batch`` — distinct (tar) shards in a full batch, mean over the
  epoch (higher mixes better; the line under the table gives what a uniform
  shuffle of the whole dataset gets).
* ``|rho|`` — |Spearman rank correlation| between the delivery position and
  the storage index of every sample (0: no trace of the storage order left,
  1: storage order). With few shards the random order of the shards alone
  leaves a |rho| of order 1/sqrt(shards), different in every seed; the line
  under the table gives the mean |rho| of shards in a random order, unmixed.
* ``once`` — every sample delivered exactly once (the script fails if not).
* ``Δmean`` — largest difference of a per-image channel mean from the
  ``storage`` row's epoch 1 (the same image, by key), in normalized units:
  whether the candidate computes the same thing (resamplers and DCT scaling
  differ a little); ``labels``: a label that did not travel with its image
  fails the run.
* ``new order`` (epochs after the first) — whether the epoch's delivery order
  differs from epoch 1's.

A peer that is not installed (or that cannot be pointed at the local store)
gets an UNAVAILABLE row saying why; the others still run. The peers are not
in the project's environments: install them into a separate virtualenv that
also sees dataio's (``docs/benchmark.md``, "Datasets in shards").
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import platform
import shutil
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
SIDE = (200, 500)  # each side of a stored image, px
SHORT, CROP = 160, 128
DATA_VERSION = 1
CANDIDATES = ("storage", "dataio", "dataio-wide", "dataio-full-decode", "webdataset")
SOURCES = ("astronaut", "coffee", "chelsea", "rocket")


# -- the data -----------------------------------------------------------------


def _sources() -> list[np.ndarray] | None:
    """The source photographs (HxWx3 uint8), or None without scikit-image."""
    try:
        from skimage import data
    except ImportError:
        return None
    out = []
    for name in SOURCES:
        try:
            img = getattr(data, name)()
        except (ImportError, OSError, ValueError, AttributeError):  # missing here, or needs a download
            continue
        out.append(np.ascontiguousarray(img[..., :3]))
    return out or None


def _photo(rng: np.random.Generator, src: np.ndarray, w: int, h: int) -> Any:
    """A random crop of ``src`` with the aspect ratio of w×h, scaled to w×h."""
    from PIL import Image

    H, W = src.shape[:2]
    aspect = w / h
    cw_max = min(W, H * aspect)
    scale = rng.uniform(0.5, 1.0)
    cw = max(16, int(cw_max * scale))
    ch = max(16, min(H, int(cw / aspect)))
    x0 = int(rng.integers(0, W - cw + 1))
    y0 = int(rng.integers(0, H - ch + 1))
    img = Image.fromarray(src[y0 : y0 + ch, x0 : x0 + cw]).resize((w, h), Image.Resampling.BILINEAR)
    if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return img


def _gradient(rng: np.random.Generator, w: int, h: int) -> Any:
    """A smooth random image: per-channel linear ramps plus low-frequency waves."""
    from PIL import Image

    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    xx /= w
    yy /= h
    chans = []
    for _ in range(3):
        a, b, c = rng.uniform(-1, 1, 3)
        fx, fy, ph = rng.uniform(0.5, 4), rng.uniform(0.5, 4), rng.uniform(0, 2 * np.pi)
        v = 0.5 + 0.3 * (a * xx + b * yy) + 0.2 * c * np.sin(2 * np.pi * (fx * xx + fy * yy) + ph)
        chans.append(v)
    arr = np.clip(np.stack(chans, axis=-1) * 255, 0, 255).astype(np.uint8)
    return Image.fromarray(arr)


def make_dataset(root: Path, n: int, shards: int, seed: int = 0) -> dict[str, Any]:
    """Writes (or finds cached) ``n`` samples in ``shards`` tar shards under
    ``root``; returns the manifest (urls, counts, how the images were made)."""
    folder = root / f"n{n}-s{shards}"
    manifest = folder / "manifest.json"
    if manifest.exists():
        info = json.loads(manifest.read_text())
        if info.get("version") == DATA_VERSION and all(Path(u).exists() for u in info["urls"]):
            info["built_s"] = 0.0
            return info
    import webdataset as wds

    t = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    srcs = _sources()
    width = max(6, len(str(n - 1)))
    per = [n // shards + (1 if s < n % shards else 0) for s in range(shards)]
    urls, nbytes, g = [], 0, 0
    for s, count in enumerate(per):
        path = folder / f"train-{s:04d}.tar"
        tmp = path.with_suffix(".tar.tmp")
        with wds.TarWriter(str(tmp)) as sink:
            for _ in range(count):
                rng = np.random.default_rng([seed, g])
                w, h = (int(v) for v in rng.integers(SIDE[0], SIDE[1] + 1, size=2))
                img = _photo(rng, srcs[int(rng.integers(len(srcs)))], w, h) if srcs else _gradient(rng, w, h)
                buf = io.BytesIO()
                img.save(buf, format="JPEG", quality=int(rng.integers(75, 96)))
                jpg = buf.getvalue()
                nbytes += len(jpg)
                sink.write({"__key__": f"{s:04d}/{g:0{width}d}", "jpg": jpg, "cls": str(g % 10).encode()})
                g += 1
        os.replace(tmp, path)
        urls.append(str(path))
    info = {
        "version": DATA_VERSION, "samples": n, "shards": shards, "counts": per, "urls": urls,
        "content": f"skimage photos {','.join(SOURCES)}" if srcs else "smooth random gradients",
        "jpeg_bytes": nbytes, "pattern": str(folder / f"train-{{0000..{shards - 1:04d}}}.tar"),
    }
    manifest.write_text(json.dumps(info, indent=2))
    info["built_s"] = time.perf_counter() - t
    return info


def warm_page_cache(urls: list[str]) -> int:
    total = 0
    for u in urls:
        with open(u, "rb") as f:
            while chunk := f.read(1 << 22):
                total += len(chunk)
    return total


# -- the candidates -------------------------------------------------------------
# Each is a generator of (keys, images [B,3,128,128] float32 tensor, labels as ints).
# Nothing is built before the first next(): the first batch's time covers it all.


def _dataio_labels(cls: Any) -> list[int]:
    """``decode_bytes`` of b"7" is a uint8 tensor of the bytes; back to ints."""
    rows = cls if isinstance(cls, list) else list(cls)
    return [int(bytes(np.asarray(r, dtype=np.uint8).reshape(-1)).decode()) for r in rows]


def dataio_batches(cfg: Config, window: int, seed: int | None, dct_scaling: bool = True) -> Iterator[tuple[list[str], Any, list[int]]]:
    import dataio

    recs = dataio.tar_records(cfg.pattern, shuffle_window=window, index_dir=str(cfg.index_dir))
    pipe = dataio.pipeline(
        dataio.slot("jpg").decode_image(mode="rgb", dct_scaling=dct_scaling)
        .resize_short(SHORT).center_crop(h=CROP, w=CROP).normalize("imagenet"),
        dataio.slot("cls").decode_bytes(),
        dataio.batch(cfg.batch),
    )
    opts: dict[str, Any] = {} if seed is None else {"seed": seed}
    with pipe.bind(recs).run("torch", **opts) as loader:
        for batch in loader:
            yield list(batch.keys), batch["jpg"], _dataio_labels(batch["cls"])


def pil_transform(img: Any) -> np.ndarray:
    """The dataio chain in PIL + numpy: short side to 160 (long side truncated,
    as dataio's ``resize_short``), center crop 128, ImageNet-normalized float32 CHW."""
    from PIL import Image

    w, h = img.size
    if w <= h:
        nw, nh = SHORT, int(h * SHORT / w)
    else:
        nw, nh = int(w * SHORT / h), SHORT
    img = img.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = (nw - CROP) // 2, (nh - CROP) // 2
    img = img.crop((left, top, left + CROP, top + CROP))
    x = np.asarray(img, dtype=np.float32) * (1 / 255)
    x = (x - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def webdataset_batches(cfg: Config, seed: int) -> Iterator[tuple[list[str], Any, list[int]]]:
    import webdataset as wds
    from torch.utils.data import DataLoader

    ds = (
        wds.WebDataset(cfg.urls, shardshuffle=len(cfg.urls), detshuffle=True, seed=seed)
        .shuffle(cfg.buffer, seed=seed)
        .decode("pil")
        .to_tuple("__key__", "jpg", "cls")
        .map_tuple(None, pil_transform, None)
    )
    loader = DataLoader(ds, batch_size=cfg.batch, num_workers=cfg.workers)
    for keys, images, labels in loader:
        yield list(keys), images, labels.tolist()


# -- measuring ------------------------------------------------------------------


@dataclass
class Config:
    urls: list[str]
    pattern: str
    counts: list[int]
    index_dir: Path
    batch: int
    window: int
    wide_window: int
    buffer: int
    workers: int


@dataclass
class Epoch:
    samples: int
    seconds: float
    first_batch: float
    cpu: float
    order: np.ndarray  # storage index of each delivered sample, in delivery order
    shards_per_batch: list[int]
    means: dict[str, np.ndarray]  # key -> per-channel mean of the image
    labels: dict[str, int]


@dataclass
class Row:
    name: str
    what: str
    run: Callable[[], Iterator[tuple[list[str], Any, list[int]]]]
    epochs: list[Epoch] = field(default_factory=list)
    error: str | None = None


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def parse_key(key: str) -> tuple[int, int]:
    shard, g = key.rsplit("/", 1)
    return int(shard), int(g)


def one_epoch(make: Callable[[], Iterator[tuple[list[str], Any, list[int]]]], batch: int) -> Epoch:
    order: list[int] = []
    shards_per_batch: list[int] = []
    means: dict[str, np.ndarray] = {}
    labels: dict[str, int] = {}
    first = None
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    it = make()
    for keys, images, labs in it:
        if first is None:
            first = time.perf_counter() - t0
        parsed = [parse_key(k) for k in keys]
        order.extend(g for _, g in parsed)
        if len(keys) == batch:
            shards_per_batch.append(len({s for s, _ in parsed}))
        m = images.mean(dim=(2, 3)).numpy()
        for k, mk, lab in zip(keys, m, labs):
            means[k] = mk
            labels[k] = int(lab)
    dt = time.perf_counter() - t0
    del it  # the DataLoader's workers are gone (and reaped) by now
    return Epoch(len(order), dt, first if first is not None else dt, cpu_seconds() - c0,
                 np.asarray(order, dtype=np.int64), shards_per_batch, means, labels)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of two equal-length sequences (average ranks for ties)."""

    def ranks(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        idx = np.argsort(x, kind="mergesort")
        r = np.empty(len(x), dtype=np.float64)
        r[idx] = np.arange(len(x), dtype=np.float64)
        _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
        if (counts > 1).any():  # ties: every member of a tie gets the tie's mean rank
            r = (np.bincount(inv, weights=r) / counts)[inv]
        return r

    ra, rb = ranks(a), ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denom = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / denom) if denom else float("nan")


def uniform_shards_per_batch(counts: list[int], batch: int) -> float:
    """Expected distinct shards in a batch drawn uniformly without replacement
    from the whole dataset (a perfect shuffle)."""
    n = sum(counts)
    total = 0.0
    for m in counts:
        p_absent = 1.0
        for j in range(min(batch, n)):
            p_absent *= max(0.0, (n - m - j) / (n - j))
        total += 1.0 - p_absent
    return total


def shard_order_rho(counts: list[int], trials: int = 200, seed: int = 0) -> float:
    """Mean |Spearman rho| when the shards come in a uniformly random order and
    each is read front to back (no mixing of samples at all): with few shards
    this alone leaves |rho| well above 0, so compare against it."""
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = []
    for _ in range(trials):
        perm = rng.permutation(len(counts))
        order = np.concatenate([np.arange(starts[s], starts[s] + counts[s]) for s in perm])
        out.append(abs(spearman(np.arange(len(order)), order)))
    return float(np.mean(out))


def quality(ep: Epoch, n: int, ref: Epoch | None) -> dict[str, Any]:
    counts = np.bincount(ep.order, minlength=n) if len(ep.order) else np.zeros(n, dtype=np.int64)
    missing, dups = int((counts == 0).sum()), int((counts > 1).sum())
    out: dict[str, Any] = {
        "delivered": int(len(ep.order)), "missing": missing, "duplicated": dups,
        "exactly_once": bool(missing == 0 and dups == 0 and len(ep.order) == n),
        "shards_per_batch": float(np.mean(ep.shards_per_batch)) if ep.shards_per_batch else float("nan"),
        "spearman_rho": spearman(np.arange(len(ep.order)), ep.order) if len(ep.order) > 1 else float("nan"),
        "max_abs_mean_diff": None, "label_mismatches": None,
    }
    if ref is not None:
        common = [k for k in ep.means if k in ref.means]
        if common:
            out["max_abs_mean_diff"] = float(max(np.abs(ep.means[k] - ref.means[k]).max() for k in common))
            out["label_mismatches"] = sum(ep.labels[k] != ref.labels[k] for k in common)
    return out


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for mod in ("dataio", "webdataset", "torch", "pillow", "numpy", "scikit-image"):
        try:
            out[mod] = importlib.metadata.version(mod)
        except importlib.metadata.PackageNotFoundError:
            out[mod] = None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=4000, help="images in the dataset (default 4000)")
    ap.add_argument("--shards", type=int, default=40, help="tar shards they are written into (default 40)")
    ap.add_argument("--window", type=int, default=1000, help="dataio's shuffle_window (default 1000)")
    ap.add_argument("--wide-window", type=int, default=8192, help="the dataio-wide row's window (default 8192)")
    ap.add_argument("--buffer", type=int, default=1000, help="webdataset's .shuffle() buffer (default 1000)")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers for webdataset (default 2)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="rounds; the candidates take turns in each")
    ap.add_argument("--only", help=f"comma-separated candidates to run, of {','.join(CANDIDATES)}; default all")
    ap.add_argument("--data", default="/tmp/dataio-shards-bench", help="where the shards are cached")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (512 samples, 8 shards, windows 256): a smoke test")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    if args.quick:
        args.samples, args.shards, args.window, args.buffer, args.wide_window = 512, 8, 256, 256, 1024
    if args.samples < 1 or not 1 <= args.shards <= args.samples:
        ap.error("need 1 <= --shards <= --samples")
    only = [w.strip() for w in args.only.split(",") if w.strip()] if args.only else list(CANDIDATES)
    unknown = [w for w in only if w not in CANDIDATES]
    if unknown:
        ap.error(f"unknown candidates {unknown}; known: {', '.join(CANDIDATES)}")

    warnings.filterwarnings("ignore", module="webdataset")
    import torch  # imported before any timing

    import dataio

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    vers = versions()
    print(f"host: {platform.processor() or platform.machine()}, {cpus} usable cores, load {load:.2f}; "
          f"python {platform.python_version()}; torch threads {torch.get_num_threads()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v), flush=True)

    root = Path(args.data)
    info = make_dataset(root, args.samples, args.shards, args.seed)
    n = info["samples"]
    warm = warm_page_cache(info["urls"])
    print(f"data: {n} JPEGs ({info['content']}, {info['jpeg_bytes'] / n / 1000:.1f} KB each on average) in "
          f"{info['shards']} shards, {warm / 1e6:.1f} MB, under {Path(info['urls'][0]).parent} "
          f"({'built in %.1f s' % info['built_s'] if info['built_s'] else 'cached'}; page cache warmed)", flush=True)

    index_dir = Path(info["urls"][0]).parent / "index"
    shutil.rmtree(index_dir, ignore_errors=True)
    t = time.perf_counter()
    recs = dataio.tar_records(info["pattern"], shuffle_window=args.window, index_dir=str(index_dir))
    index_s = time.perf_counter() - t
    if len(recs) != n:
        sys.exit(f"dataio.tar_records found {len(recs)} samples, the dataset has {n}")
    del recs
    print(f"dataio index build (one-time, then cached): {index_s:.3f} s", flush=True)

    cfg = Config(info["urls"], info["pattern"], info["counts"], index_dir, args.batch, args.window,
                 args.wide_window, args.buffer, args.workers)
    seed = args.seed
    rows = {
        "storage": Row("storage", "dataio, no seed: storage order (quality reference)",
                       lambda: dataio_batches(cfg, cfg.window, None)),
        "dataio": Row("dataio", f"dataio, shuffle_window={cfg.window}, seed={seed}",
                      lambda: dataio_batches(cfg, cfg.window, seed)),
        "dataio-wide": Row("dataio-wide", f"dataio, shuffle_window={cfg.wide_window}, seed={seed}",
                           lambda: dataio_batches(cfg, cfg.wide_window, seed)),
        "dataio-full-decode": Row("dataio-full-decode", f"dataio, window {cfg.window}, dct_scaling=False",
                                  lambda: dataio_batches(cfg, cfg.window, seed, dct_scaling=False)),
        "webdataset": Row("webdataset", f"wds, shuffle({cfg.buffer}), DataLoader workers={cfg.workers}",
                          lambda: webdataset_batches(cfg, seed)),
    }
    order = [rows[c] for c in CANDIDATES if c in only]
    for r in range(args.repeat):
        for row in order:
            if row.error:
                continue
            try:
                ep = one_epoch(row.run, args.batch)
            except Exception as e:  # a row that fails says why; the others still run
                row.error = f"{type(e).__name__}: {e}"
                print(f"  {row.name}: FAILED — {row.error}", flush=True)
                continue
            row.epochs.append(ep)
            print(f"  [round {r + 1}/{args.repeat}] {row.name:<19} {ep.samples} samples in {ep.seconds:6.2f} s "
                  f"({ep.samples / ep.seconds:7.1f}/s), first batch {ep.first_batch:.3f} s, cpu {ep.cpu:.2f} s",
                  flush=True)

    ref_row = rows["storage"] if rows["storage"].epochs else next((r for r in order if r.epochs), None)
    ref = ref_row.epochs[0] if ref_row else None
    results: dict[str, Any] = {
        "host": {"cores": cpus, "load_at_start": load, "python": platform.python_version()},
        "versions": vers, "args": vars(args),
        "dataset": {k: v for k, v in info.items() if k != "urls"}, "index_build_s": index_s,
        "uniform_shards_per_batch": uniform_shards_per_batch(info["counts"], args.batch),
        "random_shard_order_abs_rho": shard_order_rho(info["counts"]),
        "candidates": {}, "ratios_to_webdataset": {},
    }
    wds_rate = None
    if rows["webdataset"].epochs:
        wds_rate = statistics.median(e.samples / e.seconds for e in rows["webdataset"].epochs)
    failed = False
    print(f"\none epoch each: {n} samples in {info['shards']} shards, batch {args.batch}, "
          f"{cpus} cores (dataio: its CPU pool; webdataset: {args.workers} DataLoader workers)"
          + (f", median of {args.repeat} rounds" if args.repeat > 1 else ""))
    print(f"  {'candidate':<19} {'samples/s':>9} {'× wds':>6} {'first batch s':>13} {'cpu s':>6} "
          f"{'shards/batch':>12} {'|rho|':>6} {'once':>5} {'Δmean':>6}  what")
    for row in order:
        if not row.epochs:
            print(f"  {row.name:<19} FAILED: {row.error}")
            results["candidates"][row.name] = {"error": row.error}
            failed = True
            continue
        rate = statistics.median(e.samples / e.seconds for e in row.epochs)
        first = statistics.median(e.first_batch for e in row.epochs)
        cpu = statistics.median(e.cpu for e in row.epochs)
        q = quality(row.epochs[0], n, ref if row is not ref_row else None)
        ratio = rate / wds_rate if wds_rate else None
        dm = q["max_abs_mean_diff"]
        print(f"  {row.name:<19} {rate:9.1f} {(f'{ratio:.2f}' if ratio else '–'):>6} {first:13.3f} {cpu:6.2f} "
              f"{q['shards_per_batch']:12.2f} {abs(q['spearman_rho']):6.3f} {('yes' if q['exactly_once'] else 'NO'):>5} "
              f"{(f'{dm:.3f}' if dm is not None else '–'):>6}  {row.what}")
        if not q["exactly_once"]:
            failed = True
            print(f"    {row.name}: {q['delivered']} delivered, {q['missing']} missing, {q['duplicated']} more than once")
        if q["label_mismatches"]:
            failed = True
            print(f"    {row.name}: {q['label_mismatches']} labels differ from the reference's for the same key")
        results["candidates"][row.name] = {
            "what": row.what, "samples_per_s": rate, "first_batch_s": first, "cpu_s": cpu,
            "seconds": [e.seconds for e in row.epochs], "first_batch_s_all": [e.first_batch for e in row.epochs],
            **q, "abs_spearman_rho": abs(q["spearman_rho"]),
        }
        if ratio is not None and row.name != "webdataset":
            results["ratios_to_webdataset"][row.name] = ratio
    print(f"  for reference: a uniform shuffle of the whole dataset gets {results['uniform_shards_per_batch']:.2f} "
          f"shards/batch and |rho| ~ 0; the shards in a random order, unmixed, |rho| "
          f"{results['random_shard_order_abs_rho']:.3f} on average")
    if "dataio" in results["ratios_to_webdataset"]:
        print(f"  dataio / webdataset: {results['ratios_to_webdataset']['dataio']:.2f}x samples/s")
    results["load_at_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {results['load_at_end']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
