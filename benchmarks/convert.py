"""Converting images to shards: dataio against LitData, MosaicML Streaming, webdataset and img2dataset, in one run.

    python benchmarks/convert.py [--images 10000] [--parts folder,urls] [--only NAMES] [--repeat 1]
                                 [--workers N] [--threads 64] [--nginx-workers 1] [--data DIR]
                                 [--keep] [--quick] [--json PATH]

Every candidate does the same work per image: decode the JPEG to RGB, scale
it so its short side is 256 (bilinear, antialiased: dataio's default
``resize_short`` interpolation, and Pillow's ``BILINEAR`` when shrinking; the
long side truncated, as dataio does), encode it as JPEG at quality 90
(baseline, 4:2:0: Pillow's default and dataio's ``encode_image``), and write
it with its label or caption into shards of 1,000 samples.

**The data.** ``--images`` JPEGs (default 10,000; ``--quick``: 1,000) made by
the core tests' photo maker (``packages/dataio-core/tests/_photos.py``, via
``dataio_bench.datasets``): crops of scikit-image's photographs, short side
256..800 px, JPEG quality 70..95. They are cached under ``--data`` (default
``/tmp/dataio-convert-bench``): ``photos/NNNNNN.jpg``, and for part (a) a
class folder view of the first N, ``folder-N/cKK/NNNNNN.jpg`` (hard links,
class ``i % 10``). The files are read once before the runs (a warm page
cache: this measures the converters' CPU work, not the disk).

**Part (a), an image folder** (``folder``) to WebDataset-like shards:

* ``dataio`` — ``dataio.write_shards(pipe.bind(records), DEST/train-{000000..}.tar,
  samples_per_shard=1000)`` in this process, records ``{"key": "cKK/NNNNNN",
  "image": path, "cls": KK}``, ``pipe = pipeline(slot("jpg",
  field="image").decode_image().resize_short(256).encode_image("jpeg",
  quality=90), slot("cls").decode_bytes(), batch(64))``; its CPU pool has
  every usable core (decode, resize and encode in the native runtime; the
  shards are uploaded on threads beside it).
* ``dataio-cli`` — ``python -m dataio convert FOLDER DEST --resize-short 256
  --quality 90 --samples-per-shard 1000 --quiet`` as a child process (Python
  start-up and imports included).
* ``webdataset`` — ``webdataset.ShardWriter(pattern, maxcount=1000)`` in this
  process, fed by a ``torch.utils.data.DataLoader(num_workers=--workers,
  batch_size=64)`` whose workers do the Pillow decode/resize/encode.
* ``streaming`` — MosaicML Streaming's ``MDSWriter(columns={"key": "str",
  "jpg": "bytes", "cls": "int"})`` fed by the same DataLoader; a new MDS
  shard every 1,000 samples (``flush_shard()``).
* ``litdata`` — ``litdata.optimize(fn, inputs, output_dir, chunk_size=1000,
  num_workers=--workers, start_method="fork")``, ``fn`` doing the Pillow
  decode/resize/encode and returning ``{"key": str, "jpg": bytes, "cls":
  int}`` (the JPEG bytes: a returned PIL image would be stored as raw pixels,
  less work than the others do).

**Part (b), a URL list** (``urls``): the same N images as a parquet of
``url`` and ``caption``, the URLs served by nginx on 127.0.0.1
(``dataio_bench.nginx``: plain GETs of the files under its root,
``--nginx-workers`` worker processes):

* ``dataio`` — ``write_shards`` of ``dataio.parquet_records(urls.parquet)``
  through ``slot("jpg", field="url").decode_image().resize_short(256)
  .encode_image("jpeg", quality=90)``, ``slot("txt",
  field="caption").decode_bytes()``, ``batch(64)``, after
  ``dataio.configure_http(allow_private=True)`` (dataio-http fetches).
* ``dataio-cli`` — ``python -m dataio convert urls.parquet DEST
  --resize-short 256 --quality 90 --samples-per-shard 1000 --allow-private
  --quiet``.
* ``img2dataset`` — ``img2dataset.download(url_list=urls.parquet,
  input_format="parquet", url_col="url", caption_col="caption",
  output_format="webdataset", image_size=256, resize_mode="keep_ratio" (the
  short side to 256), encode_quality=90, processes_count=--workers,
  thread_count=--threads, number_sample_per_shard=1000, compute_hash=None,
  extract_exif=False)``. img2dataset resizes with OpenCV's ``INTER_AREA``
  when shrinking (its default, the antialiased choice it offers); the hash and
  the EXIF extraction it does by default are turned off, so it does no more
  work than dataio.

**Columns.** ``samples/s``: samples written ÷ the wall time of the call (or of
the child process) to its return, output flushed; ``× dataio``: dataio's
samples/s ÷ this row's; ``cpu ms/sample``: CPU time of this process and of its
reaped children (``resource.getrusage`` of ``RUSAGE_SELF`` + ``RUSAGE_CHILDREN``,
around the candidate: the DataLoader and LitData workers, img2dataset's
processes, the CLI's process; not nginx's) ÷ samples; ``MB out``: the shards'
bytes; ``read back``: the output opened again by the peer's own format (tar
members, ``dataio.tar_records`` over dataio's ``shardindex.json``, MDS's and
LitData's index) and counted, and the first 50 images decoded: their short
side must be 256, and ``Δpx`` is their mean absolute difference (0..255) to
the Pillow pipeline's output of the same source image (resamplers and encoders
differ a little). A row that writes fewer than N samples or images of another
size fails the run (exit 1). With ``--repeat N`` the candidates take turns,
N rounds, and rates are medians.

A peer that is not installed gets a "not installed" row; the others still
run. The peers are not in the project's environments: install them into a
separate virtualenv that also sees dataio's (``docs/benchmark.md``,
"Converting to shards").
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHORT = 256
QUALITY = 90
PER_SHARD = 1000
CLASSES = 10
CHECK = 50  # images decoded per output to check size and content
PARTS = ("folder", "urls")
CANDIDATES = {
    "folder": ("dataio", "dataio-cli", "webdataset", "streaming", "litdata"),
    "urls": ("dataio", "dataio-cli", "img2dataset"),
}
PEER_MODULES = {"webdataset": ("webdataset", "webdataset"), "streaming": ("streaming", "mosaicml-streaming"),
                "litdata": ("litdata", "litdata"), "img2dataset": ("img2dataset", "img2dataset")}
REPO = Path(__file__).resolve().parent.parent

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # img2dataset's albumentations asks PyPI at import


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _harness() -> None:
    """Makes ``dataio_bench`` importable (the harness, or the repo's copy of it)."""
    if importlib.util.find_spec("dataio_bench") is None:
        sys.path.insert(0, str(REPO / "benchmarks" / "harness" / "src"))


# -- the data -------------------------------------------------------------------


@dataclass
class Item:
    index: int
    key: str  # cKK/NNNNNN
    path: str  # the photo in the class folder view
    cls: int
    caption: str


def build_data(root: Path, n: int) -> tuple[list[Item], Path, dict[str, Any]]:
    """The first ``n`` cached photos, their class folder view, and a summary."""
    _harness()
    from dataio_bench.datasets import build_images, describe

    photos = root / "photos"
    paths = build_images(n, photos)
    folder = root / f"folder-{n}"
    items = []
    for i, p in enumerate(paths):
        cls = i % CLASSES
        dst = folder / f"c{cls:02d}" / f"{i:06d}.jpg"
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(p, dst)
        items.append(Item(i, f"c{cls:02d}/{i:06d}", str(dst), cls, f"photo {i:06d} of class {cls}"))
    info = describe(paths, photos)
    return items, folder, info


def warm_page_cache(paths: list[str]) -> int:
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            total += len(f.read())
    return total


# -- the Pillow pipeline of the peers -----------------------------------------------


def pil_convert(data: bytes) -> bytes:
    """JPEG bytes → RGB → short side 256 (bilinear, antialiased when shrinking;
    long side truncated) → JPEG quality 90."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        img = im.convert("RGB")
    w, h = img.size
    nw, nh = (SHORT, int(h * SHORT / w)) if w <= h else (int(w * SHORT / h), SHORT)
    img = img.resize((nw, nh), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=QUALITY)
    return buf.getvalue()


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class PILConverted:
    """A map-style dataset of (key, converted JPEG, class): what the DataLoader's workers compute."""

    def __init__(self, items: list[Item]) -> None:
        self.rows = [(it.key, it.path, it.cls) for it in items]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> tuple[str, bytes, int]:
        key, path, cls = self.rows[i]
        return key, pil_convert(_read(path)), cls


def _as_list(batch: list[Any]) -> list[Any]:
    return batch


def _converted(items: list[Item], workers: int) -> Iterator[tuple[str, bytes, int]]:
    from torch.utils.data import DataLoader

    loader = DataLoader(PILConverted(items), batch_size=64, num_workers=workers, collate_fn=_as_list)
    for batch in loader:
        yield from batch


def _litdata_fn(row: tuple[str, str, int]) -> dict[str, Any]:
    key, path, cls = row
    return {"key": key, "jpg": pil_convert(_read(path)), "cls": cls}


# -- the candidates ---------------------------------------------------------------
# Each writes the N samples under ``dest`` (a fresh folder) and returns how many
# it reports written (None: it does not say).


@dataclass
class Job:
    items: list[Item]
    folder: Path  # the class folder view
    urls: Path | None  # the URL list (part b)
    dest: Path
    workers: int
    threads: int
    scratch: Path


def dataio_folder(job: Job) -> int:
    import dataio

    records = [{"key": it.key, "image": it.path, "cls": it.cls} for it in job.items]
    pipe = dataio.pipeline(
        dataio.slot("jpg", field="image").decode_image().resize_short(SHORT).encode_image("jpeg", quality=QUALITY),
        dataio.slot("cls").decode_bytes(),
        dataio.batch(64),
    )
    report = dataio.write_shards(pipe.bind(records), str(job.dest / "train-{000000..}.tar"),
                                 samples_per_shard=PER_SHARD, progress=False)
    return report.samples


def dataio_urls(job: Job) -> int:
    import dataio

    assert job.urls is not None
    dataio.configure_http(allow_private=True)
    pipe = dataio.pipeline(
        dataio.slot("jpg", field="url").decode_image().resize_short(SHORT).encode_image("jpeg", quality=QUALITY),
        dataio.slot("txt", field="caption").decode_bytes(),
        dataio.batch(64),
    )
    report = dataio.write_shards(pipe.bind(dataio.parquet_records(str(job.urls))),
                                 str(job.dest / "train-{000000..}.tar"), samples_per_shard=PER_SHARD, progress=False)
    return report.samples


def dataio_cli(job: Job, src: str, *extra: str) -> None:
    cmd = [sys.executable, "-m", "dataio", "convert", src, str(job.dest / "train-{000000..}.tar"),
           "--resize-short", str(SHORT), "--quality", str(QUALITY), "--samples-per-shard", str(PER_SHARD),
           "--quiet", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"python -m dataio convert exited {done.returncode}: {done.stderr[-2000:]}")


def webdataset_folder(job: Job) -> int:
    import webdataset as wds

    job.dest.mkdir(parents=True, exist_ok=True)
    n = 0
    with contextlib.redirect_stdout(io.StringIO()):  # ShardWriter prints each shard it opens
        with wds.ShardWriter(str(job.dest / "train-%06d.tar"), maxcount=PER_SHARD) as sink:
            for key, jpg, cls in _converted(job.items, job.workers):
                sink.write({"__key__": key, "jpg": jpg, "cls": cls})
                n += 1
    return n


def streaming_folder(job: Job) -> int:
    from streaming import MDSWriter

    n = 0
    with MDSWriter(out=str(job.dest), columns={"key": "str", "jpg": "bytes", "cls": "int"}, size_limit=1 << 30) as w:
        for key, jpg, cls in _converted(job.items, job.workers):
            w.write({"key": key, "jpg": jpg, "cls": cls})
            n += 1
            if n % PER_SHARD == 0:  # shards of 1,000 samples, as the others write
                w.flush_shard()
                w._reset_cache()
    return n


def litdata_folder(job: Job) -> None:
    import litdata

    env = {"DATA_OPTIMIZER_CACHE_FOLDER": str(job.scratch / "chunks"),
           "DATA_OPTIMIZER_DATA_CACHE_FOLDER": str(job.scratch / "data")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            litdata.optimize(fn=_litdata_fn, inputs=[(it.key, it.path, it.cls) for it in job.items],
                             output_dir=str(job.dest), chunk_size=PER_SHARD, num_workers=job.workers,
                             start_method="fork", verbose=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def img2dataset_urls(job: Job) -> None:
    import img2dataset

    assert job.urls is not None
    with contextlib.redirect_stdout(io.StringIO()):
        img2dataset.download(
            url_list=str(job.urls), input_format="parquet", url_col="url", caption_col="caption",
            output_format="webdataset", output_folder=str(job.dest), image_size=SHORT, resize_mode="keep_ratio",
            encode_quality=QUALITY, encode_format="jpg", processes_count=job.workers, thread_count=job.threads,
            number_sample_per_shard=PER_SHARD, compute_hash=None, extract_exif=False, timeout=30,
        )


# -- reading the output back ------------------------------------------------------


def tar_members(dest: Path) -> Iterator[tuple[str, dict[str, bytes]]]:
    """(key, {ext: bytes}) of every sample in the tar shards under ``dest``, in order."""
    for shard in sorted(dest.glob("*.tar")):
        cur: tuple[str, dict[str, bytes]] | None = None
        with tarfile.open(shard) as tf:
            for m in tf:
                if not m.isfile():
                    continue
                d, _, base = m.name.rpartition("/")
                key = (d + "/" if d else "") + base.split(".", 1)[0]
                ext = base.split(".", 1)[1] if "." in base else ""
                if cur is None or cur[0] != key:
                    if cur is not None:
                        yield cur
                    cur = (key, {})
                f = tf.extractfile(m)
                cur[1][ext] = f.read() if f is not None else b""
        if cur is not None:
            yield cur


def _index_of(key: str, members: dict[str, Any]) -> int:
    """The source image of a sample: from its key (cKK/NNNNNN) or its caption ("photo NNNNNN ...")."""
    txt = members.get("txt")
    if txt is not None:
        text = txt.decode() if isinstance(txt, bytes) else str(txt)
        return int(text.split()[1])
    return int(str(key).rsplit("/", 1)[-1])


def read_tars(dest: Path) -> tuple[int, list[tuple[int, bytes]]]:
    n, sample = 0, []
    for key, members in tar_members(dest):
        if "jpg" not in members:
            continue
        n += 1
        if len(sample) < CHECK:
            sample.append((_index_of(key, members), members["jpg"]))
    return n, sample


def read_dataio(dest: Path) -> tuple[int, list[tuple[int, bytes]]]:
    import dataio

    counted = len(dataio.tar_records(str(dest / "shardindex.json")))
    n, sample = read_tars(dest)
    if counted != n:
        raise RuntimeError(f"dataio.tar_records over {dest}/shardindex.json gives {counted} samples, the tars hold {n}")
    return n, sample


def read_mds(dest: Path) -> tuple[int, list[tuple[int, bytes]]]:
    from streaming.base.format import reader_from_json

    index = json.loads((dest / "index.json").read_text())
    n = sum(s["samples"] for s in index["shards"])
    sample: list[tuple[int, bytes]] = []
    for info in index["shards"]:
        reader = reader_from_json(str(dest), None, info)
        for j in range(info["samples"]):
            if len(sample) >= CHECK:
                return n, sample
            s = reader.get_item(j)
            sample.append((_index_of(s["key"], {}), s["jpg"]))
    return n, sample


def read_litdata(dest: Path) -> tuple[int, list[tuple[int, bytes]]]:
    import litdata

    index = json.loads((dest / "index.json").read_text())
    n = sum(c["chunk_size"] for c in index["chunks"])
    ds = litdata.StreamingDataset(input_dir=str(dest))
    sample = []
    for j in range(min(CHECK, len(ds))):
        s = ds[j]
        sample.append((_index_of(s["key"], {}), s["jpg"]))
    return n, sample


def check_images(sample: list[tuple[int, bytes]], items: list[Item]) -> dict[str, Any]:
    """Short sides and the mean absolute difference to the Pillow pipeline's output."""
    import numpy as np
    from PIL import Image

    wrong, diffs = [], []
    for i, jpg in sample:
        with Image.open(io.BytesIO(jpg)) as im:
            got = np.asarray(im.convert("RGB"), dtype=np.int16)
        if min(got.shape[:2]) != SHORT:
            wrong.append(f"{i}: {got.shape[1]}x{got.shape[0]}")
            continue
        with Image.open(io.BytesIO(pil_convert(_read(items[i].path)))) as im:
            ref = np.asarray(im.convert("RGB"), dtype=np.int16)
        h, w = min(got.shape[0], ref.shape[0]), min(got.shape[1], ref.shape[1])  # ±1 px on the long side
        diffs.append(float(np.abs(got[:h, :w] - ref[:h, :w]).mean()))
    return {"checked": len(sample), "wrong_size": wrong, "mean_abs_diff": statistics.fmean(diffs) if diffs else None}


def out_bytes(dest: Path) -> int:
    return sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())


# -- measuring ----------------------------------------------------------------------


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@dataclass
class Run:
    seconds: float
    cpu: float
    written: int
    out_bytes: int
    check: dict[str, Any]


@dataclass
class Row:
    part: str
    name: str
    what: str
    go: Callable[[Job], int | None]
    read: Callable[[Path], tuple[int, list[tuple[int, bytes]]]]
    unavailable: str | None = None
    error: str | None = None
    runs: list[Run] = field(default_factory=list)


def measure(row: Row, job: Job, n: int) -> Run:
    shutil.rmtree(job.dest, ignore_errors=True)
    shutil.rmtree(job.scratch, ignore_errors=True)
    job.dest.mkdir(parents=True)
    job.scratch.mkdir(parents=True)
    c0, t0 = _cpu(), time.perf_counter()
    reported = row.go(job)
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    written, sample = row.read(job.dest)
    if reported is not None and reported != written:
        raise RuntimeError(f"reported {reported} samples written, {written} read back")
    check = check_images(sample, job.items)
    run = Run(seconds, cpu, written, out_bytes(job.dest), check)
    shutil.rmtree(job.scratch, ignore_errors=True)
    return run


def peer_missing(name: str) -> str | None:
    mod, dist = PEER_MODULES.get(name, (None, None))
    if mod is None or importlib.util.find_spec(mod) is not None:
        return None
    return f"not installed (pip install {dist}; see docs/benchmark.md, 'Converting to shards')"


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dist in ("dataio", "dataio-http", "pillow", "torch", "numpy", "webdataset", "mosaicml-streaming", "litdata",
                 "img2dataset", "opencv-python-headless"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def rows_for(part: str, folder: Path, urls: Path | None, workers: int, threads: int) -> list[Row]:
    if part == "folder":
        return [
            Row(part, "dataio", "write_shards(pipe.bind(records)), batch 64, CPU pool on all cores",
                dataio_folder, read_dataio),
            Row(part, "dataio-cli", "python -m dataio convert FOLDER DEST (child process)",
                lambda j: dataio_cli(j, str(folder)), read_dataio),
            Row(part, "webdataset", f"ShardWriter(maxcount=1000) + DataLoader({workers} workers, PIL)",
                webdataset_folder, read_tars),
            Row(part, "streaming", f"MDSWriter + DataLoader({workers} workers, PIL)", streaming_folder, read_mds),
            Row(part, "litdata", f"litdata.optimize(chunk_size=1000, num_workers={workers}, PIL)",
                litdata_folder, read_litdata),
        ]
    assert urls is not None
    return [
        Row(part, "dataio", "write_shards(parquet_records(urls)), batch 64, dataio-http",
            dataio_urls, read_dataio),
        Row(part, "dataio-cli", "python -m dataio convert urls.parquet DEST --allow-private (child process)",
            lambda j: dataio_cli(j, str(urls), "--allow-private"), read_dataio),
        Row(part, "img2dataset", f"img2dataset.download(processes_count={workers}, thread_count={threads}, "
            "keep_ratio, OpenCV INTER_AREA)", img2dataset_urls, read_tars),
    ]


def write_url_list(path: Path, items: list[Item], endpoint: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"url": [f"{endpoint}/photos/{it.index:06d}.jpg" for it in items],
                      "caption": [it.caption for it in items]})
    pq.write_table(table, path)


def report(part: str, rows: list[Row], n: int, cpus: int, results: dict[str, Any]) -> bool:
    """Prints the part's table; returns False when a row failed its checks."""
    ok = True
    base = next((r for r in rows if r.name == "dataio" and r.runs), None)
    base_rate = statistics.median(n / x.seconds for x in base.runs) if base else None
    title = "an image folder" if part == "folder" else "a URL list over nginx (127.0.0.1)"
    print(f"\n({'a' if part == 'folder' else 'b'}) {title} → shards of {PER_SHARD}: {n} JPEGs, resize-short {SHORT}, "
          f"quality {QUALITY}, {cpus} cores" + (f", median of {len(base.runs)} rounds" if base and len(base.runs) > 1 else ""))
    print(f"  {'candidate':<12} {'samples/s':>9} {'× dataio':>8} {'seconds':>8} {'cpu ms/sample':>13} {'MB out':>7} "
          f"{'read back':>9} {'Δpx':>5}  what")
    out: dict[str, Any] = {}
    for r in rows:
        if r.unavailable:
            print(f"  {r.name:<12} {r.unavailable}")
            out[r.name] = {"unavailable": r.unavailable}
            continue
        if not r.runs:
            print(f"  {r.name:<12} FAILED: {r.error}")
            out[r.name] = {"error": r.error}
            ok = False
            continue
        rate = statistics.median(x.written / x.seconds for x in r.runs)
        cpu = statistics.median(x.cpu / max(x.written, 1) for x in r.runs)
        secs = statistics.median(x.seconds for x in r.runs)
        last = r.runs[-1]
        good = all(x.written == n and not x.check["wrong_size"] for x in r.runs)
        ok &= good
        ratio = base_rate / rate if base_rate and r is not base else None
        dpx = last.check["mean_abs_diff"]
        print(f"  {r.name:<12} {rate:9.1f} {(f'{ratio:.2f}' if ratio else '–'):>8} {secs:8.1f} {1e3 * cpu:13.2f} "
              f"{last.out_bytes / 1e6:7.1f} {(str(last.written) if good else 'NO ' + str(last.written)):>9} "
              f"{(f'{dpx:.2f}' if dpx is not None else '–'):>5}  {r.what}")
        for x in r.runs:
            if x.check["wrong_size"]:
                print(f"    {r.name}: images not {SHORT} px on the short side: {', '.join(x.check['wrong_size'][:5])}")
        out[r.name] = {"what": r.what, "samples_per_s": rate, "dataio_over_this": ratio, "seconds": [x.seconds for x in r.runs],
                       "cpu_s": [x.cpu for x in r.runs], "cpu_s_per_sample": cpu, "written": [x.written for x in r.runs],
                       "out_bytes": last.out_bytes, "check": last.check}
    if base_rate:
        parts = [f"{out[r.name]['dataio_over_this']:.2f}x {r.name}" for r in rows
                 if r.runs and not r.name.startswith("dataio")]
        if parts:
            print("  dataio samples/s: " + ", ".join(parts))
    results[part] = out
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--images", type=int, default=10_000, help="JPEGs converted (default 10,000)")
    ap.add_argument("--parts", default=",".join(PARTS), help="folder, urls or both (default)")
    ap.add_argument("--only", default=None, help="candidates to run (default all), e.g. dataio,litdata")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; rates are medians (default 1)")
    ap.add_argument("--workers", type=int, default=usable_cpus(), help="the peers' worker processes (default: CPUs)")
    ap.add_argument("--threads", type=int, default=64, help="img2dataset's thread_count (default 64)")
    ap.add_argument("--nginx-workers", type=int, default=1)
    ap.add_argument("--data", type=Path, default=Path("/tmp/dataio-convert-bench"), help="the photo cache")
    ap.add_argument("--keep", action="store_true", help="keep the last round's output folders")
    ap.add_argument("--quick", action="store_true", help="1,000 images: a smoke test")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.images = min(args.images, 1000)
    parts = [p for p in args.parts.split(",") if p]
    if bad := [p for p in parts if p not in PARTS]:
        ap.error(f"unknown part(s) {bad}; choose from {PARTS}")
    only = set(args.only.split(",")) if args.only else None
    cpus = usable_cpus()
    load = os.getloadavg()[0]
    n = args.images
    print(f"{n} JPEGs, {cpus} cores, load average {load:.2f}; peers' workers {args.workers}", flush=True)
    items, folder, info = build_data(args.data, n)
    print(f"data: {args.data} ({info.get('total_mb', '?')} MB; {json.dumps({k: v for k, v in info.items() if k != 'total_mb'})})",
          flush=True)
    warm_page_cache([it.path for it in items])
    vers = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v), flush=True)

    work = Path(tempfile.mkdtemp(prefix="dataio-convert-run-"))
    results: dict[str, Any] = {"host": {"cores": cpus, "load_at_start": load, "python": platform.python_version()},
                               "versions": vers, "args": {k: str(v) for k, v in vars(args).items()}, "data": info}
    ok = True
    server = None
    try:
        for part in parts:
            urls = None
            if part == "urls":
                _harness()
                from dataio_bench.nginx import Nginx

                root = work / "www"
                root.mkdir()
                (root / "photos").symlink_to((args.data / "photos").resolve(), target_is_directory=True)
                server = Nginx(root, args.nginx_workers, access_log=False)
                urls = work / "urls.parquet"
                write_url_list(urls, items, server.endpoint)
                print(f"\nURL list: {urls} ({n} rows), served by nginx on {server.endpoint}", flush=True)
            rows = [r for r in rows_for(part, folder, urls, args.workers, args.threads)
                    if only is None or r.name in only]
            for r in rows:
                r.unavailable = peer_missing(r.name)
                if r.unavailable:
                    print(f"  [{part}] {r.name}: {r.unavailable}", flush=True)
            for rnd in range(args.repeat):
                for r in rows:
                    if r.unavailable or r.error:
                        continue
                    job = Job(items, folder, urls, work / f"{part}-{r.name}", args.workers, args.threads,
                              work / "scratch")
                    try:
                        run = measure(r, job, n)
                    except Exception as e:  # noqa: BLE001 - a row that fails says why; the others still run
                        r.error = f"{type(e).__name__}: {e}"
                        print(f"  [{part}] {r.name}: FAILED — {r.error}", flush=True)
                        continue
                    finally:
                        if not (args.keep and rnd == args.repeat - 1):
                            shutil.rmtree(job.dest, ignore_errors=True)
                    r.runs.append(run)
                    print(f"  [{part}, round {rnd + 1}/{args.repeat}] {r.name:<12} {run.written} samples in "
                          f"{run.seconds:7.2f} s ({run.written / run.seconds:7.1f}/s), cpu {run.cpu:7.2f} s, "
                          f"load {os.getloadavg()[0]:.2f}", flush=True)
            if server is not None:
                server.stop()
                server = None
            ok &= report(part, rows, n, cpus, results)
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"outputs kept under {work}")
    results["load_at_end"] = os.getloadavg()[0]
    print(f"\nload average at the end: {results['load_at_end']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
