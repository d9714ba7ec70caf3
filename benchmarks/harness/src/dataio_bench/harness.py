"""How one cell of the benchmark matrix is measured.

A *cell* is one candidate (dataio or a peer) of one workload at one core
count. Each cell runs in its own child process (``python -m dataio_bench
--cell WORKLOAD:CANDIDATE ...``), pinned with ``sched_setaffinity`` to the
first ``cores`` usable CPUs, so every candidate has the same CPUs, its memory
is its own and a crash costs only its row. The parent watches the child's
process tree (peak RSS and PSS) and collects the result the child writes.

In the child: the candidate's libraries are imported (not timed); the loader
is built and one warm-up epoch runs (it gives the time to the first batch and
the output digest); then the timed epochs, in which the consumer only counts
each batch. Per cell: median samples/s over the timed epochs, p50/p95 batch
latency (wall time between consecutive batches reaching the consumer; the
first batch of an epoch counts from the epoch's start), time to first batch.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# ----------------------------------------------------------------------------
# The child side
# ----------------------------------------------------------------------------


class Unavailable(Exception):
    """The candidate cannot run here (not installed, a missing system library, a plugin not ready)."""


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def pin(cores: int) -> list[int]:
    """Pins this process (and everything it starts later) to the first ``cores`` usable CPUs."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[:cores]
    if len(chosen) < len(allowed):
        os.sched_setaffinity(0, chosen)
    return chosen


def need(module: str, hint: str) -> Any:
    """Imports ``module``; any failure (ImportError, a missing shared library, ...) makes the cell unavailable."""
    try:
        return importlib.import_module(module)
    except Exception as e:
        raise Unavailable(f"import {module} failed: {type(e).__name__}: {e} (install: {hint})") from e


class Cell:
    """One candidate of one workload.

    ``load()`` imports its libraries (not timed); ``start()`` builds the
    loader (timed: part of the time to the first batch); ``epoch()`` yields
    the batches of one epoch; ``count(batch)`` checks a batch and returns its
    number of samples; ``digest(batch)`` returns a vector of sums that the
    warm-up epoch adds up and compares across candidates (same data, same
    work: the same digest per sample).
    """

    MODULES: tuple[str, ...] = ()
    HINT = ""
    USES_TORCH = True  # sets torch's intra-op threads to the core count
    #: False: by default only at the largest core count of the sweep (a
    #: candidate whose fixed start-up cost dwarfs the work at these sizes)
    SWEEP = True

    def __init__(self, data: dict[str, Any], cfg: dict[str, Any]) -> None:
        self.data = data
        self.cfg = cfg
        self.cores: int = cfg["cores"]
        self.batch: int = cfg["batch"]
        self.info: dict[str, Any] = {}

    def load(self) -> None:
        for m in self.MODULES:
            need(m, self.HINT)

    def start(self) -> None:
        pass

    def epoch(self) -> Iterator[Any]:
        raise NotImplementedError

    def count(self, batch: Any) -> int:
        return len(batch)

    def digest(self, batch: Any) -> list[float]:
        return []

    def sample_means(self, batch: Any) -> list[float]:
        """Per-sample means in delivery order (optional; the image workload's order check)."""
        return []

    def expected(self) -> int:
        """Samples one epoch must deliver."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def finish(self, res: dict[str, Any]) -> None:
        """Adds anything the candidate knows about its run (dataio: the loader's stats verdict)."""


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_cell(cell: Cell, cfg: dict[str, Any]) -> dict[str, Any]:
    res: dict[str, Any] = {"status": "ok", "cpus": pin(cfg["cores"])}
    if cell.USES_TORCH:
        torch = need("torch", "uv pip install torch")
        torch.set_num_threads(cfg["cores"])
    t = time.perf_counter()
    cell.load()
    res["import_s"] = time.perf_counter() - t
    t0 = time.perf_counter()
    cell.start()
    res["start_s"] = time.perf_counter() - t0
    res["info"] = cell.info
    n_expected = cell.expected()
    try:
        # Warm-up epoch: time to the first batch, the output digest.
        digest: list[float] = []
        means: list[float] = []
        n = 0
        first = None
        for b in cell.epoch():
            if first is None:
                first = time.perf_counter() - t0
            n += cell.count(b)
            d = cell.digest(b)
            digest = [a + v for a, v in zip(digest, d, strict=True)] if digest else list(d)
            means.extend(cell.sample_means(b))
        warm = time.perf_counter() - t0
        if n != n_expected:
            raise AssertionError(f"the warm-up epoch delivered {n} samples, expected {n_expected}")
        res["first_batch_s"] = first
        res["warmup_samples_per_s"] = n / warm
        res["digest"] = [v / n for v in digest]
        res["sample_means"] = means
        # Timed epochs: the consumer only counts.
        rates: list[float] = []
        latencies: list[float] = []
        for e in range(cfg["epochs"]):
            t = prev = time.perf_counter()
            n = 0
            for b in cell.epoch():
                now = time.perf_counter()
                latencies.append(now - prev)
                prev = now
                n += cell.count(b)
            dt = time.perf_counter() - t
            if n != n_expected:
                raise AssertionError(f"timed epoch {e} delivered {n} samples, expected {n_expected}")
            rates.append(n / dt)
        res["epoch_samples_per_s"] = rates
        res["samples_per_s"] = statistics.median(rates)
        res["batches"] = len(latencies)
        for name, q in (("p50_batch_ms", 0.50), ("p95_batch_ms", 0.95)):
            v = _percentile(latencies, q)
            res[name] = None if v is None else 1e3 * v
        cell.finish(res)
    finally:
        cell.close()
    return res


def child_main(workload: str, candidate: str, cores: int, spec_path: str, result_path: str) -> int:
    from .workloads import get_workload

    spec = json.loads(Path(spec_path).read_text())
    cfg = dict(spec["cfg"], cores=cores)
    res: dict[str, Any]
    try:
        cls = get_workload(workload).candidates()[candidate]
        res = run_cell(cls(spec["data"], cfg), cfg)
    except Unavailable as e:
        res = {"status": "unavailable", "reason": str(e)}
    except Exception as e:  # noqa: BLE001 - any failure becomes this candidate's row
        import traceback

        traceback.print_exc()
        res = {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
    res.update(workload=workload, candidate=candidate, cores=cores)
    try:  # the kernel's high-water mark, a cross-check of the sampled tree RSS
        import resource

        res["maxrss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except (ImportError, OSError):
        pass
    Path(result_path).write_text(json.dumps(res))
    sys.stdout.flush()
    sys.stderr.flush()
    # DALI, Ray and DataLoader threads can stall interpreter shutdown; the result is written.
    os._exit(0)


# ----------------------------------------------------------------------------
# The parent side: start a cell, watch its memory, collect its result.
# ----------------------------------------------------------------------------

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeMemory(threading.Thread):
    """Peak RSS (sum over the process tree, sampled every ``interval``) and peak
    PSS (``/proc/PID/smaps_rollup``, every ``pss_interval``) of a child and all
    its descendants (DataLoader workers, Ray's processes)."""

    def __init__(self, pid: int, interval: float = 0.05, pss_interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.root = pid
        self.interval = interval
        self.pss_interval = pss_interval
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_procs = 1
        self._halt = threading.Event()

    def _tree(self) -> list[int]:
        kids = _children_map()
        out, todo = [], [self.root]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(kids.get(p, []))
        return out

    def run(self) -> None:
        procs = [self.root]
        last_tree = last_pss = float("-inf")
        while not self._halt.is_set():
            now = time.monotonic()
            if now - last_tree >= 0.1:
                procs = self._tree()
                last_tree = now
                self.peak_procs = max(self.peak_procs, len(procs))
            self.peak_rss = max(self.peak_rss, sum(_rss(p) for p in procs))
            if self.pss_interval > 0 and now - last_pss >= self.pss_interval:
                self.peak_pss = max(self.peak_pss, sum(_pss(p) for p in procs))
                last_pss = now
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def tail(path: Path, n: int = 6) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def run_child(workload: str, candidate: str, cores: int, spec_path: Path, out: Path, timeout: float, env_extra: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs one cell in a child process and returns its row (never raises for the cell's own failures)."""
    import dataio

    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stem = f"{workload}-{candidate}-c{cores}"
    result, log = logs / f"{stem}.json", logs / f"{stem}.log"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "dataio_bench", "--cell", f"{workload}:{candidate}", "--cell-cores", str(cores), "--spec", str(spec_path), "--result", str(result)]
    env = dict(os.environ)
    # The child imports the same dataio and harness as this process, whatever its sys.path.
    roots = [str(Path(dataio.__file__).resolve().parent.parent), str(Path(__file__).resolve().parent.parent)]
    env["PYTHONPATH"] = os.pathsep.join([*roots, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["DATAIO_CPU_THREADS"] = str(cores)
    env["OMP_NUM_THREADS"] = str(cores)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(env_extra or {})
    t = time.perf_counter()
    with open(log, "w") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        mem = TreeMemory(proc.pid)
        mem.start()
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        finally:
            mem.stop()
    try:  # a DataLoader worker or a DALI thread left behind in the child's session
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    wall = time.perf_counter() - t
    base = {"workload": workload, "candidate": candidate, "cores": cores}
    res: dict[str, Any]
    if rc is None:
        res = {**base, "status": "failed", "reason": f"timed out after {timeout:.0f} s; log: {tail(log, 3)}"}
    elif result.exists():
        res = json.loads(result.read_text())
        if res["status"] == "failed":
            res["reason"] += f" (log {log})"
    else:
        res = {**base, "status": "failed", "reason": f"the child exited with code {rc} and no result; log: {tail(log)}"}
    res["peak_rss_mb"] = mem.peak_rss / 2**20
    res["peak_pss_mb"] = mem.peak_pss / 2**20 if mem.peak_pss > 0 else None  # None: the cell was too short
    res["processes"] = mem.peak_procs
    res["cell_wall_s"] = wall
    return res
