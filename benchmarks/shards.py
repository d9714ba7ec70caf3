"""Datasets in shards: dataio's shard source against webdataset, MosaicML Streaming and LitData, in one run.

    python benchmarks/shards.py [--samples 4000] [--shards 40] [--window 1000] [--buffer 1000]
                                [--wide-window 8192] [--workers 2] [--batch 64] [--epochs 2]
                                [--repeat 1] [--remote nginx] [--nginx-workers 1]
                                [--only NAMES] [--data DIR] [--quick] [--json PATH]
                                [--hosts 1,2,4,8 [--ranks-per-host 2] [--rank-timeout S]]

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
127.0.0.1 (a child process on a free port, ``dataio_bench.nginx``: it answers
path-style S3 GETs, ranged GETs and HEADs of files under its root and ignores
signatures; Debian's ``apt-get install nginx``) as the bucket ``bench``:
dataio reads ``s3://bench/train-{0000..N}.tar`` (``configure_endpoint("s3",
ENDPOINT)``, dummy keys, the dataio-s3 plugin) with its shard cache and index
under a temp folder; webdataset reads ``ENDPOINT/bench/train-NNNN.tar`` over
HTTP (its ``curl`` pipe); Streaming gets ``remote="s3://bench/mds"`` with
``S3_ENDPOINT_URL=ENDPOINT`` (boto3) and a temp ``local``; LitData gets
``input_dir="s3://bench/litdata"`` with ``storage_options={"endpoint_url":
ENDPOINT, <dummy keys>}`` and a temp ``cache_dir`` (LitData 0.2.76 fetches
chunks with obstore, whose client options it fixes without ``allow_http``
and with no switch, so every GET of an ``http://`` endpoint fails; the script
adds ``allow_http`` to that dict, ``litdata.streaming.downloader.
_OBSTORE_CLIENT_OPTIONS``, and marks the row). nginx's access log
(``$body_bytes_sent`` of every request) gives the bytes each epoch fetched
from the store; requests it could not answer are listed at the end (nginx
cannot list a bucket: dataio's one listing of a folder of 8 or more shards
gets a 403, and dataio then asks for each shard with a HEAD).

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
  core. The headline row (the default ``shuffle_spread``, 2).
* ``dataio-spread1`` — ``dataio`` with ``shuffle_spread=1``: shards read one
  after another, the order of versions before the spread (each window holds
  the few consecutive shards it spans).
* ``dataio-wide`` — the same with ``shuffle_window=--wide-window`` (dataio's
  default window, 8192).
* ``dataio-quarter`` — ``dataio`` with ``cache_bytes`` a quarter of the
  dataset (remotely; locally the same as ``dataio``): a cache below the
  working set, as it always is at scale. The epoch completes, each shard is
  fetched about once (those that do not fit beside the open ones are read
  into memory; the loader warns, naming the budget that would fit), and the
  store is asked one HEAD per shard per epoch.
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

**Many hosts** (``--hosts 1,2,4,8``, implies ``--remote nginx``; ``--ranks-per-host``,
default 2): store bytes per epoch (nginx's access log, × the size of the
candidate's own format) and samples/s per host for H simulated hosts. A host
is a group of rank processes (this script with ``--rank-worker``; ranks
numbered host-major, rank = host × ranks_per_host + local rank, with the
variables torchrun sets) that run together and share the host's own, cold
cache folder; one epoch. The hosts run one after another (each has the
machine to itself, and the log says what each fetched), except Streaming's,
which must all be up at once (it starts a gloo group over every rank while it
opens): they run together, each host in a mount namespace with its own
``/dev/shm`` (``unshare -m``, needs root) and its own ``TMPDIR``, so its
samples/s per host are H hosts sharing this machine's cores and do not
compare. dataio's shard index is built once beforehand for every host (not
counted). Candidates: ``dataio`` (``shard={"id": rank, "of": world, "pad":
True, "hosts": H}``: each host reads only its partitions' shards);
``dataio-hosts1`` (the same with ``"hosts": 1``: the old global interleave,
every host fetches every shard); ``webdataset`` (``nodesplitter=
wds.split_by_node`` with ``RANK``/``WORLD_SIZE``: whole shards per rank, no
cache); ``streaming`` (``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``RANK``,
``LOCAL_RANK``; ``local`` = the host's folder); ``litdata`` (``WORLD_SIZE``,
``GLOBAL_RANK``, ``NNODES``; ``cache_dir`` = the host's folder). Columns:
``store MB``/``× data``/``req``, ``samples/s/host`` (a host's samples ÷ the
span from its first rank's start, after imports, to its last rank's last
batch; mean over hosts), ``first batch s`` (median over ranks),
``shards/host`` (distinct shards a host's ranks delivered from),
``shards/batch`` and ``|rho|`` (per rank, against storage order; mean over
ranks), ``once`` (over all ranks: a dataio row that misses a sample fails
the run; a peer's drops are shown, e.g. LitData's ``drop_last``, on by default
with more than one rank). Target: dataio ≤ 1.05× the dataset at every H
(exit 1 if not).

A peer that is not installed (or that cannot be pointed at the local store)
gets an UNAVAILABLE row saying why; the others still run. The peers are not
in the project's environments: install them into a separate virtualenv that
also sees dataio's (``docs/benchmark.md``, "Datasets in shards").
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import io
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
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
PEER_FORMAT_VERSION = 1
CANDIDATES = ("storage", "dataio", "dataio-spread1", "dataio-wide", "dataio-quarter", "dataio-full-decode", "webdataset",
              "streaming", "litdata")
SOURCES = ("astronaut", "coffee", "chelsea", "rocket")
# The remote store: nginx serving the dataset folder as this bucket; the keys
# are dummies (nginx checks no signature), the clients sign with them anyway.
BUCKET = "bench"
ACCESS_KEY = "AKIADATAIOBENCH00001"
SECRET_KEY = "dataio-bench-secret-not-a-real-one-000000"
REGION = "us-east-1"

Batches = Iterator[tuple[list[str], Any, list[int]]]


class PeerUnavailable(RuntimeError):
    """A peer that cannot run here as asked (the row says why)."""


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


def tar_samples(path: str) -> Iterator[dict[str, Any]]:
    """A tar shard's samples in order, as ``{"key": str, "jpg": bytes, "cls":
    int}`` (members grouped by WebDataset's rule: the path up to the first dot
    of the file name)."""
    cur: dict[str, Any] | None = None
    with tarfile.open(path) as tf:
        for m in tf:
            if not m.isfile():
                continue
            d, _, base = m.name.rpartition("/")
            key = (d + "/" if d else "") + base.split(".", 1)[0]
            ext = base.split(".", 1)[1] if "." in base else ""
            if cur is None or cur["key"] != key:
                if cur is not None:
                    yield cur
                cur = {"key": key}
            f = tf.extractfile(m)
            data = f.read() if f is not None else b""
            if ext == "jpg":
                cur["jpg"] = data
            elif ext == "cls":
                cur["cls"] = int(data.decode())
    if cur is not None:
        yield cur


def _peer_marker(info: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    return {"version": PEER_FORMAT_VERSION, "samples": info["samples"], "counts": info["counts"], **extra}


def make_mds(info: dict[str, Any]) -> dict[str, Any]:
    """The tar set as MDS shards under ``DATA/mds`` (cached): one MDS shard per
    tar shard, same samples, same order."""
    import streaming

    folder = Path(info["urls"][0]).parent / "mds"
    marker = folder / "made.json"
    want = _peer_marker(info, {"streaming": importlib.metadata.version("mosaicml-streaming")})
    if marker.exists() and (folder / "index.json").exists():
        have = json.loads(marker.read_text())
        if all(have.get(k) == v for k, v in want.items()):
            return {**have, "built_s": 0.0}
    t = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    limit = 2 * max(os.path.getsize(u) for u in info["urls"]) + (1 << 20)
    with streaming.MDSWriter(out=str(folder), columns={"key": "str", "jpg": "bytes", "cls": "int"},
                             size_limit=limit) as w:
        for u in info["urls"]:
            for s in tar_samples(u):
                w.write(s)
            if w.new_samples:  # start the next MDS shard at the tar shard's boundary
                w.flush_shard()
                w._reset_cache()
    index = json.loads((folder / "index.json").read_text())
    counts = [s["samples"] for s in index["shards"]]
    if sum(counts) != info["samples"]:
        raise RuntimeError(f"MDS has {sum(counts)} samples, the tar set {info['samples']}")
    out = {**want, "mds_counts": counts, "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())}
    marker.write_text(json.dumps(out))
    return {**out, "built_s": time.perf_counter() - t}


def _litdata_shard(urls: list[str], i: int) -> Iterator[dict[str, Any]]:
    yield from tar_samples(urls[i])


def make_litdata(info: dict[str, Any]) -> dict[str, Any]:
    """The tar set as LitData chunks under ``DATA/litdata`` (cached): one
    worker, inputs in order, ``chunk_size`` = ceil(samples / shards)."""
    import litdata

    folder = Path(info["urls"][0]).parent / "litdata"
    marker = folder.parent / "litdata-made.json"  # litdata wants its output folder to itself
    n, shards = info["samples"], info["shards"]
    chunk = math.ceil(n / shards)
    want = _peer_marker(info, {"litdata": importlib.metadata.version("litdata"), "chunk_size": chunk})
    if marker.exists() and (folder / "index.json").exists():
        have = json.loads(marker.read_text())
        if all(have.get(k) == v for k, v in want.items()):
            return {**have, "built_s": 0.0}
    t = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    marker.unlink(missing_ok=True)
    import contextlib

    scratch = Path(tempfile.mkdtemp(prefix="dataio-shards-litdata-"))  # optimize's own cache folders
    saved = {k: os.environ.get(k) for k in ("DATA_OPTIMIZER_CACHE_FOLDER", "DATA_OPTIMIZER_DATA_CACHE_FOLDER")}
    os.environ["DATA_OPTIMIZER_CACHE_FOLDER"] = str(scratch / "chunks")
    os.environ["DATA_OPTIMIZER_DATA_CACHE_FOLDER"] = str(scratch / "data")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # its progress lines
            litdata.optimize(fn=functools.partial(_litdata_shard, list(info["urls"])), inputs=list(range(shards)),
                             output_dir=str(folder), chunk_size=chunk, num_workers=1, reorder_files=False,
                             start_method="fork", verbose=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(scratch, ignore_errors=True)
    index = json.loads((folder / "index.json").read_text())
    counts = [c["chunk_size"] for c in index["chunks"]]
    if sum(counts) != n:
        raise RuntimeError(f"LitData wrote {sum(counts)} samples, the tar set has {n}")
    out = {**want, "litdata_counts": counts, "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())}
    marker.write_text(json.dumps(out))
    return {**out, "built_s": time.perf_counter() - t}


def warm_page_cache(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
        for fp in files:
            with open(fp, "rb") as f:
                while chunk := f.read(1 << 22):
                    total += len(chunk)
    return total


# -- where the shards live ------------------------------------------------------


class Store:
    """Local files, or (``Remote``) the same folder behind nginx. Says what each
    candidate reads and, remotely, what each epoch fetched."""

    remote = False
    endpoint: str | None = None

    def __init__(self, folder: Path, info: dict[str, Any]) -> None:
        self.folder = folder
        self.info = info

    def dataio_pattern(self) -> str:
        return self.info["pattern"]

    def wds_urls(self) -> list[str]:
        return list(self.info["urls"])

    def mark(self) -> int:
        return 0

    def since(self, mark: int) -> tuple[dict[str, int] | None, int | None]:
        """(requests by method, body bytes) the store served since ``mark``; None locally."""
        return None, None

    def close(self) -> None:
        pass


class Remote(Store):
    remote = True

    def __init__(self, folder: Path, info: dict[str, Any], workers: int) -> None:
        super().__init__(folder, info)
        from dataio_bench.nginx import Nginx

        self.root = Path(tempfile.mkdtemp(prefix="dataio-shards-store-"))
        (self.root / BUCKET).symlink_to(folder.resolve(), target_is_directory=True)
        try:
            self.server = Nginx(self.root, workers, access_log=True)
        except Exception:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self.endpoint = self.server.endpoint
        assert self.server.access_path is not None
        self.log = self.server.access_path
        self.unusual: dict[str, int] = {}  # requests the store did not answer with 2xx/304, counted

    def dataio_pattern(self) -> str:
        return f"s3://{BUCKET}/train-{{0000..{self.info['shards'] - 1:04d}}}.tar"

    def wds_urls(self) -> list[str]:
        return [f"{self.endpoint}/{BUCKET}/{Path(u).name}" for u in self.info["urls"]]

    def _size(self) -> int:
        time.sleep(0.3)  # nginx flushes its log buffer every 100 ms
        return self.log.stat().st_size if self.log.exists() else 0

    def mark(self) -> int:
        return self._size()

    def since(self, mark: int) -> tuple[dict[str, int] | None, int | None]:
        end = self._size()
        reqs: dict[str, int] = {}
        nbytes = 0
        with open(self.log, "rb") as f:
            f.seek(mark)
            for line in f.read(end - mark).decode(errors="replace").splitlines():
                parts = line.split('"')  # combined: ... "GET /b/k HTTP/1.1" 200 12345 "-" "agent"
                if len(parts) > 2:
                    fields = parts[2].split()
                    status = fields[0] if fields else "?"
                    method = parts[1].split(" ", 1)[0] + ("" if status in ("200", "206", "304") else f" {status}")
                    if status not in ("200", "206", "304"):
                        what = f"{parts[1]} -> {status} ({parts[5] if len(parts) > 5 else '?'})"
                        self.unusual[what] = self.unusual.get(what, 0) + 1
                    reqs[method] = reqs.get(method, 0) + 1
                    if len(fields) >= 2 and fields[1].isdigit():
                        nbytes += int(fields[1])
        return reqs, nbytes

    def close(self) -> None:
        self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


# -- the candidates -------------------------------------------------------------
# Each is a generator of epochs: every next() gives the batch iterator of the
# next epoch, each batch (keys, images [B,3,128,128] float32 tensor, labels as
# ints). Nothing is built before the first next(): epoch 1's time covers it all.


@dataclass
class Config:
    urls: list[str]
    pattern: str
    counts: list[int]
    work: Path  # a temp folder for caches and indexes, emptied before each cold epoch
    batch: int
    window: int
    wide_window: int
    buffer: int
    workers: int
    store: Store
    dataset_bytes: int


def _dataio_labels(cls: Any) -> list[int]:
    """``decode_bytes`` of b"7" is a uint8 tensor of the bytes; back to ints."""
    rows = cls if isinstance(cls, list) else list(cls)
    return [int(bytes(np.asarray(r, dtype=np.uint8).reshape(-1)).decode()) for r in rows]


def _dataio_epoch(loader: Any) -> Batches:
    for batch in loader:
        yield list(batch.keys), batch["jpg"], _dataio_labels(batch["cls"])


def dataio_epochs(
    cfg: Config, tag: str, window: int, seed: int | None, dct_scaling: bool = True, spread: int | None = None,
    cache_bytes: int | None = None,
) -> Iterator[Batches]:
    import dataio

    base = cfg.work / tag
    kw: dict[str, Any] = {"index_dir": str(base / "index")}
    if cfg.store.remote:
        kw["cache_dir"] = str(base / "cache")
        if cache_bytes is not None:
            kw["cache_bytes"] = cache_bytes
    if spread is not None:
        kw["shuffle_spread"] = spread
    recs = dataio.tar_records(cfg.store.dataio_pattern(), shuffle_window=window, **kw)
    pipe = dataio.pipeline(
        dataio.slot("jpg").decode_image(mode="rgb", dct_scaling=dct_scaling)
        .resize_short(SHORT).center_crop(h=CROP, w=CROP).normalize("imagenet"),
        dataio.slot("cls").decode_bytes(),
        dataio.batch(cfg.batch),
    )
    opts: dict[str, Any] = {} if seed is None else {"seed": seed}
    with pipe.bind(recs).run("torch", **opts) as loader:
        while True:
            yield _dataio_epoch(loader)


def pil_rgb(data: bytes) -> Any:
    """webdataset's ``"pil"`` decoder: open, load, convert to RGB."""
    from PIL import Image

    img = Image.open(io.BytesIO(data))
    img.load()
    return img.convert("RGB")


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


def sample_transform(sample: dict[str, Any]) -> tuple[str, np.ndarray, int]:
    """An MDS / LitData sample to what the webdataset row's pipeline yields."""
    return sample["key"], pil_transform(pil_rgb(sample["jpg"])), int(sample["cls"])


def _torch_epoch(loader: Any) -> Batches:
    for keys, images, labels in loader:
        yield list(keys), images, [int(v) for v in labels]


def webdataset_epochs(cfg: Config, seed: int) -> Iterator[Batches]:
    import webdataset as wds
    from torch.utils.data import DataLoader

    urls = cfg.store.wds_urls()
    ds = (
        wds.WebDataset(urls, shardshuffle=len(urls), detshuffle=True, seed=seed)
        .shuffle(cfg.buffer, seed=seed)
        .decode("pil")
        .to_tuple("__key__", "jpg", "cls")
        .map_tuple(None, pil_transform, None)
    )
    loader = DataLoader(ds, batch_size=cfg.batch, num_workers=cfg.workers)
    while True:
        yield _torch_epoch(loader)


def streaming_epochs(cfg: Config, seed: int, rnd: int) -> Iterator[Batches]:
    import streaming
    from torch.utils.data import DataLoader

    class MDSImages(streaming.StreamingDataset):  # the documented way: transform in __getitem__
        def __getitem__(self, idx: int) -> Any:
            return sample_transform(super().__getitem__(idx))

    mds = Path(cfg.urls[0]).parent / "mds"
    if cfg.store.remote:
        where: dict[str, Any] = {"remote": f"s3://{BUCKET}/mds", "local": str(cfg.work / f"streaming-{rnd}"),
                                 "cache_limit": 4 * cfg.dataset_bytes}
    else:
        where = {"remote": None, "local": str(mds)}
    ds = MDSImages(**where, shuffle=True, shuffle_algo="py1e", shuffle_seed=seed,
                   shuffle_block_size=cfg.window, batch_size=cfg.batch)
    loader = DataLoader(ds, batch_size=cfg.batch, num_workers=cfg.workers)
    prefix = getattr(ds, "_shm_prefix_int", None)
    try:
        while True:
            yield _torch_epoch(loader)
    finally:
        del loader, ds
        import gc

        gc.collect()  # the dataset's shared memory goes with it; its lock files stay: remove them
        if prefix is not None:
            for lock in ("barrier_filelock", "cache_filelock"):
                Path(tempfile.gettempdir(), f"{prefix:06d}_{lock}").unlink(missing_ok=True)


def litdata_epochs(cfg: Config, seed: int, rnd: int) -> Iterator[Batches]:
    import litdata

    kw: dict[str, Any] = {"cache_dir": str(cfg.work / f"litdata-{rnd}")}
    if cfg.store.remote:
        # LitData downloads chunks with obstore, whose S3 client it builds with fixed client
        # options that do not allow http:// (every GET fails with reqwest's BadScheme) and no
        # public switch; allow it in that dict (inherited by the DataLoader's forked workers).
        from litdata.streaming import downloader

        opts = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
        if not isinstance(opts, dict):
            raise PeerUnavailable(f"litdata {importlib.metadata.version('litdata')}: no way found to let its obstore "
                                  "S3 client use the http:// endpoint")
        opts["allow_http"] = "true"
        kw["input_dir"] = f"s3://{BUCKET}/litdata"
        kw["storage_options"] = {"endpoint_url": cfg.store.endpoint, "aws_access_key_id": ACCESS_KEY,
                                 "aws_secret_access_key": SECRET_KEY, "region_name": REGION}
    else:
        kw["input_dir"] = str(Path(cfg.urls[0]).parent / "litdata")
    ds = litdata.StreamingDataset(shuffle=True, seed=seed, transform=sample_transform, **kw)
    loader = litdata.StreamingDataLoader(ds, batch_size=cfg.batch, num_workers=cfg.workers)
    while True:
        yield _torch_epoch(loader)


# -- measuring ------------------------------------------------------------------


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
    requests: dict[str, int] | None  # answered by the store during the epoch, by method (remote)
    store_bytes: int | None  # bodies the store sent during the epoch (remote)


@dataclass
class Row:
    name: str
    what: str
    run: Callable[[int], Iterator[Batches]]  # round -> epochs
    cold: Callable[[int], None]  # round -> empties this row's caches (not timed)
    rounds: list[list[Epoch]] = field(default_factory=list)  # [round][epoch]
    error: str | None = None
    unavailable: str | None = None


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def parse_key(key: str) -> tuple[int, int]:
    shard, g = key.rsplit("/", 1)
    return int(shard), int(g)


def run_epochs(epochs_of: Iterator[Batches], batch: int, epochs: int, store: Store) -> list[Epoch]:
    out: list[Epoch] = []
    try:
        for _ in range(epochs):
            order: list[int] = []
            shards_per_batch: list[int] = []
            means: dict[str, np.ndarray] = {}
            labels: dict[str, int] = {}
            first = None
            mark = store.mark()
            c0 = cpu_seconds()
            t0 = time.perf_counter()
            it = next(epochs_of)
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
            cpu = cpu_seconds() - c0
            reqs, nbytes = store.since(mark)
            out.append(Epoch(len(order), dt, first if first is not None else dt, cpu,
                             np.asarray(order, dtype=np.int64), shards_per_batch, means, labels, reqs, nbytes))
    finally:
        epochs_of.close()
    return out


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


def quality(ep: Epoch, n: int, ref: Epoch | None, first: Epoch | None) -> dict[str, Any]:
    counts = np.bincount(ep.order, minlength=n) if len(ep.order) else np.zeros(n, dtype=np.int64)
    missing, dups = int((counts == 0).sum()), int((counts > 1).sum())
    out: dict[str, Any] = {
        "delivered": int(len(ep.order)), "missing": missing, "duplicated": dups,
        "exactly_once": bool(missing == 0 and dups == 0 and len(ep.order) == n),
        "shards_per_batch": float(np.mean(ep.shards_per_batch)) if ep.shards_per_batch else float("nan"),
        "spearman_rho": spearman(np.arange(len(ep.order)), ep.order) if len(ep.order) > 1 else float("nan"),
        "max_abs_mean_diff": None, "label_mismatches": None, "new_order": None,
    }
    if ref is not None:
        common = [k for k in ep.means if k in ref.means]
        if common:
            out["max_abs_mean_diff"] = float(max(np.abs(ep.means[k] - ref.means[k]).max() for k in common))
            out["label_mismatches"] = sum(ep.labels[k] != ref.labels[k] for k in common)
    if first is not None:
        out["new_order"] = bool(len(ep.order) != len(first.order) or (ep.order != first.order).any())
    return out


# -- many hosts -------------------------------------------------------------------
# ``--hosts 1,2,4,8``: H simulated hosts, each a group of ``--ranks-per-host``
# rank processes (this script again, ``--rank-worker``) that run together and
# share the host's own cache folder; the hosts run one after another, so each
# has the machine to itself and nginx's access log tells which host fetched
# what. One epoch, every cache cold.

HOST_CANDIDATES = ("dataio", "dataio-hosts1", "webdataset", "streaming", "litdata")


def _rank_env(rank: int, world: int, local: int, per_host: int, hosts: int) -> dict[str, str]:
    """What torchrun sets for a rank, plus the names the peers read: webdataset
    ``RANK``/``WORLD_SIZE``; Streaming ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/
    ``LOCAL_WORLD_SIZE``; LitData ``WORLD_SIZE``/``GLOBAL_RANK``/``NNODES``."""
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local),
            "LOCAL_WORLD_SIZE": str(per_host), "GROUP_RANK": str(rank // per_host),
            "NODE_RANK": str(rank // per_host), "GLOBAL_RANK": str(rank), "NNODES": str(hosts),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


def _rank_batches(spec: dict[str, Any]) -> tuple[Batches, Callable[[], dict[str, Any]]]:
    """One rank's epoch of ``spec["candidate"]``: its batches, and a function
    giving what the loader itself counted (dataio: its store bytes)."""
    cand, seed, batch = spec["candidate"], spec["seed"], spec["batch"]
    cache = Path(spec["cache"])
    if cand in ("dataio", "dataio-hosts1"):
        import dataio

        recs = dataio.tar_records(spec["pattern"], shuffle_window=spec["window"], cache_dir=str(cache),
                                  index_dir=spec["index_dir"])
        pipe = dataio.pipeline(
            dataio.slot("jpg").decode_image(mode="rgb").resize_short(SHORT).center_crop(h=CROP, w=CROP)
            .normalize("imagenet"),
            dataio.slot("cls").decode_bytes(),
            dataio.batch(batch),
        )
        # "hosts": 1 is the old global interleave: every rank's share of every window,
        # so every host needs every shard.
        shard = {"id": spec["rank"], "of": spec["world"], "pad": True,
                 "hosts": spec["hosts"] if cand == "dataio" else 1}

        def gen() -> Batches:
            with pipe.bind(recs).run("torch", seed=seed, shard=shard) as loader:
                yield from _dataio_epoch(loader)

        return gen(), lambda: {"store_bytes_read": recs.stats().get("store_bytes_read")}
    from torch.utils.data import DataLoader

    if cand == "webdataset":
        import webdataset as wds

        urls = spec["wds_urls"]
        ds = (
            wds.WebDataset(urls, shardshuffle=len(urls), detshuffle=True, seed=seed,
                           nodesplitter=wds.split_by_node, workersplitter=wds.split_by_worker, empty_check=False)
            .shuffle(spec["buffer"], seed=seed)
            .decode("pil")
            .to_tuple("__key__", "jpg", "cls")
            .map_tuple(None, pil_transform, None)
        )
        return _torch_epoch(DataLoader(ds, batch_size=batch, num_workers=spec["workers"])), dict
    if cand == "streaming":
        import streaming

        class MDSImages(streaming.StreamingDataset):
            def __getitem__(self, idx: int) -> Any:
                return sample_transform(super().__getitem__(idx))

        ds = MDSImages(remote=f"s3://{BUCKET}/mds", local=str(cache), shuffle=True, shuffle_algo="py1e",
                       shuffle_seed=seed, shuffle_block_size=spec["window"], batch_size=batch)
        return _torch_epoch(DataLoader(ds, batch_size=batch, num_workers=spec["workers"])), dict
    if cand == "litdata":
        import litdata
        from litdata.streaming import downloader

        opts = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
        if not isinstance(opts, dict):
            raise PeerUnavailable(f"litdata {importlib.metadata.version('litdata')}: no way found to let its obstore "
                                  "S3 client use the http:// endpoint")
        opts["allow_http"] = "true"  # as in the single-host rows (see the docstring)
        ds = litdata.StreamingDataset(
            input_dir=f"s3://{BUCKET}/litdata", cache_dir=str(cache), shuffle=True, seed=seed,
            transform=sample_transform,
            storage_options={"endpoint_url": spec["endpoint"], "aws_access_key_id": ACCESS_KEY,
                             "aws_secret_access_key": SECRET_KEY, "region_name": REGION})
        return _torch_epoch(litdata.StreamingDataLoader(ds, batch_size=batch, num_workers=spec["workers"])), dict
    raise ValueError(f"unknown host candidate {cand!r}")


def rank_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one rank's epoch (in its own process); its figures as JSON-able."""
    for mod in ("webdataset", "streaming", "litdata"):
        warnings.filterwarnings("ignore", module=mod)
    import faulthandler

    import torch  # noqa: F401  (imported before the clock starts, as every rank has it)

    if spec.get("dump_after"):  # a rank that hangs says where, before the parent kills it
        faulthandler.dump_traceback_later(spec["dump_after"], exit=True)

    if spec["candidate"].startswith("dataio"):
        import dataio
        import dataio_s3  # noqa: F401  (the s3:// backend)

        dataio.configure_endpoint("s3", spec["endpoint"])
        dataio.configure_credentials("s3", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, region=REGION)
    start = time.time()
    batches, own = _rank_batches(spec)
    order: list[int] = []
    spb: list[int] = []
    shards: set[int] = set()
    first = None
    for keys, _images, _labels in batches:
        if first is None:
            first = time.time() - start
        parsed = [parse_key(k) for k in keys]
        order.extend(g for _, g in parsed)
        shards.update(s for s, _ in parsed)
        if len(keys) == spec["batch"]:
            spb.append(len({s for s, _ in parsed}))
    end = time.time()
    return {"rank": spec["rank"], "start": start, "end": end, "first_batch": first, "order": order,
            "shards_per_batch": spb, "shards": sorted(shards), **own()}


@dataclass
class HostRun:
    """One candidate at one host count: per host, its ranks' results and what it fetched."""

    candidate: str
    hosts: int
    ranks: list[list[dict[str, Any]]] = field(default_factory=list)  # [host][local rank]
    host_bytes: list[int] = field(default_factory=list)
    host_requests: list[dict[str, int]] = field(default_factory=list)
    error: str | None = None
    unavailable: str | None = None


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Streaming's StreamingDataset starts torch.distributed itself when WORLD_SIZE > 1
# (gloo, every rank of every host in one group) and waits in it while it opens,
# so its hosts cannot run one after another: they run all at once. Its ranks on
# a node find each other through POSIX shared memory (/dev/shm) and lock files
# in the temp folder, which simulated hosts on one machine would share (the
# local leaders then race for the same names): each host gets a mount namespace
# with its own /dev/shm (``unshare -m``, root) and its own TMPDIR.
TOGETHER = ("streaming",)


def run_host_count(cand: str, hosts: int, per_host: int, base: dict[str, Any], store: Remote, work: Path,
                   timeout: float) -> HostRun:
    import shlex

    out = HostRun(cand, hosts)
    world = hosts * per_host
    groups = [list(range(hosts))] if cand in TOGETHER else [[h] for h in range(hosts)]
    for group in groups:
        if cand == "streaming":
            from streaming.base.util import clean_stale_shared_memory

            clean_stale_shared_memory()  # the previous run's, gone with its processes
        mark = store.mark()
        port = str(_free_port())
        procs = []
        for h in group:  # one shell per host, its ranks in the background of it
            cache = work / f"{cand}-h{hosts}-host{h}"  # the host's own cache, shared by its ranks
            tmp = work / f"tmp-host{h}"
            tmp.mkdir(exist_ok=True)
            lines = []
            for local in range(per_host):
                rank = h * per_host + local
                spec = {**base, "candidate": cand, "rank": rank, "world": world, "hosts": hosts, "cache": str(cache),
                        "dump_after": max(1.0, timeout - 10)}
                env = {**_rank_env(rank, world, local, per_host, hosts), "MASTER_PORT": port, "TMPDIR": str(tmp)}
                cmd = ["env", *(f"{k}={v}" for k, v in env.items()), sys.executable, __file__, "--rank-worker",
                       json.dumps(spec)]
                stem = shlex.quote(str(work / f"rank{rank}"))
                lines.append(f"( {shlex.join(cmd)} > {stem}.out 2> {stem}.err; echo $? > {stem}.rc ) &")
            script = "\n".join(lines) + "\nwait\n"
            argv = ["sh", "-c", script]
            if cand in TOGETHER:
                argv = ["unshare", "-m", "sh", "-c", "mount -t tmpfs dataio-bench-shm /dev/shm && exec sh -c \"$0\"",
                        script]
            procs.append(subprocess.Popen(argv, start_new_session=True))
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    if q.poll() is None:
                        os.killpg(q.pid, 9)  # the host's shell and its ranks (their own session)
                        q.wait()
        got: dict[int, list[dict[str, Any]]] = {h: [] for h in group}
        for h in group:
            for local in range(per_host):
                stem = work / f"rank{h * per_host + local}"
                rcf = stem.with_suffix(".rc")
                rc = int(rcf.read_text().strip() or -1) if rcf.exists() else None
                text = stem.with_suffix(".out").read_text() if stem.with_suffix(".out").exists() else ""
                err = stem.with_suffix(".err").read_text() if stem.with_suffix(".err").exists() else ""
                for f in (".out", ".err", ".rc"):
                    stem.with_suffix(f).unlink(missing_ok=True)
                hung = "most recent call first" in err  # faulthandler's dump of a rank about to time out
                if (rc is None or hung) and out.error is None:
                    frames = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("File ")]
                    last = " <- ".join(frames[:4]) if frames else (err.strip().splitlines() or ["nothing on stderr"])[-1]
                    out.error = f"host {h}: a rank hung for {timeout:.0f} s, at {last}"
                elif rc != 0 and out.error is None:
                    tail = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
                    if "PeerUnavailable" in err:
                        out.unavailable = tail.split("PeerUnavailable:", 1)[-1].strip()
                    else:
                        out.error = f"host {h}: {tail}"
                elif rc == 0:
                    got[h].append(json.loads(text.strip().splitlines()[-1]))
        reqs, nbytes = store.since(mark)
        for h in group:
            shutil.rmtree(work / f"{cand}-h{hosts}-host{h}", ignore_errors=True)
            shutil.rmtree(work / f"tmp-host{h}", ignore_errors=True)
        if out.error or out.unavailable:
            return out
        out.ranks.extend(got[h] for h in group)
        out.host_bytes.append(nbytes or 0)  # one figure per group: per host when they run one at a time
        out.host_requests.append(reqs or {})
    return out


def host_quality(run: HostRun, n: int) -> dict[str, Any]:
    ranks = [r for host in run.ranks for r in host]
    counts = np.bincount(np.asarray([g for r in ranks for g in r["order"]], dtype=np.int64), minlength=n)
    rhos = [abs(spearman(np.arange(len(r["order"])), np.asarray(r["order"]))) for r in ranks if len(r["order"]) > 1]
    spb = [v for r in ranks for v in r["shards_per_batch"]]
    rates = []
    for host in run.ranks:
        span = max(r["end"] for r in host) - min(r["start"] for r in host)
        rates.append(sum(len(r["order"]) for r in host) / span if span > 0 else float("nan"))
    return {
        "delivered": int(counts.sum()), "missing": int((counts == 0).sum()), "duplicated": int((counts > 1).sum()),
        "exactly_once": bool((counts == 1).all()),
        "samples_per_rank": [len(r["order"]) for r in ranks],
        "shards_per_batch": float(np.mean(spb)) if spb else float("nan"),
        "abs_spearman_rho": float(np.mean(rhos)) if rhos else float("nan"),
        "shards_per_host": float(np.mean([len({s for r in host for s in r["shards"]}) for host in run.ranks])),
        "samples_per_s_per_host": float(np.mean(rates)), "samples_per_s_hosts": rates,
        "first_batch_s": float(np.median([r["first_batch"] or 0.0 for r in ranks])),
    }


def hosts_main(args: argparse.Namespace, info: dict[str, Any], peer_info: dict[str, Any],
               unavailable: dict[str, str], store: Remote, work: Path, cands: list[str]) -> dict[str, Any]:
    import dataio

    host_counts = args.hosts
    per_host = args.ranks_per_host
    n = info["samples"]
    sizes = {"tar": sum(os.path.getsize(u) for u in info["urls"])}
    for name, key in (("streaming", "mds"), ("litdata", "litdata")):
        if name in peer_info:
            sizes[key] = peer_info[name]["bytes"]
    fmt = {"dataio": "tar", "dataio-hosts1": "tar", "webdataset": "tar", "streaming": "mds", "litdata": "litdata"}
    # dataio's shard index, built once for all hosts (a fresh host gets it from a shard
    # index beside the shards, or from a shared index folder): no host counts shards.
    t = time.perf_counter()
    dataio.tar_records(store.dataio_pattern(), index_dir=str(work / "index"), cache_dir=str(work / "index-cache"))
    shutil.rmtree(work / "index-cache", ignore_errors=True)
    print(f"dataio's shard index built once for every host in {time.perf_counter() - t:.1f} s (not counted)",
          flush=True)
    base = {"endpoint": store.endpoint, "pattern": store.dataio_pattern(), "wds_urls": store.wds_urls(),
            "index_dir": str(work / "index"), "window": args.window, "buffer": args.buffer, "batch": args.batch,
            "workers": args.workers, "seed": args.seed}
    what = {
        "dataio": f"dataio, hosts=H (host-partitioned), window {args.window}",
        "dataio-hosts1": f"dataio, hosts=1 forced (global interleave, the before), window {args.window}",
        "webdataset": f"wds split_by_node (RANK/WORLD_SIZE), shuffle({args.buffer}), {args.workers} worker(s)/rank",
        "streaming": f"Streaming py1e, block {args.window}, WORLD_SIZE/LOCAL_WORLD_SIZE/RANK, {args.workers} worker(s)/rank",
        "litdata": f"LitData WORLD_SIZE/GLOBAL_RANK/NNODES, {args.workers} worker(s)/rank (obstore allow_http)",
    }
    results: dict[str, Any] = {"hosts": host_counts, "ranks_per_host": per_host, "sizes": sizes, "what": what,
                               "runs": {}}
    runs: dict[tuple[str, int], HostRun] = {}
    for hosts in host_counts:
        for cand in cands:
            if cand in unavailable:
                runs[(cand, hosts)] = HostRun(cand, hosts, unavailable=unavailable[cand])
                continue
            t = time.perf_counter()
            run = run_host_count(cand, hosts, per_host, base, store, work, args.rank_timeout)
            runs[(cand, hosts)] = run
            if run.unavailable:
                unavailable[cand] = run.unavailable
                print(f"  {hosts} host(s) {cand:<14} UNAVAILABLE — {run.unavailable}", flush=True)
                continue
            if run.error:
                print(f"  {hosts} host(s) {cand:<14} FAILED — {run.error}", flush=True)
                continue
            q = host_quality(run, n)
            x = sum(run.host_bytes) / sizes[fmt[cand]]
            print(f"  {hosts} host(s) {cand:<14} store {_fmt_mb(sum(run.host_bytes))} MB ({x:.2f}x), "
                  f"{q['samples_per_s_per_host']:.1f} samples/s per host, {time.perf_counter() - t:.1f} s in all",
                  flush=True)

    failed = False
    target_missed = False
    for hosts in host_counts:
        uni_all = uniform_shards_per_batch(info["counts"], args.batch)
        share = info["counts"][: max(1, info["shards"] // hosts)]
        uni_share = uniform_shards_per_batch(share, args.batch)
        print(f"\n{hosts} host(s) × {per_host} ranks (world {hosts * per_host}), one epoch, caches cold; hosts run "
              f"one after another, each host's ranks together: {n} samples in {info['shards']} shards, batch "
              f"{args.batch}")
        print(f"  {'candidate':<14} {'store MB':>8} {'× data':>6} {'req':>5} {'samples/s/host':>14} "
              f"{'first batch s':>13} {'shards/host':>11} {'shards/batch':>12} {'|rho|':>6} {'once':>5}  what")
        for cand in cands:
            run = runs[(cand, hosts)]
            entry: dict[str, Any]
            if run.unavailable:
                print(f"  {cand:<14} UNAVAILABLE: {run.unavailable}")
                entry = {"unavailable": run.unavailable}
            elif run.error:
                print(f"  {cand:<14} FAILED: {run.error}")
                entry = {"error": run.error}
                failed = True
            else:
                q = host_quality(run, n)
                total = sum(run.host_bytes)
                x = total / sizes[fmt[cand]]
                reqs: dict[str, int] = {}
                for r in run.host_requests:
                    for k, v in r.items():
                        reqs[k] = reqs.get(k, 0) + v
                once = "yes" if q["exactly_once"] else (f"{q['duplicated']} dup" if not q["missing"]
                                                         else f"{q['missing']} miss")
                print(f"  {cand:<14} {_fmt_mb(total):>8} {x:6.2f} {sum(reqs.values()):>5} "
                      f"{q['samples_per_s_per_host']:14.1f} {q['first_batch_s']:13.3f} {q['shards_per_host']:11.1f} "
                      f"{q['shards_per_batch']:12.2f} {q['abs_spearman_rho']:6.3f} {once:>5}  {what[cand]}")
                own = [r.get("store_bytes_read") for host in run.ranks for r in host]
                entry = {"store_bytes": total, "x_dataset": x, "dataset_bytes": sizes[fmt[cand]],
                         "host_bytes": run.host_bytes, "requests": reqs, **q,
                         "own_store_bytes_read": sum(own) if own and None not in own else None}
                if q["missing"] and cand.startswith("dataio"):  # a peer's drops are its documented policy: shown
                    failed = True
                if cand == "dataio" and x > 1.05:
                    target_missed = True
            results["runs"].setdefault(cand, {})[str(hosts)] = entry
        print(f"  for reference: a uniform shuffle of the whole dataset gets {uni_all:.2f} shards/batch; of one "
              f"host's share ({len(share)} shards) {uni_share:.2f}")

    def pivot(title: str, key: str, form: str) -> None:
        print(f"\n{title}")
        print(f"  {'candidate':<14} " + " ".join(f"{'H=' + str(h):>8}" for h in host_counts))
        for cand in cands:
            cells = []
            for h in host_counts:
                e = results["runs"].get(cand, {}).get(str(h), {})
                cells.append(f"{form.format(e[key]):>8}" if key in e else f"{'n/a':>8}")
            print(f"  {cand:<14} " + " ".join(cells))

    pivot("store bytes per epoch, × the dataset (its own format's size), caches cold:", "x_dataset", "{:.2f}")
    pivot("samples/s per host:", "samples_per_s_per_host", "{:.0f}")
    if "dataio" in cands and any("x_dataset" in e for e in results["runs"].get("dataio", {}).values()):
        print(f"\ndataio (host-partitioned): store bytes per epoch <= 1.05x the dataset at every H: "
              f"{'MISSED' if target_missed else 'yes'}")
    results["target_met"] = not target_missed
    results["failed"] = failed
    return results


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for mod in ("dataio", "dataio-s3", "webdataset", "mosaicml-streaming", "litdata", "torch", "pillow", "numpy",
                "scikit-image", "boto3"):
        try:
            out[mod] = importlib.metadata.version(mod)
        except importlib.metadata.PackageNotFoundError:
            out[mod] = None
    return out


def peer_missing(module: str, dist: str) -> str | None:
    """Why ``module`` cannot be used here, or None."""
    try:
        __import__(module)
    except Exception as e:  # noqa: BLE001 - not installed, or broken against this torch/numpy
        return f"{dist} is not importable here ({type(e).__name__}: {e}); see docs/benchmark.md for its venv"
    return None


def _fmt_mb(b: float | None) -> str:
    return "–" if b is None else f"{b / 1e6:.1f}"


def _fmt_reqs(reqs: dict[str, int] | None) -> str:
    if not reqs:
        return "0 requests"
    return ", ".join(f"{v} {k}" for k, v in sorted(reqs.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=4000, help="images in the dataset (default 4000)")
    ap.add_argument("--shards", type=int, default=40, help="tar shards they are written into (default 40)")
    ap.add_argument("--window", type=int, default=1000,
                    help="dataio's shuffle_window and Streaming's shuffle_block_size (default 1000)")
    ap.add_argument("--wide-window", type=int, default=8192, help="the dataio-wide row's window (default 8192)")
    ap.add_argument("--buffer", type=int, default=1000, help="webdataset's .shuffle() buffer (default 1000)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers for webdataset, Streaming and LitData (default 2)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=2, help="epochs per candidate and round, the first cold (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; the candidates take turns in each")
    ap.add_argument("--remote", choices=("nginx",), help="serve the shards from a local nginx (S3 / HTTP)")
    ap.add_argument("--nginx-workers", type=int, default=1, help="nginx worker processes with --remote (default 1)")
    ap.add_argument("--only", help=f"comma-separated candidates to run, of {','.join(CANDIDATES)}; default all")
    ap.add_argument("--data", default="/tmp/dataio-shards-bench", help="where the shards are cached")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (512 samples, 8 shards, windows 256): a smoke test")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--hosts", help="many-host mode: comma-separated host counts (e.g. 1,2,4,8); store bytes per "
                    f"epoch and samples/s per host of {','.join(HOST_CANDIDATES)} over nginx (implies --remote nginx)")
    ap.add_argument("--ranks-per-host", type=int, default=2, help="rank processes per simulated host (default 2)")
    ap.add_argument("--rank-timeout", type=float, default=600.0, help="seconds a host's ranks may take (default 600)")
    ap.add_argument("--rank-worker", help=argparse.SUPPRESS)  # internal: one rank of --hosts, its spec as JSON
    args = ap.parse_args(argv)
    if args.rank_worker:
        print(json.dumps(rank_worker(json.loads(args.rank_worker))), flush=True)
        return 0
    if args.quick:
        args.samples, args.shards, args.window, args.buffer, args.wide_window = 512, 8, 256, 256, 1024
    if args.samples < 1 or not 1 <= args.shards <= args.samples:
        ap.error("need 1 <= --shards <= --samples")
    if args.epochs < 1 or args.repeat < 1:
        ap.error("need --epochs >= 1 and --repeat >= 1")
    known = HOST_CANDIDATES if args.hosts else CANDIDATES
    only = [w.strip() for w in args.only.split(",") if w.strip()] if args.only else list(known)
    unknown = [w for w in only if w not in known]
    if unknown:
        ap.error(f"unknown candidates {unknown}; known{' with --hosts' if args.hosts else ''}: {', '.join(known)}")
    if args.hosts:
        try:
            args.hosts = [int(h) for h in args.hosts.split(",") if h.strip()]
        except ValueError:
            ap.error("--hosts takes host counts, e.g. 1,2,4,8")
        if not args.hosts or min(args.hosts) < 1 or args.ranks_per_host < 1:
            ap.error("need host counts >= 1 and --ranks-per-host >= 1")
        if not args.remote:
            args.remote = "nginx"  # the store bytes come from nginx's access log

    for mod in ("webdataset", "streaming", "litdata"):
        warnings.filterwarnings("ignore", module=mod)
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
    folder = Path(info["urls"][0]).parent

    # The peers' formats, written from the tar set (not timed); a peer that is
    # missing or fails to write gets its row marked here.
    missing = {"streaming": peer_missing("streaming", "mosaicml-streaming"), "litdata": peer_missing("litdata", "litdata")}
    peer_info: dict[str, Any] = {}
    build_errors: dict[str, str] = {}
    for name, make, sub in (("streaming", make_mds, "mds"), ("litdata", make_litdata, "litdata")):
        if name in only and not missing[name]:
            try:
                peer_info[name] = make(info)
            except Exception as e:  # noqa: BLE001 - a peer that cannot write its format gets a row saying why
                build_errors[name] = f"writing its {sub} format failed: {type(e).__name__}: {e}"
    if "streaming" in peer_info:
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()  # a killed earlier run leaves its shared memory behind

    warm_paths = [Path(u) for u in info["urls"]] + [folder / "mds" for _ in ["streaming"] if "streaming" in peer_info]
    warm_paths += [folder / "litdata" for _ in ["litdata"] if "litdata" in peer_info]
    warm = warm_page_cache(warm_paths)
    built = f"built in {info['built_s']:.1f} s" if info["built_s"] else "cached"
    print(f"data: {n} JPEGs ({info['content']}, {info['jpeg_bytes'] / n / 1000:.1f} KB each on average) in "
          f"{info['shards']} tar shards, {sum(os.path.getsize(u) for u in info['urls']) / 1e6:.1f} MB, under {folder} "
          f"({built})", flush=True)
    for name, pi in peer_info.items():
        counts = pi.get("mds_counts") or pi.get("litdata_counts")
        same = "the tar set's counts" if counts == info["counts"] else f"{min(counts)}–{max(counts)} samples each"
        made = f"written in {pi['built_s']:.1f} s" if pi["built_s"] else "cached"
        print(f"  {name}: {len(counts)} {'MDS shards' if name == 'streaming' else 'LitData chunks'} ({same}), "
              f"{pi['bytes'] / 1e6:.1f} MB ({made})")
    print(f"  page cache warmed: {warm / 1e6:.1f} MB read", flush=True)

    store: Store
    if args.remote:
        from dataio_bench.nginx import NginxUnavailable

        try:
            store = Remote(folder, info, args.nginx_workers)
        except NginxUnavailable as e:
            sys.exit(f"--remote nginx: {e}")
        try:
            import dataio_s3  # noqa: F401  (the s3:// backend)
        except ImportError:
            store.close()
            sys.exit("--remote nginx needs the dataio-s3 plugin (packages/dataio-s3) for dataio's s3:// reads")
        dataio.configure_endpoint("s3", store.endpoint)
        dataio.configure_credentials("s3", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, region=REGION)
        # Streaming's S3 downloader is boto3 with this endpoint (its "Configure Cloud Storage
        # Credentials"); boto3 takes the dummy keys from the environment. Set before any worker forks.
        os.environ.update({"S3_ENDPOINT_URL": store.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                           "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION})
        print(f"store: nginx ({args.nginx_workers} worker{'s' if args.nginx_workers != 1 else ''}) on "
              f"{store.endpoint}, bucket {BUCKET!r} = {folder}; dataio s3://, webdataset http://, "
              f"Streaming s3:// (boto3), LitData s3:// (boto3/obstore)", flush=True)
    else:
        store = Store(folder, info)
        print("store: local files, read in place", flush=True)

    work = Path(tempfile.mkdtemp(prefix="dataio-shards-run-"))
    if args.hosts:
        assert isinstance(store, Remote)
        unavailable = {k: v for k, v in missing.items() if v}
        unavailable.update(build_errors)
        print(f"many hosts: H = {', '.join(map(str, args.hosts))}, {args.ranks_per_host} rank processes per host "
              f"(together, sharing the host's cache folder), hosts one after another; "
              f"{', '.join(only)}", flush=True)
        try:
            res = hosts_main(args, info, peer_info, unavailable, store, work, only)
        finally:
            store.close()
            shutil.rmtree(work, ignore_errors=True)
        if store.unusual:
            print("store: requests not answered 2xx/304: " + "; ".join(f"{v}× {k}" for k, v in store.unusual.items()))
        res.update({"host": {"cores": cpus, "load_at_start": load, "python": platform.python_version()},
                    "versions": vers, "args": vars(args), "store": "nginx",
                    "dataset": {k: v for k, v in info.items() if k != "urls"}, "peer_formats": peer_info,
                    "store_unanswered": store.unusual,
                    "load_at_end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None})
        print(f"\nload average at the end: {res['load_at_end']:.2f}")
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=2))
        return 1 if res["failed"] or not res["target_met"] else 0
    dataset_bytes = sum(os.path.getsize(u) for u in info["urls"])
    cfg = Config(info["urls"], info["pattern"], info["counts"], work, args.batch, args.window,
                 args.wide_window, args.buffer, args.workers, store, dataset_bytes)
    seed = args.seed

    def clear(*names: str) -> Callable[[int], None]:
        def go(rnd: int) -> None:
            for nm in names:
                shutil.rmtree(work / nm.format(rnd=rnd), ignore_errors=True)
        return go

    where = "remote" if args.remote else "local"
    rows = {
        "storage": Row("storage", "dataio, no seed: storage order (quality reference)",
                       lambda r: dataio_epochs(cfg, "storage", cfg.window, None), clear("storage")),
        "dataio": Row("dataio", f"dataio, shuffle_window={cfg.window}, seed={seed}",
                      lambda r: dataio_epochs(cfg, "dataio", cfg.window, seed), clear("dataio")),
        "dataio-spread1": Row("dataio-spread1", f"dataio, window {cfg.window}, shuffle_spread=1",
                              lambda r: dataio_epochs(cfg, "dataio-spread1", cfg.window, seed, spread=1),
                              clear("dataio-spread1")),
        "dataio-wide": Row("dataio-wide", f"dataio, shuffle_window={cfg.wide_window}, seed={seed}",
                           lambda r: dataio_epochs(cfg, "dataio-wide", cfg.wide_window, seed), clear("dataio-wide")),
        "dataio-quarter": Row("dataio-quarter", f"dataio, window {cfg.window}, cache_bytes = 1/4 dataset",
                              lambda r: dataio_epochs(cfg, "dataio-quarter", cfg.window, seed,
                                                      cache_bytes=cfg.dataset_bytes // 4),
                              clear("dataio-quarter")),
        "dataio-full-decode": Row("dataio-full-decode", f"dataio, window {cfg.window}, dct_scaling=False",
                                  lambda r: dataio_epochs(cfg, "dataio-full-decode", cfg.window, seed, dct_scaling=False),
                                  clear("dataio-full-decode")),
        "webdataset": Row("webdataset", f"wds, shuffle({cfg.buffer}), DataLoader workers={cfg.workers}",
                          lambda r: webdataset_epochs(cfg, seed), clear()),
        "streaming": Row("streaming", f"Streaming py1e, block {cfg.window}, DataLoader workers={cfg.workers}",
                         lambda r: streaming_epochs(cfg, seed, r), clear("streaming-{rnd}")),
        "litdata": Row("litdata", f"LitData shuffle, StreamingDataLoader workers={cfg.workers}"
                       + (" (obstore allow_http)" if args.remote else ""),
                       lambda r: litdata_epochs(cfg, seed, r), clear("litdata-{rnd}")),
    }
    for name in ("streaming", "litdata"):
        if missing[name]:
            rows[name].unavailable = missing[name]
        elif name in build_errors:
            rows[name].error = build_errors[name]
    order = [rows[c] for c in CANDIDATES if c in only]
    try:
        for r in range(args.repeat):
            for row in order:
                if row.error or row.unavailable:
                    continue
                row.cold(r)
                try:
                    eps = run_epochs(row.run(r), args.batch, args.epochs, store)
                except PeerUnavailable as e:
                    row.unavailable = str(e)
                    print(f"  {row.name}: UNAVAILABLE — {row.unavailable}", flush=True)
                    continue
                except Exception as e:  # noqa: BLE001 - a row that fails says why; the others still run
                    row.error = f"{type(e).__name__}: {e}"
                    print(f"  {row.name}: FAILED — {row.error}", flush=True)
                    continue
                finally:
                    row.cold(r)  # leave no cache behind (disk), and none for the next round
                row.rounds.append(eps)
                for e, ep in enumerate(eps):
                    fetched = (f", store {_fmt_mb(ep.store_bytes)} MB in {_fmt_reqs(ep.requests)}"
                               if store.remote else "")
                    print(f"  [round {r + 1}/{args.repeat}] {row.name:<19} epoch {e + 1} ({'cold' if e == 0 else 'warm'}): "
                          f"{ep.samples} samples in {ep.seconds:6.2f} s ({ep.samples / ep.seconds:7.1f}/s), "
                          f"first batch {ep.first_batch:.3f} s, cpu {ep.cpu:.2f} s{fetched}", flush=True)
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)
    if isinstance(store, Remote) and store.unusual:
        print("store: requests not answered 2xx/304: " + "; ".join(f"{v}× {k}" for k, v in store.unusual.items()))

    ref_row = rows["storage"] if rows["storage"].rounds else next((r for r in order if r.rounds), None)
    ref = ref_row.rounds[0][0] if ref_row else None
    results: dict[str, Any] = {
        "host": {"cores": cpus, "load_at_start": load, "python": platform.python_version()},
        "versions": vers, "args": vars(args), "store": "nginx" if args.remote else "local",
        "dataset": {k: v for k, v in info.items() if k != "urls"},
        "peer_formats": peer_info,
        "uniform_shards_per_batch": uniform_shards_per_batch(info["counts"], args.batch),
        "random_shard_order_abs_rho": shard_order_rho(info["counts"]),
        "store_unanswered": store.unusual if isinstance(store, Remote) else None,
        "candidates": {}, "ratios_to_webdataset": {}, "dataio_over_peers": {},
    }
    failed = False
    for row in order:
        if row.unavailable:
            results["candidates"][row.name] = {"unavailable": row.unavailable}
        elif not row.rounds:
            results["candidates"][row.name] = {"error": row.error}
            failed = True
        else:
            results["candidates"][row.name] = {"what": row.what, "epochs": []}

    def median_rate(row: Row, e: int) -> float | None:
        vals = [eps[e].samples / eps[e].seconds for eps in row.rounds if len(eps) > e]
        return statistics.median(vals) if vals else None

    for e in range(args.epochs):
        wds_rate = median_rate(rows["webdataset"], e) if rows["webdataset"].rounds else None
        print(f"\nepoch {e + 1} ({'cold: caches empty, index built in it' if e == 0 else 'warm: the same loader again'}), "
              f"{where}: {n} samples in {info['shards']} shards, batch {args.batch}, {cpus} cores "
              f"(dataio: its CPU pool; the others: {args.workers} DataLoader workers)"
              + (f", median of {args.repeat} rounds" if args.repeat > 1 else ""))
        store_cols = f" {'store MB':>8} {'req':>5}" if store.remote else ""
        print(f"  {'candidate':<19} {'samples/s':>9} {'× wds':>6} {'first batch s':>13} {'cpu s':>6}{store_cols} "
              f"{'shards/batch':>12} {'|rho|':>6} {'once':>5} {'Δmean':>6}" + (f" {'new order':>9}" if e else "") + "  what")
        ratios: dict[str, float] = {}
        for row in order:
            if row.unavailable:
                print(f"  {row.name:<19} UNAVAILABLE: {row.unavailable}")
                continue
            if not row.rounds:
                print(f"  {row.name:<19} FAILED: {row.error}")
                continue
            eps = [rd[e] for rd in row.rounds]
            rate = statistics.median(x.samples / x.seconds for x in eps)
            first = statistics.median(x.first_batch for x in eps)
            cpu = statistics.median(x.cpu for x in eps)
            sbytes = statistics.median(x.store_bytes for x in eps) if store.remote else None
            sreqs = statistics.median(sum((x.requests or {}).values()) for x in eps) if store.remote else None
            is_ref = row is ref_row and e == 0
            q = quality(row.rounds[0][e], n, None if is_ref else ref, row.rounds[0][0] if e else None)
            ratio = rate / wds_rate if wds_rate else None
            ratios[row.name] = rate
            dm = q["max_abs_mean_diff"]
            scol = f" {_fmt_mb(sbytes):>8} {int(sreqs):>5}" if store.remote else ""
            new = f" {('yes' if q['new_order'] else 'no'):>9}" if e else ""
            print(f"  {row.name:<19} {rate:9.1f} {(f'{ratio:.2f}' if ratio else '–'):>6} {first:13.3f} {cpu:6.2f}{scol} "
                  f"{q['shards_per_batch']:12.2f} {abs(q['spearman_rho']):6.3f} {('yes' if q['exactly_once'] else 'NO'):>5} "
                  f"{(f'{dm:.3f}' if dm is not None else '–'):>6}{new}  {row.what}")
            if not q["exactly_once"]:
                failed = True
                print(f"    {row.name}: {q['delivered']} delivered, {q['missing']} missing, {q['duplicated']} more than once")
            if q["label_mismatches"]:
                failed = True
                print(f"    {row.name}: {q['label_mismatches']} labels differ from the reference's for the same key")
            results["candidates"][row.name]["epochs"].append({
                "epoch": e + 1, "samples_per_s": rate, "first_batch_s": first, "cpu_s": cpu,
                "store_bytes": sbytes, "store_requests": sreqs,
                "store_requests_by_method": [x.requests for x in eps] if store.remote else None,
                "seconds": [x.seconds for x in eps], "first_batch_s_all": [x.first_batch for x in eps],
                **q, "abs_spearman_rho": abs(q["spearman_rho"]), "ratio_to_webdataset": ratio,
            })
            if ratio is not None and row.name != "webdataset":
                results["ratios_to_webdataset"].setdefault(row.name, []).append(ratio)
        if e == 0:
            print(f"  for reference: a uniform shuffle of the whole dataset gets {results['uniform_shards_per_batch']:.2f} "
                  f"shards/batch and |rho| ~ 0; the shards in a random order, unmixed, |rho| "
                  f"{results['random_shard_order_abs_rho']:.3f} on average")
        if "dataio" in ratios:
            parts = [f"{ratios['dataio'] / ratios[p]:.2f}x {p}" for p in ("webdataset", "streaming", "litdata") if p in ratios]
            if parts:
                print(f"  dataio samples/s in epoch {e + 1}: " + ", ".join(parts))
            for p in ("webdataset", "streaming", "litdata"):
                if p in ratios:
                    results["dataio_over_peers"].setdefault(p, []).append(ratios["dataio"] / ratios[p])
    results["load_at_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"\nload average at the end: {results['load_at_end']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
