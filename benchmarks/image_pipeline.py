"""Image pipeline benchmark: dataio against its peers, side by side, in one run.

Every candidate reads the same JPEG files on the same cores and does the same
work: decode to RGB -> resize the short side to 256 (bilinear, antialiased)
-> center crop 224x224 -> normalize with the ImageNet mean/std to CHW float32
-> batches of 64 handed to torch. The candidates:

  dataio        the spec's first pipeline, ``run("torch", concurrency=64)``
  torch         torch.utils.data.DataLoader, PIL + torchvision transforms,
                num_workers = cores, pin_memory=False, persistent workers
  spdl          SPDL: FFmpeg demux/decode with a scale+crop filter on a thread
                pipeline, torch normalizes each batch
  dali          NVIDIA DALI CPU pipeline (device_id=None, all ops on the CPU)
  decode-only   the limit: simplejpeg (libjpeg-turbo) full-size decode of the
                same files on ``cores`` threads; no resize, no batches

Each candidate runs in its own child process (pinned to the chosen CPUs) so
that its peak memory is its own and a crash costs only its row. Per cell:
one warm-up epoch (which also gives the time to the first batch and the
output check), then N timed epochs; samples/s is the median over them.

    .venv-bench/bin/python benchmarks/image_pipeline.py                       # all usable CPUs
    .venv-bench/bin/python benchmarks/image_pipeline.py --cores 1            # single core
    .venv-bench/bin/python benchmarks/image_pipeline.py --cores all,1 --images 2000 --epochs 3

See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _sibling(name: str):
    """Loads benchmarks/<name>.py by path (a plain ``import datasets`` could find Hugging Face's)."""
    import importlib.util

    key = f"dataio_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # before exec: multiprocessing pickles its functions by module name
        spec.loader.exec_module(mod)
    return sys.modules[key]


datasets = _sibling("datasets")

CANDIDATES = ("dataio", "torch", "spdl", "dali", "decode-only")
PEERS = ("torch", "spdl", "dali")  # "best peer" is the fastest of these
LABELS = {
    "dataio": "dataio",
    "torch": "torch DataLoader + PIL/torchvision",
    "spdl": "SPDL (FFmpeg)",
    "dali": "DALI (CPU)",
    "decode-only": "decode-only limit (simplejpeg)",
}
INSTALL_HINT = {
    "dataio": "dataio is not importable: add a .pth pointing at packages/dataio-core/python (see benchmarks/README.md)",
    "torch": "uv pip install torch==2.9.1 torchvision==0.24.1 pillow",
    "spdl": "uv pip install spdl-core spdl-io; apt-get install -y libavcodec59 libavformat59 libavfilter8 libswscale6 libavdevice59",
    "dali": "uv pip install nvidia-dali-cuda120",
    "decode-only": "uv pip install simplejpeg",
}
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CROP = 224
SHORT = 256


# ----------------------------------------------------------------------------
# The child side: one candidate, one core count.
# ----------------------------------------------------------------------------


class Unavailable(Exception):
    """The candidate cannot run here (not installed, missing system library)."""


def _pin(cores: int) -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[:cores]
    if len(chosen) < len(allowed):
        os.sched_setaffinity(0, chosen)
    return chosen


def _import(name: str, cand: str):
    import importlib

    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, OSError for a missing shared library, anything a peer raises at import
        raise Unavailable(f"import {name} failed: {type(e).__name__}: {e} (install: {INSTALL_HINT[cand]})") from e


class Cell:
    """A candidate: ``load()`` imports its libraries (not timed), ``start()``
    builds the loader (timed: part of the time to the first batch),
    ``epoch()`` yields the batches of one epoch."""

    MODULES: tuple[str, ...] = ()
    KEY = ""

    def __init__(self, files: list[str], cfg: dict) -> None:
        self.files = files
        self.cfg = cfg
        self.cores = cfg["cores"]
        self.batch = cfg["batch"]

    def load(self) -> None:
        for m in self.MODULES:
            _import(m, self.KEY)

    def start(self) -> None:
        pass

    def epoch(self):  # -> Iterator[torch.Tensor]
        raise NotImplementedError

    def close(self) -> None:
        pass


class DataioCell(Cell):
    MODULES, KEY = ("torch", "dataio"), "dataio"

    def start(self) -> None:
        dataio = _import("dataio", "dataio")
        self.pipe = dataio.pipeline(
            dataio.slot("image").decode_image(mode="rgb").resize_short(SHORT).center_crop(h=CROP, w=CROP).normalize("imagenet"),
            dataio.batch(self.batch, prefetch=self.cfg["prefetch"]),
        )
        records = [{"image": f} for f in self.files]
        self.loader = self.pipe.bind(records).run("torch", concurrency=self.cfg["concurrency"])
        self.loader.__enter__()
        cpu, io_threads, _ = dataio._native.pool_info()
        self.info = {"cpu_pool_threads": cpu, "io_threads": io_threads, "concurrency": self.cfg["concurrency"], "prefetch_batches": self.cfg["prefetch"]}

    def epoch(self):
        for b in self.loader:
            yield b["image"]

    def close(self) -> None:
        self.loader.__exit__(None, None, None)


class TorchCell(Cell):
    MODULES, KEY = ("torch", "torch.utils.data", "torchvision.transforms", "PIL.Image"), "torch"

    def start(self) -> None:
        torch = _import("torch", "torch")
        T = _import("torchvision.transforms", "torch")
        Image = _import("PIL.Image", "torch")
        tf = T.Compose(
            [
                T.Resize(SHORT, interpolation=T.InterpolationMode.BILINEAR, antialias=True),
                T.CenterCrop(CROP),
                T.ToTensor(),
                T.Normalize(MEAN, STD),
            ]
        )
        files = self.files

        class Files(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return len(files)

            def __getitem__(self, i: int):
                with Image.open(files[i]) as im:
                    return tf(im.convert("RGB"))

        self.loader = torch.utils.data.DataLoader(
            Files(),
            batch_size=self.batch,
            shuffle=False,
            num_workers=self.cores,
            pin_memory=False,
            persistent_workers=True,
            prefetch_factor=self.cfg["torch_prefetch_factor"],
        )
        self.info = {"num_workers": self.cores, "prefetch_factor": self.cfg["torch_prefetch_factor"], "persistent_workers": True}

    def epoch(self):
        yield from self.loader

    def close(self) -> None:
        it = getattr(self.loader, "_iterator", None)
        if it is not None:
            it._shutdown_workers()


class SpdlCell(Cell):
    # FFmpeg filter: scale so that the short side is 256 (the other side keeps
    # the aspect ratio), bilinear (swscale widens the kernel when shrinking,
    # i.e. antialiased), center crop 224x224 (crop's default is centered), RGB.
    FILTER = (
        f"scale=w={SHORT}:h={SHORT}:force_original_aspect_ratio=increase:flags=bilinear,"
        f"crop=w={CROP}:h={CROP},format=pix_fmts=rgb24"
    )

    MODULES, KEY = ("torch", "spdl.io", "spdl.pipeline"), "spdl"

    def load(self) -> None:
        super().load()
        io = _import("spdl.io", "spdl")
        try:  # FFmpeg is loaded lazily; make a missing library show up here.
            io.decode_packets(io.demux_image(self.files[0]), filter_desc=self.FILTER)
        except Exception as e:
            raise Unavailable(f"SPDL cannot decode with FFmpeg: {type(e).__name__}: {e} (install: {INSTALL_HINT['spdl']})") from e

    def start(self) -> None:
        torch = _import("torch", "spdl")
        self.spdl_io = _import("spdl.io", "spdl")
        self.PipelineBuilder = _import("spdl.pipeline", "spdl").PipelineBuilder
        io = self.spdl_io
        scale = (1.0 / (255.0 * torch.tensor(STD))).view(1, 3, 1, 1)
        bias = (-torch.tensor(MEAN) / torch.tensor(STD)).view(1, 3, 1, 1)
        filt = self.FILTER

        def decode(path: str):
            return io.decode_packets(io.demux_image(path), filter_desc=filt)

        def to_batch(frames):
            hwc = io.to_torch(io.convert_frames(frames))  # (N, 224, 224, 3) uint8
            out = torch.empty((hwc.shape[0], 3, CROP, CROP), dtype=torch.float32)
            out.copy_(hwc.permute(0, 3, 1, 2))
            return out.mul_(scale).add_(bias)

        self.decode, self.to_batch = decode, to_batch
        self.info = {"num_threads": self.cores, "decode_concurrency": self.cores, "sink_buffer": self.cfg["prefetch"], "filter": self.FILTER}

    def epoch(self):
        # An SPDL pipeline is one pass over its source: one per epoch.
        pipe = (
            self.PipelineBuilder()
            .add_source(self.files)
            .pipe(self.decode, concurrency=self.cores, output_order="input")
            .aggregate(self.batch)
            .pipe(self.to_batch)
            .add_sink(self.cfg["prefetch"])
            .build(num_threads=self.cores)
        )
        with pipe.auto_stop():
            yield from pipe.get_iterator(timeout=600)


class DaliCell(Cell):
    MODULES, KEY = ("torch", "nvidia.dali", "nvidia.dali.plugin.pytorch"), "dali"

    def start(self) -> None:
        _import("torch", "dali")
        dali = _import("nvidia.dali", "dali")
        fn, types = dali.fn, dali.types
        plugin = _import("nvidia.dali.plugin.pytorch", "dali")
        files = self.files

        @dali.pipeline_def(
            batch_size=self.batch,
            num_threads=self.cores,
            device_id=None,
            prefetch_queue_depth=self.cfg["prefetch"],
        )
        def pipe():
            jpegs, _ = fn.readers.file(files=files, name="Reader", random_shuffle=False, pad_last_batch=True)
            img = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            img = fn.resize(img, resize_shorter=SHORT, interp_type=types.INTERP_LINEAR, antialias=True)
            return fn.crop_mirror_normalize(
                img,
                crop=(CROP, CROP),
                mean=[m * 255 for m in MEAN],
                std=[s * 255 for s in STD],
                dtype=types.FLOAT,
                output_layout="CHW",
            )

        p = pipe()
        p.build()
        self.info = {"num_threads": self.cores, "prefetch_queue_depth": self.cfg["prefetch"]}
        self.it = plugin.DALIGenericIterator(
            p,
            ["image"],
            reader_name="Reader",
            last_batch_policy=plugin.LastBatchPolicy.PARTIAL,
            auto_reset=True,
        )

    def epoch(self):
        for out in self.it:
            yield out[0]["image"]


class DecodeOnlyCell(Cell):
    """Full-size libjpeg-turbo decode on ``cores`` threads; yields batch-sized groups of shapes."""

    MODULES, KEY = ("simplejpeg",), "decode-only"

    def start(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.sj = _import("simplejpeg", "decode-only")
        self.pool = ThreadPoolExecutor(self.cores)
        self.info = {"threads": self.cores}

    def epoch(self):
        sj = self.sj

        def decode(path: str):
            with open(path, "rb") as f:
                data = f.read()
            return sj.decode_jpeg(data, colorspace="RGB").shape

        group = []
        for shape in self.pool.map(decode, self.files):
            group.append(shape)
            if len(group) == self.batch:
                yield group
                group = []
        if group:
            yield group

    def close(self) -> None:
        self.pool.shutdown()


CELLS = {"dataio": DataioCell, "torch": TorchCell, "spdl": SpdlCell, "dali": DaliCell, "decode-only": DecodeOnlyCell}


def run_cell(cand: str, files: list[str], cfg: dict) -> dict:
    res: dict = {"candidate": cand, "cores": cfg["cores"], "status": "ok"}
    res["cpus"] = _pin(cfg["cores"])
    decode_only = cand == "decode-only"
    if not decode_only:  # the decode-only limit never loads torch (its memory stays its own)
        torch = _import("torch", cand)
        torch.set_num_threads(cfg["cores"])
    cell = CELLS[cand](files, cfg)
    n_expected = len(files)
    t = time.perf_counter()
    cell.load()
    res["import_s"] = time.perf_counter() - t

    def check(x, where: str) -> int:
        if decode_only:
            return len(x)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{where}: batch is {type(x).__name__}, not a torch.Tensor")
        if x.dtype != torch.float32 or x.dim() != 4 or tuple(x.shape[1:]) != (3, CROP, CROP) or not 0 < x.shape[0] <= cfg["batch"]:
            raise AssertionError(f"{where}: batch is {tuple(x.shape)} {x.dtype}, expected (<= {cfg['batch']}, 3, {CROP}, {CROP}) float32")
        return int(x.shape[0])

    t0 = time.perf_counter()
    cell.start()
    res["start_s"] = time.perf_counter() - t0
    res["info"] = getattr(cell, "info", {})
    try:
        # Warm-up epoch: first batch time, the output check, per-image means.
        chan = None if decode_only else torch.zeros(3, dtype=torch.float64)
        sq = 0.0
        img_means: list[float] = []
        n = 0
        first = None
        for b in cell.epoch():
            if first is None:
                first = time.perf_counter() - t0
            n += check(b, "warm-up")
            if not decode_only:
                chan += b.sum(dim=(0, 2, 3), dtype=torch.float64)
                sq += float(torch.linalg.vector_norm(b, dtype=torch.float64) ** 2)
                img_means.extend(b.mean(dim=(1, 2, 3)).tolist())
        warm = time.perf_counter() - t0
        if n != n_expected:
            raise AssertionError(f"warm-up epoch delivered {n} samples, expected {n_expected}")
        res["first_batch_s"] = first
        res["warmup_samples_per_s"] = n / warm
        if not decode_only:
            per = n * CROP * CROP
            mean = chan / per
            res["channel_mean"] = [float(v) for v in mean]
            res["mean"] = float(chan.sum() / (3 * per))
            res["std"] = float((sq / (3 * per) - res["mean"] ** 2) ** 0.5)
            res["image_means"] = img_means
        # Timed epochs.
        rates = []
        for e in range(cfg["epochs"]):
            t = time.perf_counter()
            n = 0
            for b in cell.epoch():
                n += check(b, f"epoch {e}")
            dt = time.perf_counter() - t
            if n != n_expected:
                raise AssertionError(f"timed epoch {e} delivered {n} samples, expected {n_expected}")
            rates.append(n / dt)
        res["epoch_samples_per_s"] = rates
        res["samples_per_s"] = statistics.median(rates)
    finally:
        cell.close()
    return res


def child_main(args: argparse.Namespace) -> int:
    files = Path(args.files).read_text().split("\n")
    files = [f for f in files if f]
    cfg = {
        "cores": args.cell_cores,
        "batch": args.batch,
        "epochs": args.epochs,
        "prefetch": args.prefetch,
        "concurrency": args.concurrency,
        "torch_prefetch_factor": args.torch_prefetch_factor,
    }
    try:
        res = run_cell(args.cell, files, cfg)
    except Unavailable as e:
        res = {"candidate": args.cell, "cores": args.cell_cores, "status": "unavailable", "reason": str(e)}
    except Exception as e:  # noqa: BLE001  (any failure becomes this candidate's row)
        import traceback

        traceback.print_exc()
        res = {"candidate": args.cell, "cores": args.cell_cores, "status": "failed", "reason": f"{type(e).__name__}: {e}"}
    res["versions"] = _versions(args.cell)
    try:  # the kernel's high-water marks, a cross-check of the sampled tree RSS
        import resource

        res["maxrss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        res["maxrss_children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    except (ImportError, OSError):
        pass
    Path(args.result).write_text(json.dumps(res))
    sys.stdout.flush()
    sys.stderr.flush()
    # DALI and DataLoader threads can stall interpreter shutdown; the result is written.
    os._exit(0)


def _versions(cand: str) -> dict:
    from importlib import metadata

    names = {
        "dataio": ["torch"],
        "torch": ["torch", "torchvision", "pillow"],
        "spdl": ["spdl-core", "spdl-io", "torch"],
        "dali": ["nvidia-dali-cuda120", "torch"],
        "decode-only": ["simplejpeg"],
    }[cand]
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    if cand == "dataio":
        out["dataio"] = _dataio_version()
    return out


def _dataio_version() -> str | None:
    try:
        import dataio

        so = [p for p in Path(dataio.__file__).parent.glob("_native*.so")]
        built = _dt.datetime.fromtimestamp(so[0].stat().st_mtime).isoformat(timespec="seconds") if so else "?"
        return f"{getattr(dataio, '__version__', '?')} ({Path(dataio.__file__).parent}, _native built {built})"
    except (ImportError, OSError):
        return None


# ----------------------------------------------------------------------------
# The parent side: runs the cells, watches their memory, writes the report.
# ----------------------------------------------------------------------------


class TreeMemory(threading.Thread):
    """Peak RSS (sum over the process tree) and peak PSS of a child and its descendants."""

    def __init__(self, pid: int, interval: float, pss_interval: float) -> None:
        super().__init__(daemon=True)
        import psutil

        self.psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.pss_interval = pss_interval
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_procs = 1
        self.peak_threads = 0
        self._halt = threading.Event()

    def _tree(self):
        try:
            return [self.root, *self.root.children(recursive=True)]
        except self.psutil.Error:
            return []

    @staticmethod
    def _pss(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def run(self) -> None:
        procs = self._tree()
        last_tree = time.monotonic()
        last_pss = float("-inf")
        while not self._halt.is_set():
            now = time.monotonic()
            if now - last_tree >= 0.25:
                procs = self._tree()
                last_tree = now
                threads = 0
                for p in procs:
                    try:
                        threads += p.num_threads()
                    except self.psutil.Error:
                        pass
                self.peak_threads = max(self.peak_threads, threads)
            rss = 0
            for p in procs:
                try:
                    rss += p.memory_info().rss
                except self.psutil.Error:
                    pass
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_procs = max(self.peak_procs, len(procs))
            if self.pss_interval > 0 and now - last_pss >= self.pss_interval:
                self.peak_pss = max(self.peak_pss, sum(self._pss(p.pid) for p in procs))
                last_pss = now
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _tail(path: Path, n: int = 6) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def run_child(cand: str, cores: int, args: argparse.Namespace, filelist: Path, out: Path) -> dict:
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    result = logs / f"{cand}-c{cores}.json"
    log = logs / f"{cand}-c{cores}.log"
    result.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--cell", cand,
        "--cell-cores", str(cores),
        "--files", str(filelist),
        "--result", str(result),
        "--epochs", str(args.epochs),
        "--batch", str(args.batch),
        "--prefetch", str(args.prefetch),
        "--concurrency", str(args.concurrency),
        "--torch-prefetch-factor", str(args.torch_prefetch_factor),
    ]  # fmt: skip
    env = dict(os.environ)
    env["DATAIO_CPU_THREADS"] = str(cores)
    env["OMP_NUM_THREADS"] = str(cores)
    env.setdefault("PYTHONUNBUFFERED", "1")
    t = time.perf_counter()
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        mem = TreeMemory(proc.pid, args.rss_interval, args.pss_interval)
        mem.start()
        try:
            rc = proc.wait(timeout=args.cell_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        finally:
            mem.stop()
    # A DataLoader worker or DALI thread left behind in the child's session.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    wall = time.perf_counter() - t
    if rc is None:
        res = {"candidate": cand, "cores": cores, "status": "failed", "reason": f"timed out after {args.cell_timeout} s; log: {_tail(log, 3)}"}
    elif result.exists():
        res = json.loads(result.read_text())
        if res["status"] == "failed":
            res["reason"] += f" (log {log})"
    else:
        res = {"candidate": cand, "cores": cores, "status": "failed", "reason": f"child exited with code {rc} and no result; log: {_tail(log)}"}
    res["peak_rss_mb"] = mem.peak_rss / 2**20
    res["peak_pss_mb"] = mem.peak_pss / 2**20 if mem.peak_pss > 0 else None  # None: off, or the cell was too short
    res["processes"] = mem.peak_procs
    res["threads"] = mem.peak_threads
    res["cell_wall_s"] = wall
    return res


def _fmt(v, spec: str, empty: str = "-") -> str:
    return empty if v is None else format(v, spec)


def analyse(rows: list[dict], tol: float) -> dict:
    """Adds ratios and the output cross-check to ``rows`` (one core count); returns the summary."""
    by = {r["candidate"]: r for r in rows}
    ok = {c: r for c, r in by.items() if r["status"] == "ok"}
    ref = ok.get("dataio")
    # Reference for the output check: dataio if it ran, else the first peer that did.
    ref_out = ref or next((ok[c] for c in PEERS if c in ok), None)
    for r in rows:
        r["ratio_vs_dataio"] = r["samples_per_s"] / ref["samples_per_s"] if ref and r["status"] == "ok" else None
        if r["status"] != "ok":
            r["check"] = "-"
            continue
        if r["candidate"] == "decode-only":
            r["check"] = "n/a (decode only)"
            continue
        if ref_out is None or ref_out is r:
            r["check"] = f"ok (reference, mean {r['mean']:+.4f})"
            continue
        dch = max(abs(a - b) for a, b in zip(r["channel_mean"], ref_out["channel_mean"]))
        dimg = max((abs(a - b) for a, b in zip(r["image_means"], ref_out["image_means"])), default=0.0)
        r["channel_mean_delta"] = dch
        r["image_mean_max_delta"] = dimg
        verdict = "ok" if dch <= tol else "MISMATCH"
        r["check"] = f"{verdict} (mean {r['mean']:+.4f}, Δch {dch:.4f}, Δimg max {dimg:.3f})"
    peers = [ok[c] for c in PEERS if c in ok]
    best = max(peers, key=lambda r: r["samples_per_s"], default=None)
    dec = ok.get("decode-only")
    summary = {
        "cores": rows[0]["cores"],
        "best_peer": best["candidate"] if best else None,
        "dataio_over_best_peer": ref["samples_per_s"] / best["samples_per_s"] if ref and best else None,
        "dataio_over_decode_only": ref["samples_per_s"] / dec["samples_per_s"] if ref and dec else None,
    }
    for r in rows:
        r["dataio_over_best_peer"] = summary["dataio_over_best_peer"]
        r["dataio_over_decode_only"] = summary["dataio_over_decode_only"]
    return summary


COLUMNS = [
    ("candidate", "candidate"),
    ("cores", "cores"),
    ("samples/s", "samples_per_s"),
    ("× dataio", "ratio_vs_dataio"),
    ("spread", "spread"),
    ("first batch s", "first_batch_s"),
    ("peak RSS MiB", "peak_rss_mb"),
    ("peak PSS MiB", "peak_pss_mb"),
    ("procs", "processes"),
    ("output check / why not run", "check"),
]


def _cells(r: dict) -> list[str]:
    rates = r.get("epoch_samples_per_s") or []
    spread = (max(rates) - min(rates)) / statistics.median(rates) if len(rates) > 1 else None
    why = r.get("check", "-") if r["status"] == "ok" else f"{r['status'].upper()}: {r.get('reason', '')}"
    return [
        LABELS[r["candidate"]],
        str(r["cores"]),
        _fmt(r.get("samples_per_s"), ",.0f"),
        _fmt(r.get("ratio_vs_dataio"), ".2f"),
        _fmt(spread, ".0%"),
        _fmt(r.get("first_batch_s"), ".2f"),
        _fmt(r.get("peak_rss_mb"), ",.0f"),
        _fmt(r.get("peak_pss_mb"), ",.0f"),
        str(r.get("processes", "-")),
        why,
    ]


def _summary_line(s: dict) -> str:
    bp = f"{s['dataio_over_best_peer']:.2f}× (best peer: {LABELS[s['best_peer']]})" if s["dataio_over_best_peer"] else "n/a"
    do = f"{s['dataio_over_decode_only']:.2f}×" if s["dataio_over_decode_only"] else "n/a"
    return f"cores={s['cores']}: dataio / best peer = {bp}; dataio / decode-only limit = {do}"


def text_table(rows: list[dict]) -> str:
    head = [h for h, _ in COLUMNS]
    body = [_cells(r) for r in rows]
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(len(head) - 1)]
    lines = []

    def fmt_row(cells: list[str]) -> str:
        padded = [c.rjust(w) if 1 < i < len(widths) else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))]
        return "  ".join([*padded, cells[-1]])

    lines.append(fmt_row(head))
    lines.append("  ".join("-" * w for w in widths) + "  " + "-" * len(head[-1]))
    lines += [fmt_row(b) for b in body]
    return "\n".join(lines)


def markdown(rows: list[dict], summaries: list[dict], meta: dict) -> str:
    out = ["# Image pipeline benchmark", ""]
    out.append(
        f"{meta['when']} · {meta['host']['cpu']} · {meta['host']['usable_cpus']} usable CPUs · "
        f"load average at start {meta['host']['loadavg_start']} · python {meta['host']['python']}"
    )
    ds = meta["dataset"]
    out.append("")
    out.append(
        f"Workload: {ds['images']} JPEGs ({ds['total_mb']} MB, short side {ds['short_side_min']}–{ds['short_side_max']} "
        f"(median {ds['short_side_median']}), {ds['mean_megapixels']} MP on average, quality {ds['quality_range'][0]}–{ds['quality_range'][1]}) "
        f"from `{ds['root']}`; decode RGB → resize short side {SHORT} (bilinear, antialiased) → center crop {CROP} → "
        f"normalize ImageNet → CHW float32 batches of {meta['args']['batch']} into torch. "
        f"{meta['args']['epochs']} timed epochs after one warm-up epoch; samples/s is their median."
    )
    out.append("")
    out.append("| " + " | ".join(h for h, _ in COLUMNS) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * 7 + ["---"]) + "|")
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |")
    out.append("")
    for s in summaries:
        out.append(f"- {_summary_line(s)}")
    out.append("")
    out.append("Versions: " + "; ".join(f"{k} {v}" for k, v in sorted(meta["versions"].items()) if v))
    out.append("")
    return "\n".join(out)


def write_csv(rows: list[dict], path: Path) -> None:
    fields = [
        "candidate", "cores", "status", "samples_per_s", "ratio_vs_dataio", "dataio_over_best_peer",
        "dataio_over_decode_only", "epoch_samples_per_s", "warmup_samples_per_s", "first_batch_s", "start_s", "import_s",
        "peak_rss_mb", "peak_pss_mb", "maxrss_self_mb", "processes", "threads", "mean", "std", "channel_mean_delta", "image_mean_max_delta",
        "check", "reason",
    ]  # fmt: skip
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            row = dict(r)
            if "epoch_samples_per_s" in row:
                row["epoch_samples_per_s"] = " ".join(f"{v:.1f}" for v in row["epoch_samples_per_s"])
            w.writerow(row)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _git() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], check=False, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def parse_cores(spec: str, usable: int) -> list[int]:
    out = []
    for part in spec.split(","):
        part = part.strip().lower()
        if not part:
            continue
        n = usable if part == "all" else int(part)
        if n < 1:
            raise SystemExit(f"--cores: {part!r} is not a positive core count")
        if n > usable:
            print(f"[bench] --cores {n} is more than the {usable} usable CPUs; using {usable}", file=sys.stderr)
            n = usable
        if n not in out:
            out.append(n)
    return out


def parent_main(args: argparse.Namespace) -> int:
    usable = datasets.usable_cpus()
    cores_list = parse_cores(args.cores, usable)
    cands = [c.strip() for c in args.only.split(",")] if args.only else list(CANDIDATES)
    bad = [c for c in cands if c not in CANDIDATES]
    if bad:
        raise SystemExit(f"--only: unknown candidate(s) {bad}; choose from {', '.join(CANDIDATES)}")
    try:
        import psutil  # noqa: F401
    except ImportError:
        raise SystemExit("psutil is needed (it is in the bench dependency group)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    load = os.getloadavg()
    if load[0] > 0.25 * usable:
        print(f"[bench] WARNING: load average is {load[0]:.2f} on {usable} CPUs: other work is running, numbers will be noisy", file=sys.stderr)
    paths = datasets.build_images(args.images, args.data_dir)
    ds = datasets.describe(paths, args.data_dir)
    filelist = out / "files.txt"
    filelist.write_text("\n".join(paths) + "\n")
    # Read every file once so the page cache is warm for every candidate alike.
    for p in paths:
        with open(p, "rb") as f:
            f.read()
    print(
        f"[bench] {ds['images']} images ({ds['total_mb']} MB, short side {ds['short_side_min']}-{ds['short_side_max']}) · "
        f"cores {cores_list} · candidates {cands} · {args.epochs} timed epochs · python {sys.executable}",
        file=sys.stderr,
    )

    all_rows: list[dict] = []
    summaries = []
    versions: dict = {}
    for cores in cores_list:
        rows = []
        for cand in cands:
            print(f"[bench] cores={cores} {cand} ...", file=sys.stderr, flush=True)
            r = run_child(cand, cores, args, filelist, out)
            versions.update({k: v for k, v in (r.pop("versions", None) or {}).items() if v})
            msg = f"{r['samples_per_s']:,.0f} samples/s" if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')}"
            print(f"[bench]   -> {msg} ({r['cell_wall_s']:.1f} s)", file=sys.stderr, flush=True)
            rows.append(r)
        summaries.append(analyse(rows, args.tol))
        all_rows += rows

    meta = {
        "when": started,
        "host": {
            "cpu": _cpu_model(),
            "usable_cpus": usable,
            "loadavg_start": [round(v, 2) for v in load],
            "python": platform.python_version(),
            "git": _git(),
        },
        "dataset": ds,
        "args": {k: v for k, v in vars(args).items() if k not in ("cell", "cell_cores", "files", "result")},
        "versions": versions,
    }
    print()
    print(text_table(all_rows))
    print()
    for s in summaries:
        print(_summary_line(s))
    print("(× dataio = this candidate's samples/s divided by dataio's; spread = (max-min)/median over the timed epochs)")

    stem = out / "image_pipeline"
    write_csv(all_rows, stem.with_suffix(".csv"))
    stem.with_suffix(".md").write_text(markdown(all_rows, summaries, meta))
    slim = [{k: v for k, v in r.items() if k != "image_means"} for r in all_rows]
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": slim, "summaries": summaries}, indent=2))
    print(f"\nwrote {stem}.csv, {stem}.md and {stem}.json (logs under {out / 'logs'})")
    # Exit status: 2 when dataio itself did not run, 1 when an output check failed.
    if any(r["candidate"] == "dataio" and r["status"] != "ok" for r in all_rows):
        return 2
    failed_checks = [r for r in all_rows if str(r.get("check", "")).startswith("MISMATCH")]
    return 1 if failed_checks else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="image_pipeline.py",
        description="dataio vs torch DataLoader, SPDL, DALI (CPU) and the decode-only limit on one image pipeline, in one run.",
    )
    ap.add_argument("--images", type=int, default=2000, help="number of JPEGs in the workload (default 2000)")
    ap.add_argument("--data-dir", default=str(datasets.DEFAULT_ROOT), help="image cache folder (default %(default)s)")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs per cell, after one warm-up epoch (default 3)")
    ap.add_argument("--cores", default="all", help="core counts to run, comma separated: 'all' (usable CPUs, default), '1', 'all,1'")
    ap.add_argument("--only", default=None, help=f"comma-separated subset of: {', '.join(CANDIDATES)}")
    ap.add_argument("--out", default=str(REPO / "bench-out"), help="report folder (default %(default)s)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prefetch", type=int, default=4, help="batches prefetched by dataio, DALI (queue depth) and SPDL (sink) (default 4)")
    ap.add_argument("--concurrency", type=int, default=64, help="dataio records in flight (default 64)")
    ap.add_argument("--torch-prefetch-factor", type=int, default=2, help="DataLoader prefetch_factor, batches per worker (default 2)")
    ap.add_argument("--tol", type=float, default=0.03, help="largest per-channel mean difference (normalized units) accepted vs dataio")
    ap.add_argument("--cell-timeout", type=float, default=1800, help="seconds before a candidate is killed (default 1800)")
    ap.add_argument("--rss-interval", type=float, default=0.05, help="RSS sampling period, s")
    ap.add_argument("--pss-interval", type=float, default=1.0, help="PSS sampling period, s (0: off; each sample reads smaps)")
    # Internal: run one cell in this process.
    ap.add_argument("--cell", choices=CANDIDATES, help=argparse.SUPPRESS)
    ap.add_argument("--cell-cores", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.epochs < 1 or args.images < 1 or args.batch < 1:
        raise SystemExit("--epochs, --images and --batch must be >= 1")
    if args.cell:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
