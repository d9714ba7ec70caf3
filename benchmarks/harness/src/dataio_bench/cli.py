"""``python -m dataio_bench``: the command line and the run of the matrix."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from . import datasets, gate, report
from .harness import Unavailable, child_main, run_child, usable_cpus
from .workloads import REGISTRY, get_workload

# Sized so that the whole default matrix (5 workloads, every peer, cores 1 and 2)
# should run in 6-8 minutes on a quiet 2-core machine (docs/benchmark.md, "Time"); raise them on bigger hosts.
DEFAULTS = {"images": 300, "files": 3000, "latents": 2048, "rows": 60_000, "objects": 200, "object_kb": 32, "epochs": 3}
QUICK = {"images": 64, "files": 512, "latents": 256, "rows": 8192, "objects": 32, "object_kb": 16, "epochs": 1}
VERSIONED = (
    "torch", "torchvision", "pillow", "simplejpeg", "spdl-core", "spdl-io", "nvidia-dali-cuda120", "ray",
    "pyarrow", "safetensors", "boto3", "moto", "dataio-s3", "numpy",
)  # fmt: skip


def parse_cores(spec: str, usable: int) -> list[int]:
    """``sweep`` (1, 2, 4, ... and every usable CPU), ``all``, or a comma list like ``1,all``."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip().lower()
        if not part:
            continue
        if part == "sweep":
            k = 1
            while k < usable:
                out.append(k)
                k *= 2
            out.append(usable)
            continue
        n = usable if part == "all" else int(part)
        if n < 1:
            raise SystemExit(f"--cores: {part!r} is not a positive core count")
        if n > usable:
            print(f"[bench] --cores {n} is more than the {usable} usable CPUs; using {usable}", file=sys.stderr)
            n = usable
        out.append(n)
    return sorted(dict.fromkeys(out))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m dataio_bench",
        description=(
            "dataio against its peers, side by side, on the same data and cores: the image pipeline (torch DataLoader + PIL, "
            "torchvision.io, SPDL, DALI CPU, Ray Data, the simplejpeg decode-only limit), bytes passthrough, safetensors latents "
            "with group_by, parquet rows, and remote reads from an S3 emulator; a worker sweep for each; a table, a CSV and a "
            "PNG chart; --compare gates a run against a baseline CSV. See docs/benchmark.md."
        ),
    )
    ap.add_argument("--workloads", default=",".join(REGISTRY), help="comma-separated subset of: %(default)s")
    ap.add_argument("--only", default=None, help="only these candidates (comma-separated names, e.g. dataio,torch)")
    ap.add_argument("--cores", default="sweep", help="core counts: 'sweep' (1, 2, 4, ... and all usable; default), 'all', or a list like '1,all'")
    ap.add_argument("--full-sweep", action="store_true", help="run every candidate at every core count (default: Ray Data only at the largest)")
    ap.add_argument("--epochs", type=int, default=None, help=f"timed epochs per cell, after one warm-up epoch (default {DEFAULTS['epochs']})")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the candidates of each core count this many times in turns and report each cell's median round (default 1); "
        "on a machine whose speed drifts, turns keep the ratios fair",
    )
    ap.add_argument("--quick", action="store_true", help="tiny sizes and one timed epoch: a smoke test of the whole matrix, not a measurement")
    ap.add_argument("--images", type=int, default=None, help=f"image and bucket workloads: JPEGs (default {DEFAULTS['images']})")
    ap.add_argument("--files", type=int, default=None, help=f"bytes workload: small files (default {DEFAULTS['files']})")
    ap.add_argument("--latents", type=int, default=None, help=f"safetensors workload: latents (default {DEFAULTS['latents']})")
    ap.add_argument("--rows", type=int, default=None, help=f"parquet workload: rows (default {DEFAULTS['rows']})")
    ap.add_argument("--objects", type=int, default=None, help=f"s3 workload: objects (default {DEFAULTS['objects']})")
    ap.add_argument("--object-kb", type=int, default=None, help=f"s3 workload: object size in KiB (default {DEFAULTS['object_kb']})")
    ap.add_argument("--batch", type=int, default=None, help="batch size for every workload (default: image and bucket 64, bytes 256, safetensors 32, parquet 512, s3 64)")
    ap.add_argument("--prefetch", type=int, default=4, help="batches prefetched by dataio, DALI (queue depth), SPDL (sink), Ray (default 4)")
    ap.add_argument(
        "--concurrency",
        type=lambda v: v if v == "auto" else int(v),
        default="auto",
        help="dataio records in flight (default 'auto': 4 per CPU thread and at least one batch)",
    )
    ap.add_argument("--torch-prefetch-factor", type=int, default=2, help="DataLoader prefetch_factor, batches per worker (default 2)")
    ap.add_argument("--tol", type=float, default=None, help="image workload: largest per-channel mean difference vs dataio, normalized units (default 0.03)")
    ap.add_argument("--out", default="bench-out", help="report folder (default %(default)s)")
    ap.add_argument("--report-name", default="bench", help="file stem of the report files (default %(default)s)")
    ap.add_argument("--data-dir", default=str(datasets.DEFAULT_ROOT), help="image cache folder (default %(default)s)")
    ap.add_argument("--data-root", default=str(datasets.DATA_ROOT), help="cache folder of the other workloads' data (default %(default)s)")
    ap.add_argument("--cell-timeout", type=float, default=600, help="seconds before a cell is killed (default 600)")
    ap.add_argument("--no-chart", action="store_true", help="skip the PNG chart")
    gate_args = ap.add_argument_group("regression gate")
    gate_args.add_argument("--compare", metavar="BASELINE.csv", help="compare this run (or --current) with a baseline CSV; exit 3 when it regressed")
    gate_args.add_argument("--current", metavar="RUN.csv", help="with --compare: gate an existing CSV instead of running the matrix")
    gate_args.add_argument("--max-regression", type=float, default=0.15, help="largest loss of samples/s a cell may show (default 0.15)")
    gate_args.add_argument("--max-gmean-regression", type=float, default=0.05, help="largest loss of the geometric mean of the ratios (default 0.05)")
    gate_args.add_argument("--gate-candidates", default="dataio", help="candidates gated: comma-separated, or 'all' (default dataio)")
    # Internal: run one cell in this process.
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--cell-cores", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    return ap


def _apply_sizes(args: argparse.Namespace) -> None:
    table = QUICK if args.quick else DEFAULTS
    for k, v in table.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if min(args.epochs, args.images, args.files, args.latents, args.rows, args.objects, args.object_kb) < 1:
        raise SystemExit("--epochs and the workload sizes must be >= 1")


def run_gate(args: argparse.Namespace, current: list[dict[str, Any]]) -> int:
    cands = None if args.gate_candidates == "all" else tuple(c.strip() for c in args.gate_candidates.split(",") if c.strip())
    res = gate.compare(
        current,
        gate.load_csv(args.compare),
        max_regression=args.max_regression,
        max_gmean_regression=args.max_gmean_regression,
        candidates=cands,
        baseline_name=args.compare,
    )
    print()
    print(res)
    return 3 if res.failed else 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _git() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"], check=False, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    import dataio

    so = sorted(Path(dataio.__file__).parent.glob("_native*.so"))
    built = _dt.datetime.fromtimestamp(so[0].stat().st_mtime).isoformat(timespec="seconds") if so else "?"
    out["dataio"] = f"{dataio.__version__} (_native built {built})"
    return out


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The median (lower middle) of a cell's rounds by samples/s, with every round's rate attached."""
    ok = sorted((r for r in results if r["status"] == "ok"), key=lambda r: r["samples_per_s"])
    if not ok:
        return results[0]
    pick = dict(ok[(len(ok) - 1) // 2])
    if len(results) > 1:
        pick["rounds"] = [round(r["samples_per_s"], 1) if r["status"] == "ok" else r["status"] for r in results]
    return pick


def run_matrix(args: argparse.Namespace) -> tuple[list[dict[str, Any]], int]:
    usable = usable_cpus()
    cores_list = parse_cores(args.cores, usable)
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in names if w not in REGISTRY]
    if bad:
        raise SystemExit(f"--workloads: unknown {bad}; choose from {', '.join(REGISTRY)}")
    only = {c.strip() for c in args.only.split(",")} if args.only else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "specs").mkdir(exist_ok=True)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    t_start = time.perf_counter()
    versions = _versions()  # before the run: the build the cells import
    load = os.getloadavg()
    noisy = load[0] > 0.25 * usable
    if noisy:
        print(f"[bench] WARNING: load average is {load[0]:.2f} on {usable} CPUs: other work is running, numbers will be noisy", file=sys.stderr)
    print(f"[bench] workloads {names} · cores {cores_list} · {args.epochs} timed epochs · python {sys.executable}", file=sys.stderr)

    rows: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    described: dict[str, str] = {}
    for name in names:
        wl = get_workload(name)
        if name == "image" and args.tol is not None:
            wl.tol = args.tol
        classes = wl.candidates()
        cands = [c for c in classes if only is None or c in only]
        if not cands:
            continue
        why = wl.unavailable()
        if why is not None:
            print(f"[bench] {name}: not run: {why}", file=sys.stderr)
            rows.append({"workload": name, "candidate": "dataio", "label": "dataio", "cores": max(cores_list), "status": "unavailable", "reason": why})
            described[name] = f"{wl.title}: not run — {why}"
            continue
        cfg = wl.config(args)
        try:
            with wl.prepared(args, out) as data:
                spec_path = out / "specs" / f"{name}.json"
                spec_path.write_text(json.dumps({"workload": name, "cfg": cfg, "data": data}))
                described[name] = f"{wl.title}: {wl.describe(data, cfg)}"
                for cores in cores_list:
                    tries: dict[str, list[dict[str, Any]]] = {}
                    rounds = max(1, args.rounds)
                    for rnd in range(rounds):
                        for cand in cands:
                            if not (classes[cand].SWEEP or args.full_sweep or cores == cores_list[-1]):
                                continue
                            turn = f" (round {rnd + 1}/{rounds})" if rounds > 1 else ""
                            print(f"[bench] {name} cores={cores} {cand}{turn} ...", file=sys.stderr, flush=True)
                            r = run_child(name, cand, cores, spec_path, out, args.cell_timeout)
                            msg = f"{r['samples_per_s']:,.0f} samples/s" if r["status"] == "ok" else f"{r['status']}: {r.get('reason', '')}"
                            print(f"[bench]   -> {msg} ({r['cell_wall_s']:.1f} s)", file=sys.stderr, flush=True)
                            tries.setdefault(cand, []).append(r)
                    group = [median_round(rs) for rs in tries.values()]
                    summaries.append(report.analyse(group, wl))
                    rows += group
        except Unavailable as e:
            rows.append({"workload": name, "candidate": "dataio", "label": "dataio", "cores": max(cores_list), "status": "unavailable", "reason": str(e)})
            described[name] = f"{wl.title}: not run — {e}"

    end_load = os.getloadavg()
    meta: dict[str, Any] = {
        "when": started,
        "wall_s": round(time.perf_counter() - t_start, 1),
        "noisy": noisy,
        "host": {
            "cpu": _cpu_model(),
            "usable_cpus": usable,
            "loadavg_start": [round(v, 2) for v in load],
            "loadavg_end": [round(v, 2) for v in end_load],
            "python": platform.python_version(),
            "git": _git(),
        },
        "args": {k: v for k, v in vars(args).items() if k not in ("cell", "cell_cores", "spec", "result")},
        "workloads": described,
        "versions": versions,
    }
    print()
    if noisy:
        print(f"NOISY RUN: load average {load[0]:.2f} at the start on {usable} CPUs; do not compare these numbers with a quiet run's.")
    print(report.text_table(rows))
    print()
    for s in summaries:
        print(report.summary_line(s))
    print("(× dataio = samples/s ÷ dataio's at the same core count; p50/p95 ms = time between consecutive batches; RSS = the cell's whole process tree)")

    stem = out / args.report_name
    report.write_csv(rows, stem.with_suffix(".csv"))
    stem.with_suffix(".md").write_text(report.markdown(rows, summaries, meta))
    slim = [{k: v for k, v in r.items() if k != "sample_means"} for r in rows]
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": slim, "summaries": summaries}, indent=2, default=str))
    written = [f"{stem}.csv", f"{stem}.md", f"{stem}.json"]
    if not args.no_chart:
        title = f"dataio benchmark · {meta['host']['cpu']} · {usable} CPUs · {started}" + (" · NOISY" if noisy else "")
        why = report.chart(rows, stem.with_suffix(".png"), title)
        if why:
            print(f"[bench] no chart: {why}", file=sys.stderr)
        else:
            written.append(f"{stem}.png")
    print(f"\nwrote {', '.join(written)} (logs under {out / 'logs'}) in {time.perf_counter() - t_start:.0f} s")

    status = 0
    if any(r.get("check", "").startswith("MISMATCH") for r in rows):
        status = 1
    if any(r["candidate"] == "dataio" and r["status"] == "failed" for r in rows):
        status = 2
    return rows, status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cell:
        workload, _, candidate = args.cell.partition(":")
        return child_main(workload, candidate, args.cell_cores, args.spec, args.result)
    if args.current:
        if not args.compare:
            raise SystemExit("--current needs --compare BASELINE.csv")
        return run_gate(args, gate.load_csv(args.current))
    _apply_sizes(args)
    _rows, status = run_matrix(args)
    if args.compare:
        status = max(status, run_gate(args, gate.load_csv(Path(args.out) / f"{args.report_name}.csv")))
    return status
