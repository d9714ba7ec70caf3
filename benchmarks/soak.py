"""Soak test of the image pipeline: many epochs over a dataset with corrupt files.

    python benchmarks/soak.py [--minutes 60] [--images 4000] [--corrupt-fraction 0.01]
                              [--concurrency 512] [--batch-size 64] [--workdir DIR]
                              [--json PATH] [--output torch|numpy] [--reopen-every N]

Not a pytest test: a script that runs for ``--minutes`` (default 60; ``--minutes
2`` for a quick look) and exits 0 when every check held, 1 when one did not
(the reasons printed last), 130 when interrupted with nothing failed so far
(Ctrl-C prints the summary of the epochs run).

**The data.** ``--images`` files (default 4000) made with PIL and numpy from
a fixed seed (``--seed``) in a temporary folder, or under ``--workdir`` (kept
and reused by later runs with the same parameters). Each image is 64–256 px
per side: a flat color chosen per image, plus ramps that are antisymmetric
about the center and zero-mean noise, so the mean color of any centered crop
of it is that color (the pixel check below). About 80% are RGB JPEGs (some
progressive, quality 70–95), the rest grayscale JPEGs, RGB, RGBA and
grayscale PNGs, and valid images under the other format's extension (PNG
bytes in ``.jpg``, JPEG bytes in ``.png``; these are good samples, the
decoders sniff the content). ``--corrupt-fraction`` of them (default 0.01,
at least one of each kind when there are enough) are damaged, in turns of
these kinds, and the script records which:

* ``truncated_jpeg`` / ``truncated_png`` — a valid file cut at 5–90% of its length;
* ``random_bytes`` — random bytes named ``.jpg``;
* ``jpeg_garbage`` — a JPEG SOI/JFIF header followed by random bytes;
* ``zero_bytes`` — an empty ``.jpg``;
* ``wrong_extension`` — not an image at all under an image extension (an
  HTML error page, a PDF, a JSON document: what scrapers save);
* ``missing`` — the record names a file that does not exist.

**The pipeline.** Records ``{"key": "00042", "image": PATH, "sid": 42}``
through ``slot("image").decode_image(mode="rgb").resize_short(96)
.center_crop(h=80, w=80).normalize("imagenet")``, ``slot("sid")
.decode_bytes()`` (the sample id, carried through as a tensor),
``batch(--batch-size)``, run with ``run(--output, concurrency=--concurrency,
on_failure="skip", log_errors=<a counter>, seed=--seed)``. One loader runs
epoch after epoch (``set_epoch(n)`` before each; ``--reopen-every N`` closes
it and opens a new one every N epochs instead), until ``--minutes`` have
passed (the epoch under way finishes; at least 3 epochs after the warm-up
are run whatever the time).

**Every epoch** is checked (a failing epoch is reported and the run goes on):

* every good sample delivered exactly once, no corrupt one delivered
  (``batch.indices``), the batches as many as ``len(loader)``;
* the id travels with the row: ``batch["sid"]``, ``batch.keys`` and
  ``batch.indices`` agree row for row, and each row's mean color (the
  normalization undone) is its image's color within ``--pixel-tolerance``
  (0–255 units), so a row cannot carry another sample's pixels;
* every corrupt sample is reported exactly once on ``batch.errors``, as a
  ``dataio.errors.RowError`` naming its key, index, URI (the path), slot
  ``image`` and op (``read`` for the missing file, ``decode_image`` for the
  others), with ``cause_kind`` ``NotFoundError`` / ``DecodeError`` (any
  other kind, or none, counts as an untyped error); no good sample fails;
  the ``log_errors`` callable received the same rows;
* ``loader.stats()`` agrees: ``records_done`` = all records,
  ``records_failed`` = the corrupt ones, ``batches_delivered`` = batches;
* the epoch's order differs from the previous epoch's (shuffled per epoch);
  at the end a fresh loader's epoch 0 gives epoch 0's order again.

**Resources** are sampled after every epoch (the epoch's run closed, after
``gc.collect()``): RSS (``VmRSS`` of ``/proc/self/status``), open file
descriptors (``/proc/self/fd``), threads (``Threads``), memory maps (lines
of ``/proc/self/maps``) and the engine's live buffers
(``dataio._native.live_buffers()``). The warm-up is the first
``--warmup-epochs`` epochs (2) or the first ``--warmup-fraction`` of the time
(0.1), whichever ends later; the sample at its end is the baseline. Reported:
baseline, min, max and last of each, and the growth slope per hour (least
squares over the samples after the warm-up, and over their second half:
a leak keeps its slope, an allocator settling loses it; over a few minutes
the slopes are noise). The run fails if, between the
baseline and the last sample, RSS grew by more than 5% of the baseline + 16
MiB (``--rss-tolerance-pct``, ``--rss-tolerance-mib``), fds or threads by
more than 2 (``--fd-tolerance``, ``--thread-tolerance``), memory maps by more
than 32 (``--maps-tolerance``), or live engine buffers by more than 4
(``--buffer-tolerance``). A batch that does not arrive within
``--stall-seconds`` (300) dumps every thread's stack and exits 1.

The summary is a table (epochs, samples/s, samples delivered, corrupt
skipped, the resources); ``--json PATH`` writes it with every epoch's
figures.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import hashlib
import json
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import dataio
from dataio.errors import RowError

DATA_VERSION = 1
SIDE = (64, 256)  # each side of a stored image, px
SHORT, CROP = 96, 80
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float64) * 255.0
STD = np.array([0.229, 0.224, 0.225], dtype=np.float64) * 255.0
CORRUPT_KINDS = (
    "truncated_jpeg",
    "truncated_png",
    "random_bytes",
    "jpeg_garbage",
    "zero_bytes",
    "wrong_extension",
    "missing",
)
# What the loader must say about each kind: (op, cause_kind).
EXPECTED_ERROR = {kind: ("read", "NotFoundError") if kind == "missing" else ("decode_image", "DecodeError") for kind in CORRUPT_KINDS}
TYPED_CAUSES = set(dataio.errors.__all__) - {"BY_KIND"}
MAX_PROBLEMS_KEPT = 50  # problem lines kept per run (counts are kept for all)


class Watchdog:
    """One thread for the whole run: when ``beat()`` has not been called for
    ``seconds`` while armed, dumps every thread's stack and exits 1."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.last = time.monotonic()
        self.armed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="soak-watchdog", daemon=True)
        self._thread.start()

    def beat(self, armed: bool = True) -> None:
        self.last = time.monotonic()
        self.armed = armed

    def _watch(self) -> None:
        while not self._stop.wait(min(5.0, self.seconds / 4)):
            if self.armed and time.monotonic() - self.last > self.seconds:
                print(f"\nFAIL: stalled: no batch for {self.seconds:g} s; the stacks:", file=sys.stderr, flush=True)
                faulthandler.dump_traceback(all_threads=True)
                os._exit(1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# -- the data -----------------------------------------------------------------


def _picture(rng: np.random.Generator, h: int, w: int, gray: bool) -> tuple[np.ndarray, np.ndarray]:
    """An HxWx3 (or HxW when gray) uint8 image whose centered crops all have
    the mean color returned with it: a flat color, ramps antisymmetric about
    the center, zero-mean noise."""
    chans = 1 if gray else 3
    base = rng.integers(48, 208, chans).astype(np.float64)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    xx = (xx - (w - 1) / 2) / w
    yy = (yy - (h - 1) / 2) / h
    ax, ay = rng.uniform(-40, 40, chans), rng.uniform(-40, 40, chans)
    arr = base + xx[..., None] * ax + yy[..., None] * ay + rng.integers(-6, 7, (h, w, chans))
    arr = np.clip(np.rint(arr), 0, 255).astype(np.uint8)
    color = np.repeat(base, 3) if gray else base
    return (arr[..., 0] if gray else arr), color


def _encode(arr: np.ndarray, fmt: str, rng: np.random.Generator, alpha: bool = False) -> bytes:
    import io

    img = Image.fromarray(arr)
    if alpha:
        a = Image.fromarray(rng.integers(1, 256, arr.shape[:2], dtype=np.uint8))
        img = img.convert("RGBA")
        img.putalpha(a)
    out = io.BytesIO()
    if fmt == "JPEG":
        img.save(out, "JPEG", quality=int(rng.integers(70, 96)), progressive=bool(rng.random() < 0.2))
    else:
        img.save(out, "PNG", compress_level=1)
    return out.getvalue()


def _not_an_image(rng: np.random.Generator, i: int) -> tuple[bytes, str]:
    which = i % 3
    if which == 0:
        return (b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1></body></html>\n", ".jpg")
    if which == 1:
        return (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + rng.bytes(int(rng.integers(200, 2000))), ".png")
    return (json.dumps({"error": "rate limited", "id": i}).encode(), ".jpg")


def make_dataset(folder: Path, n: int, fraction: float, seed: int) -> dict[str, Any]:
    """Writes (or finds, when ``folder`` holds the same parameters) the
    dataset; returns its manifest: records, each image's color, which ids are
    corrupt and how."""
    params = {"version": DATA_VERSION, "images": n, "corrupt_fraction": fraction, "seed": seed}
    manifest = folder / "manifest.json"
    if manifest.exists():
        info = json.loads(manifest.read_text())
        if info.get("params") == params and all(
            Path(r["image"]).exists() or info["corrupt"].get(str(r["sid"])) == "missing" for r in info["records"]
        ):
            info["built_s"] = 0.0
            return info
    t0 = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    top = np.random.default_rng([seed, 1 << 20])
    n_corrupt = min(n - 1, round(n * fraction)) if fraction > 0 else 0
    if fraction > 0:
        n_corrupt = max(1, n_corrupt)
    corrupt_ids = sorted(int(x) for x in top.choice(n, size=n_corrupt, replace=False))
    kinds = list(CORRUPT_KINDS)
    top.shuffle(kinds)
    order = [int(x) for x in top.permutation(len(corrupt_ids))]
    corrupt = {corrupt_ids[j]: kinds[k % len(kinds)] for k, j in enumerate(order)}
    records: list[dict[str, Any]] = []
    colors: list[list[float]] = []
    formats: dict[str, int] = {}
    nbytes = 0
    for i in range(n):
        rng = np.random.default_rng([seed, i])
        h, w = (int(v) for v in rng.integers(SIDE[0], SIDE[1] + 1, size=2))
        u = rng.random()
        kind = corrupt.get(i)
        if kind is None:
            if u < 0.80:
                fmt, ext, gray, alpha = "JPEG", ".jpg", False, False
            elif u < 0.85:
                fmt, ext, gray, alpha = "JPEG", ".jpg", True, False
            elif u < 0.92:
                fmt, ext, gray, alpha = "PNG", ".png", False, False
            elif u < 0.96:
                fmt, ext, gray, alpha = "PNG", ".png", False, True
            elif u < 0.98:
                fmt, ext, gray, alpha = "PNG", ".png", True, False
            elif u < 0.99:
                fmt, ext, gray, alpha = "PNG", ".jpg", False, False  # misnamed, still good
            else:
                fmt, ext, gray, alpha = "JPEG", ".png", False, False
            arr, color = _picture(rng, h, w, gray)
            data = _encode(arr, fmt, rng, alpha)
            label = f"{fmt.lower()}{'-gray' if gray else ''}{'-rgba' if alpha else ''}{'-misnamed' if ext[1:] not in fmt.lower() else ''}"
        else:
            arr, color = _picture(rng, h, w, False)
            color = np.full(3, np.nan)
            label = f"corrupt-{kind}"
            if kind == "truncated_jpeg":
                full, ext = _encode(arr, "JPEG", rng), ".jpg"
                data = full[: max(1, int(len(full) * rng.uniform(0.05, 0.9)))]
            elif kind == "truncated_png":
                full, ext = _encode(arr, "PNG", rng), ".png"
                data = full[: max(1, int(len(full) * rng.uniform(0.05, 0.9)))]
            elif kind == "random_bytes":
                data, ext = rng.bytes(int(rng.integers(100, 5000))), ".jpg"
            elif kind == "jpeg_garbage":
                header = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
                data, ext = header + rng.bytes(int(rng.integers(500, 5000))), ".jpg"
            elif kind == "zero_bytes":
                data, ext = b"", ".jpg"
            elif kind == "wrong_extension":
                data, ext = _not_an_image(rng, i)
            else:  # missing
                data, ext = b"", ".jpg"
        formats[label] = formats.get(label, 0) + 1
        path = folder / f"{i:05d}{ext}"
        if kind == "missing":
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)
            nbytes += len(data)
        records.append({"key": f"{i:05d}", "image": str(path), "sid": i})
        colors.append([float(c) for c in color])
    info = {
        "params": params,
        "records": records,
        "colors": colors,
        "corrupt": {str(k): v for k, v in sorted(corrupt.items())},
        "formats": dict(sorted(formats.items())),
        "bytes": nbytes,
    }
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, manifest)
    info["built_s"] = time.perf_counter() - t0
    return info


# -- resources ------------------------------------------------------------------


def _live_buffers() -> tuple[int, int] | None:
    try:
        from dataio import _native

        count, nbytes = _native.live_buffers()
        return int(count), int(nbytes)
    except Exception:  # noqa: BLE001 - not in this build
        return None


def sample_resources() -> dict[str, float]:
    gc.collect()
    status: dict[str, str] = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.strip()
    kib = lambda k: int(status.get(k, "0 kB").split()[0])  # noqa: E731
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    out: dict[str, float] = {
        "rss_mib": kib("VmRSS") / 1024,
        "rss_anon_mib": kib("RssAnon") / 1024,
        "rss_file_mib": kib("RssFile") / 1024,
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": int(status.get("Threads", "0")),
        "maps": maps,
    }
    live = _live_buffers()
    if live is not None:
        out["live_buffers"], out["live_buffer_mib"] = live[0], live[1] / 2**20
    return out


# -- the soak -----------------------------------------------------------------


def build_pipeline(batch_size: int) -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(SHORT).center_crop(h=CROP, w=CROP).normalize("imagenet"),
        dataio.slot("sid").decode_bytes(),
        dataio.batch(batch_size),
    )


def as_numpy(x: Any) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else np.asarray(x)


@dataclass
class Soak:
    records: list[dict[str, Any]]
    colors: np.ndarray  # (N, 3), NaN for corrupt
    corrupt: dict[int, str]
    pixel_tolerance: float
    watchdog: Watchdog
    problems: list[str] = field(default_factory=list)
    problem_counts: dict[str, int] = field(default_factory=dict)
    error_kinds: dict[str, int] = field(default_factory=dict)  # "kind: op/cause_kind" -> count, all epochs
    error_examples: dict[str, str] = field(default_factory=dict)  # first message per corrupt kind
    max_pixel_error: float = 0.0

    def __post_init__(self) -> None:
        n = len(self.records)
        self.good = np.ones(n, dtype=bool)
        self.good[list(self.corrupt)] = False
        self.logged = np.zeros(n, dtype=np.int32)

    def problem(self, category: str, epoch: int, msg: str) -> None:
        self.problem_counts[category] = self.problem_counts.get(category, 0) + 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(f"epoch {epoch}: {category}: {msg}")
            print(f"  ! epoch {epoch}: {category}: {msg}", flush=True)

    def on_logged(self, e: RowError) -> None:
        idx = getattr(e, "index", None)
        if isinstance(idx, int) and 0 <= idx < len(self.logged):
            self.logged[idx] += 1

    def check_error(self, epoch: int, e: Any) -> int | None:
        """Checks one skipped row's error; returns its record index."""
        if not isinstance(e, RowError):
            self.problem("untyped error", epoch, f"batch.errors holds a {type(e).__name__}, not a RowError: {e!r}")
            return None
        idx = e.index
        if not isinstance(idx, int) or not 0 <= idx < len(self.records):
            self.problem("error fields", epoch, f"RowError with index {idx!r}: {e}")
            return None
        rec = self.records[idx]
        kind = self.corrupt.get(idx)
        cause = e.cause_kind
        label = f"{kind or 'GOOD'}: {e.op}/{cause}"
        self.error_kinds[label] = self.error_kinds.get(label, 0) + 1
        if kind is None:
            self.problem("good sample failed", epoch, f"{rec['key']} ({rec['image']}): {e}")
            return idx
        self.error_examples.setdefault(kind, str(e))
        if cause not in TYPED_CAUSES:
            self.problem("untyped error", epoch, f"{rec['key']} ({kind}): cause_kind {cause!r}: {e}")
        op, want_cause = EXPECTED_ERROR[kind]
        wrong = [
            f"{name} {got!r} != {want!r}"
            for name, got, want in (
                ("key", e.key, rec["key"]),
                ("uri", e.uri, rec["image"]),
                ("slot", e.slot, "image"),
                ("op", e.op, op),
                ("cause_kind", cause, want_cause),
            )
            if got != want
        ]
        if wrong:
            self.problem("error fields", epoch, f"{rec['key']} ({kind}): {'; '.join(wrong)}: {e}")
        return idx

    def run_epoch(self, loader: Any, epoch: int, batch_size: int) -> dict[str, Any]:
        n = len(self.records)
        counts = np.zeros(n, dtype=np.int32)
        failed = np.zeros(n, dtype=np.int32)
        self.logged[:] = 0
        order = hashlib.blake2b(digest_size=16)
        expected_batches = len(loader)
        batches = 0
        t0 = time.perf_counter()
        loader.set_epoch(epoch)
        self.watchdog.beat()
        for b in loader:
            self.watchdog.beat()
            batches += 1
            idx = np.asarray(b.indices, dtype=np.int64)
            rows = len(idx)
            img = as_numpy(b["image"])
            sid = as_numpy(b["sid"])
            if not (len(b) == rows == len(b.keys) == img.shape[0] == sid.shape[0]) or img.shape[1:] != (3, CROP, CROP):
                self.problem("batch shape", epoch, f"batch {batches}: {len(b)} keys, {rows} indices, image {tuple(img.shape)}, sid {tuple(sid.shape)}")
                continue
            if rows > batch_size or (rows and (idx.min() < 0 or idx.max() >= n)):
                self.problem("batch shape", epoch, f"batch {batches}: {rows} rows, indices {idx.min()}..{idx.max()}")
                continue
            order.update(idx.tobytes())
            np.add.at(counts, idx, 1)
            if not np.array_equal(sid.astype(np.int64), idx) or [int(k) for k in b.keys] != idx.tolist():
                self.problem("id mismatch", epoch, f"batch {batches}: indices {idx[:8].tolist()}, sid {sid[:8].tolist()}, keys {list(b.keys)[:8]}")
            if rows:
                got = img.astype(np.float64).mean(axis=(2, 3)) * STD + MEAN
                err = np.abs(got - self.colors[idx]).max(axis=1)
                err = np.where(np.isnan(err), np.inf, err)  # a corrupt id delivered has no color
                self.max_pixel_error = max(self.max_pixel_error, float(err[np.isfinite(err)].max(initial=0.0)))
                bad = np.flatnonzero(err > self.pixel_tolerance)
                if len(bad):
                    j = int(bad[0])
                    self.problem(
                        "pixels",
                        epoch,
                        f"batch {batches}: {len(bad)} rows off their image's color by more than {self.pixel_tolerance}, "
                        f"e.g. {b.keys[j]}: mean {np.round(got[j], 1).tolist()} vs {self.colors[idx[j]].tolist()}",
                    )
            for e in b.errors:
                i = self.check_error(epoch, e)
                if i is not None:
                    failed[i] += 1
            del img, sid
        self.watchdog.beat(armed=False)
        seconds = time.perf_counter() - t0
        stats = loader.stats()

        good, bad = self.good, ~self.good
        lost = np.flatnonzero(good & (counts == 0))
        repeated = np.flatnonzero(counts > 1)
        leaked = np.flatnonzero(bad & (counts > 0))
        unreported = np.flatnonzero(bad & (failed == 0))
        twice = np.flatnonzero(failed > 1)
        keys = lambda ids: ", ".join(self.records[int(i)]["key"] for i in ids[:10]) + (" ..." if len(ids) > 10 else "")  # noqa: E731
        if len(lost):
            self.problem("lost", epoch, f"{len(lost)} good samples not delivered: {keys(lost)}")
        if len(repeated):
            self.problem("repeated", epoch, f"{len(repeated)} samples delivered more than once: {keys(repeated)}")
        if len(leaked):
            self.problem("corrupt delivered", epoch, f"{len(leaked)} corrupt samples delivered: {keys(leaked)}")
        if len(unreported):
            self.problem("corrupt not reported", epoch, f"{len(unreported)} corrupt samples without a RowError: {keys(unreported)}")
        if len(twice):
            self.problem("error repeated", epoch, f"{len(twice)} samples reported more than once: {keys(twice)}")
        if not np.array_equal(self.logged, failed):
            self.problem("log_errors", epoch, f"the log_errors callable got {int(self.logged.sum())} rows, batch.errors {int(failed.sum())}")
        if batches != expected_batches:
            self.problem("batch count", epoch, f"{batches} batches, len(loader) = {expected_batches}")
        want = {"records_done": n, "records_failed": len(self.corrupt), "batches_delivered": batches}
        off = {k: (stats.get(k), v) for k, v in want.items() if stats.get(k) != v}
        if off:
            self.problem("stats", epoch, ", ".join(f"{k} = {g} (expected {w})" for k, (g, w) in off.items()))
        delivered = int(counts.sum())
        return {
            "epoch": epoch,
            "seconds": seconds,
            "batches": batches,
            "delivered": delivered,
            "skipped": int(failed.sum()),
            "samples_per_s": delivered / seconds if seconds > 0 else float("nan"),
            "order": order.hexdigest(),
        }


def slope_per_hour(ts: list[float], vs: list[float]) -> float:
    if len(ts) < 2 or max(ts) - min(ts) <= 0:
        return float("nan")
    return float(np.polyfit(np.asarray(ts) / 3600.0, np.asarray(vs, dtype=np.float64), 1)[0])


def fmt(v: Any, digits: int = 1) -> str:
    if isinstance(v, float):
        if v != v:
            return "–"
        v = round(v, digits) + 0.0  # not "-0.0"
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(header: list[str], rows: list[list[Any]], right_from: int = 1) -> str:
    cells = [[fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    line = lambda r: "| " + " | ".join(c.rjust(w) if i >= right_from else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"  # noqa: E731
    sep = "| " + " | ".join(("-" * (w - 1) + ":") if i >= right_from else "-" * w for i, w in enumerate(widths)) + " |"
    return "\n".join([line(header), sep, *(line(r) for r in cells)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="how long to run epochs (default 60; the epoch under way finishes)")
    ap.add_argument("--images", type=int, default=4000, help="images in the dataset, corrupt ones included (default 4000)")
    ap.add_argument("--corrupt-fraction", type=float, default=0.01, help="share of the images that are damaged (default 0.01)")
    ap.add_argument("--concurrency", type=int, default=512, help="records in flight (run(concurrency=...), default 512)")
    ap.add_argument("--batch-size", type=int, default=64, help="rows per batch (default 64)")
    ap.add_argument("--workdir", type=Path, default=None, help="make (and keep, and reuse) the dataset under this folder instead of a temporary one")
    ap.add_argument("--json", type=Path, default=None, help="write the summary and every epoch's figures here")
    ap.add_argument("--output", choices=("torch", "numpy"), default="torch", help="the loader's output (default torch)")
    ap.add_argument("--seed", type=int, default=0, help="dataset and shuffle seed (default 0)")
    ap.add_argument("--reopen-every", type=int, default=0, help="close the loader and open a new one every N epochs (default 0: one loader for the whole run)")
    ap.add_argument("--max-epochs", type=int, default=None, help="stop after this many epochs even if time is left")
    ap.add_argument("--warmup-epochs", type=int, default=2, help="epochs of warm-up before the resource baseline (default 2)")
    ap.add_argument("--warmup-fraction", type=float, default=0.1, help="share of --minutes of warm-up (default 0.1; the later of the two ends it)")
    ap.add_argument("--rss-tolerance-pct", type=float, default=5.0, help="allowed RSS growth after the warm-up, %% of the baseline (default 5) ...")
    ap.add_argument("--rss-tolerance-mib", type=float, default=16.0, help="... plus this many MiB (default 16)")
    ap.add_argument("--fd-tolerance", type=int, default=2, help="allowed growth of open fds after the warm-up (default 2)")
    ap.add_argument("--thread-tolerance", type=int, default=2, help="allowed growth of threads after the warm-up (default 2)")
    ap.add_argument("--maps-tolerance", type=int, default=32, help="allowed growth of memory maps after the warm-up (default 32)")
    ap.add_argument("--buffer-tolerance", type=int, default=4, help="allowed growth of live engine buffers after the warm-up (default 4)")
    ap.add_argument("--pixel-tolerance", type=float, default=6.0, help="largest difference of a row's mean color from its image's, 0-255 units (default 6)")
    ap.add_argument("--stall-seconds", type=float, default=300.0, help="a batch not arriving within this long dumps the stacks and exits 1 (default 300)")
    ap.add_argument("--progress-seconds", type=float, default=30.0, help="print a progress line this often (default 30)")
    args = ap.parse_args()
    if args.images < 2 or not 0 <= args.corrupt_fraction < 1 or args.batch_size < 1 or args.concurrency < 1 or args.minutes < 0:
        ap.error("need --images >= 2, 0 <= --corrupt-fraction < 1, positive --batch-size and --concurrency, --minutes >= 0")

    tmp: tempfile.TemporaryDirectory[str] | None = None
    if args.workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="dataio-soak-")
        folder = Path(tmp.name)
    else:
        folder = args.workdir / f"n{args.images}-c{args.corrupt_fraction:g}-s{args.seed}"
    try:
        return soak(args, folder)
    finally:
        if tmp is not None:
            tmp.cleanup()


def soak(args: argparse.Namespace, folder: Path) -> int:
    print(f"dataset: {args.images} images, corrupt fraction {args.corrupt_fraction:g}, in {folder}", flush=True)
    info = make_dataset(folder, args.images, args.corrupt_fraction, args.seed)
    records = info["records"]
    corrupt = {int(k): v for k, v in info["corrupt"].items()}
    built = info["built_s"]
    by_kind: dict[str, int] = {}
    for kind in corrupt.values():
        by_kind[kind] = by_kind.get(kind, 0) + 1
    print(
        f"  {f'built in {built:.1f} s' if built else 'reused'}: "
        f"{len(records) - len(corrupt)} good, {len(corrupt)} corrupt ({', '.join(f'{k} {v}' for k, v in sorted(by_kind.items()))}); "
        f"{info['bytes'] / 2**20:.1f} MiB",
        flush=True,
    )
    if args.output == "torch":
        import torch  # noqa: F401  (imported before the first sample: it alone is ~450 MiB of RSS)
    watchdog = Watchdog(args.stall_seconds)
    state = Soak(
        records=records,
        colors=np.asarray(info["colors"], dtype=np.float64),
        corrupt=corrupt,
        pixel_tolerance=args.pixel_tolerance,
        watchdog=watchdog,
    )
    n_good = len(records) - len(corrupt)
    pipe = build_pipeline(args.batch_size)

    def open_loader() -> Any:
        return pipe.bind(records).run(
            args.output,
            concurrency=args.concurrency,
            on_failure="skip",
            log_errors=state.on_logged,
            seed=args.seed,
        )

    duration = args.minutes * 60.0
    warm_until = args.warmup_fraction * duration
    epochs: list[dict[str, Any]] = []
    start_sample = sample_resources()
    baseline_at: int | None = None  # index into epochs of the baseline sample
    crashed: str | None = None
    interrupted = False
    print(
        f"soak: {args.minutes:g} min, concurrency {args.concurrency}, batch {args.batch_size}, {args.output}, "
        f"seed {args.seed}, pools {dataio._native.pool_info()[:2]} (cpu, io threads)",
        flush=True,
    )
    t_start = time.perf_counter()
    last_print = -1e9
    loader = open_loader()
    try:
        epoch = 0
        while True:
            elapsed = time.perf_counter() - t_start
            post = 0 if baseline_at is None else len(epochs) - baseline_at
            if args.max_epochs is not None and epoch >= args.max_epochs:
                break
            if elapsed >= duration and post >= 3:
                break
            if args.reopen_every and epoch and epoch % args.reopen_every == 0:
                loader.close()
                loader = open_loader()
            row = state.run_epoch(loader, epoch, args.batch_size)
            row["t"] = time.perf_counter() - t_start
            row.update(sample_resources())
            if epochs and row["order"] == epochs[-1]["order"]:
                state.problem("not reshuffled", epoch, "the same order as the previous epoch")
            epochs.append(row)
            if baseline_at is None and len(epochs) >= args.warmup_epochs and row["t"] >= warm_until:
                baseline_at = len(epochs) - 1
            if row["t"] - last_print >= args.progress_seconds or epoch < 2:
                last_print = row["t"]
                print(
                    f"  epoch {epoch:>4} {row['t']:>8.1f} s  {row['samples_per_s']:>7,.0f} samples/s  delivered {row['delivered']}"
                    f"  skipped {row['skipped']}  RSS {row['rss_mib']:.1f} MiB  fds {row['fds']}  threads {row['threads']}"
                    f"  maps {row['maps']}{'  (warm-up)' if baseline_at is None else ''}"
                    f"{'  problems ' + str(sum(state.problem_counts.values())) if state.problem_counts else ''}",
                    flush=True,
                )
            epoch += 1
    except KeyboardInterrupt:
        interrupted = True
        print("  interrupted: summary of the epochs run", flush=True)
    except Exception as exc:  # noqa: BLE001 - the loader raised: that alone fails the soak
        crashed = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    finally:
        watchdog.beat(armed=False)
        loader.close()
    t_end = time.perf_counter() - t_start

    # A fresh loader's epoch 0: the same order as the run's epoch 0.
    repro: bool | None = None
    if epochs and crashed is None and not interrupted:
        fresh = open_loader()
        counted = dict(state.error_kinds)
        try:
            again = state.run_epoch(fresh, 0, args.batch_size)
            state.error_kinds = counted
            repro = again["order"] == epochs[0]["order"]
            if not repro:
                state.problem("not reproducible", 0, "a fresh loader's epoch 0 came in another order")
        finally:
            fresh.close()
    watchdog.stop()
    after_close = sample_resources()

    failures: list[str] = []
    if crashed:
        failures.append(f"the loader raised: {crashed}")
    for cat, count in sorted(state.problem_counts.items()):
        failures.append(f"{cat}: {count} time(s) (first: {next((p for p in state.problems if f': {cat}: ' in p), '?')})")

    resources = [
        ("RSS MiB", "rss_mib"),
        ("fds", "fds"),
        ("threads", "threads"),
        ("memory maps", "maps"),
        ("live engine buffers", "live_buffers"),
    ]
    res_rows: list[list[Any]] = []
    res_json: dict[str, Any] = {}
    if baseline_at is not None and len(epochs) - baseline_at >= 2:
        post = epochs[baseline_at:]
        ts = [e["t"] for e in post]
        for label, key in resources:
            if key not in post[0]:
                continue
            vals = [e[key] for e in post]
            base, last = vals[0], vals[-1]
            if key == "rss_mib":
                tol = base * args.rss_tolerance_pct / 100 + args.rss_tolerance_mib
                tol_s = f"+{args.rss_tolerance_pct:g}% + {args.rss_tolerance_mib:g} MiB = {tol:.1f}"
            else:
                tol = {"fds": args.fd_tolerance, "threads": args.thread_tolerance, "maps": args.maps_tolerance, "live_buffers": args.buffer_tolerance}[key]
                tol_s = f"+{tol}"
            ok = last - base <= tol
            slope = slope_per_hour(ts, vals)
            half = len(vals) // 2
            slope2 = slope_per_hour(ts[half:], vals[half:])
            if not ok:
                failures.append(f"{label} grew from {fmt(base)} to {fmt(last)} after the warm-up (tolerance {tol_s}); slope {fmt(slope)}/h")
            res_rows.append([label, start_sample.get(key, float("nan")), base, min(vals), max(vals), last, last - base, slope, slope2, tol_s, "yes" if ok else "NO"])
            res_json[key] = {
                "start": start_sample.get(key), "baseline": base, "min": min(vals), "max": max(vals), "last": last,
                "growth": last - base, "slope_per_hour": slope, "slope_per_hour_second_half": slope2, "tolerance": tol, "ok": ok, "after_close": after_close.get(key),
            }
    else:
        failures.append(f"too few epochs after the warm-up to judge the resources ({len(epochs)} epochs in all)")

    n_epochs = len(epochs)
    delivered = sum(e["delivered"] for e in epochs)
    skipped = sum(e["skipped"] for e in epochs)
    busy = sum(e["seconds"] for e in epochs)
    rates = [e["samples_per_s"] for e in epochs]
    post_rates = rates[baseline_at:] if baseline_at is not None else rates
    k = max(1, len(post_rates) // 10)
    rss = [e["rss_mib"] for e in epochs] or [float("nan")]
    verdict = "FAIL" if failures else ("INTERRUPTED" if interrupted else "PASS")
    print()
    print(
        f"dataio {dataio.__version__} soak: {verdict} — {t_end / 60:.1f} min, {len(records)} images "
        f"({n_good} good, {len(corrupt)} corrupt), concurrency {args.concurrency}, batch {args.batch_size}, {args.output}"
    )
    print()
    summary_rows: list[list[Any]] = [
        ["epochs", n_epochs],
        ["warm-up", f"{baseline_at + 1} epochs, {epochs[baseline_at]['t']:.1f} s" if baseline_at is not None else "not over"],
        ["samples/s (all epochs)", f"{delivered / busy:,.0f}" if busy else "–"],
        ["samples/s per epoch: median / min / max", f"{np.median(rates):,.0f} / {min(rates):,.0f} / {max(rates):,.0f}" if rates else "–"],
        ["samples/s after the warm-up: first / last 10% of epochs", f"{np.mean(post_rates[:k]):,.0f} / {np.mean(post_rates[-k:]):,.0f}" if post_rates else "–"],
        ["samples delivered", delivered],
        ["samples delivered per epoch (expected)", f"{delivered // max(1, n_epochs):,} ({n_good:,})"],
        ["corrupt skipped (RowErrors)", skipped],
        ["corrupt skipped per epoch (expected)", f"{skipped // max(1, n_epochs):,} ({len(corrupt):,})"],
        ["good samples lost / repeated (epochs)", f"{state.problem_counts.get('lost', 0)} / {state.problem_counts.get('repeated', 0)}"],
        ["largest row color error (0-255)", f"{state.max_pixel_error:.1f} (tolerance {args.pixel_tolerance:g})"],
        ["fresh loader repeats epoch 0's order", {True: "yes", False: "NO", None: "not checked"}[repro]],
        ["RSS MiB start / end / max", f"{start_sample['rss_mib']:.1f} / {rss[-1]:.1f} / {max(rss):.1f}"],
        ["fds start / end", f"{start_sample['fds']} / {epochs[-1]['fds'] if epochs else '–'}"],
        ["threads start / end", f"{start_sample['threads']} / {epochs[-1]['threads'] if epochs else '–'}"],
    ]
    print(table(["", "value"], summary_rows))
    if res_rows:
        print()
        print(f"resources after each epoch, from the warm-up's end (epoch {baseline_at}) to the last (epoch {n_epochs - 1}):")
        print(table(["resource", "start", "baseline", "min", "max", "last", "growth", "slope /h", "2nd half /h", "tolerance", "ok"], res_rows))
    if state.error_kinds:
        print()
        print("skipped rows by damage and what the loader said (op/cause_kind), all epochs:")
        print(table(["damage: op/cause_kind", "rows"], [[k, v] for k, v in sorted(state.error_kinds.items())]))
    print()
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
    else:
        print("PASS: every good sample exactly once in every epoch, every corrupt one skipped with a typed RowError naming it, resources flat.")

    if args.json is not None:
        doc = {
            "verdict": verdict,
            "failures": failures,
            "problems": state.problems,
            "problem_counts": state.problem_counts,
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "environment": {
                "dataio": dataio.__version__,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "pools": list(dataio._native.pool_info()),
                "loadavg_end": list(os.getloadavg()),
            },
            "dataset": {
                "folder": str(folder), "images": len(records), "good": n_good, "corrupt": len(corrupt),
                "corrupt_by_kind": by_kind, "formats": info["formats"], "bytes": info["bytes"], "built_s": info["built_s"],
                "corrupt_ids": {records[i]["key"]: kind for i, kind in sorted(corrupt.items())},
            },
            "summary": {
                "minutes": t_end / 60, "epochs": n_epochs, "warmup_epochs": None if baseline_at is None else baseline_at + 1,
                "samples_per_s": delivered / busy if busy else None, "delivered": delivered, "skipped": skipped,
                "max_pixel_error": state.max_pixel_error, "fresh_loader_same_order": repro,
                "error_kinds": state.error_kinds, "error_examples": state.error_examples,
                "interrupted": interrupted, "crashed": crashed,
            },
            "resources": res_json,
            "start_sample": start_sample,
            "after_close": after_close,
            "epochs": epochs,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1, default=float))
        print(f"wrote {args.json}")
    if failures:
        return 1
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
