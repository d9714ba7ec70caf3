"""Reading the cells: ratios, output checks, the table, the CSV, the Markdown and the chart."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path
from typing import Any

from .workloads import Workload

CSV_FIELDS = [
    "workload", "candidate", "label", "cores", "status", "samples_per_s", "ratio_vs_dataio", "p50_batch_ms", "p95_batch_ms",
    "first_batch_s", "peak_rss_mb", "peak_pss_mb", "processes", "spread", "epoch_samples_per_s", "warmup_samples_per_s",
    "start_s", "import_s", "batches", "digest_delta", "sample_mean_max_delta", "check", "dataio_waiting_on", "cell_wall_s", "reason",
]  # fmt: skip


def spread(r: dict[str, Any]) -> float | None:
    rates = r.get("epoch_samples_per_s") or []
    return (max(rates) - min(rates)) / statistics.median(rates) if len(rates) > 1 else None


def analyse(rows: list[dict[str, Any]], wl: Workload) -> dict[str, Any]:
    """Adds ratios to dataio and the output cross-check to ``rows`` (one
    workload, one core count); returns the summary line's numbers."""
    labels = wl.labels()
    ok = {r["candidate"]: r for r in rows if r["status"] == "ok"}
    ref = ok.get("dataio")
    # The output reference: dataio if it ran, else the first peer that did.
    ref_out = ref or next((ok[c] for c in wl.peers() if c in ok), None)
    for r in rows:
        r["label"] = labels.get(r["candidate"], r["candidate"])
        r["spread"] = spread(r)
        r["ratio_vs_dataio"] = r["samples_per_s"] / ref["samples_per_s"] if ref and r["status"] == "ok" else None
        if r["status"] != "ok":
            r["check"] = "-"
        elif r["candidate"] in wl.limits:
            r["check"] = "n/a (a limit, not the same work)"
        elif ref_out is None or ref_out is r or not r.get("digest") or not ref_out.get("digest"):
            r["check"] = "ok (reference)" if ref_out is r else "n/a"
        else:
            a, b = r["digest"], ref_out["digest"]
            if len(a) != len(b):
                r["check"] = "MISMATCH (different outputs)"
                continue
            if wl.relative:
                delta = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))
            else:
                delta = max(abs(x - y) for x, y in zip(a, b))
            r["digest_delta"] = delta
            verdict = "ok" if delta <= wl.tol else "MISMATCH"
            detail = f"Δ {delta:.4f}" if not wl.relative else f"rel Δ {delta:.1e}"
            sm, ref_sm = r.get("sample_means") or [], ref_out.get("sample_means") or []
            if sm and len(sm) == len(ref_sm):
                r["sample_mean_max_delta"] = max(abs(x - y) for x, y in zip(sm, ref_sm))
                detail += f", Δsample max {r['sample_mean_max_delta']:.3f}"
            r["check"] = f"{verdict} ({detail})"
    peers = [ok[c] for c in wl.peers() if c in ok]
    best = max(peers, key=lambda r: r["samples_per_s"], default=None)
    limit = next((ok[c] for c in wl.limits if c in ok), None)
    return {
        "workload": wl.name,
        "cores": rows[0]["cores"],
        "best_peer": best["candidate"] if best else None,
        "best_peer_label": best["label"] if best else None,
        "dataio_over_best_peer": ref["samples_per_s"] / best["samples_per_s"] if ref and best else None,
        "limit_label": limit["label"] if limit else None,
        "dataio_over_limit": ref["samples_per_s"] / limit["samples_per_s"] if ref and limit else None,
        "dataio_waiting_on": ref.get("dataio_waiting_on") if ref else None,
    }


def summary_line(s: dict[str, Any]) -> str:
    parts = [f"{s['workload']} cores={s['cores']}:"]
    if s["dataio_over_best_peer"]:
        parts.append(f"dataio / best peer = {s['dataio_over_best_peer']:.2f}× (best peer: {s['best_peer_label']})")
    else:
        parts.append("dataio / best peer = n/a")
    if s["limit_label"]:
        parts.append(f"; dataio / {s['limit_label']} = {s['dataio_over_limit']:.2f}×" if s["dataio_over_limit"] else "; limit n/a")
    if s["dataio_waiting_on"]:
        parts.append(f"; dataio waits on: {s['dataio_waiting_on']}")
    return " ".join(parts)


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


COLUMNS = ["workload", "candidate", "cores", "samples/s", "× dataio", "p50 ms", "p95 ms", "first batch s", "peak RSS MiB", "procs", "output check / why not run"]


def cells(r: dict[str, Any]) -> list[str]:
    why = r.get("check", "-") if r["status"] == "ok" else f"{r['status'].upper()}: {r.get('reason', '')}"
    return [
        r["workload"],
        r.get("label", r["candidate"]),
        str(r["cores"]),
        _fmt(r.get("samples_per_s"), ",.0f"),
        _fmt(r.get("ratio_vs_dataio"), ".2f"),
        _fmt(r.get("p50_batch_ms"), ",.1f"),
        _fmt(r.get("p95_batch_ms"), ",.1f"),
        _fmt(r.get("first_batch_s"), ".2f"),
        _fmt(r.get("peak_rss_mb"), ",.0f"),
        str(r.get("processes", "-")),
        why,
    ]


def text_table(rows: list[dict[str, Any]]) -> str:
    body = [cells(r) for r in rows]
    n = len(COLUMNS) - 1
    widths = [max(len(COLUMNS[i]), *(len(b[i]) for b in body)) for i in range(n)]

    def line(cs: list[str]) -> str:
        padded = [c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cs, widths))]
        return "  ".join([*padded, cs[-1]])

    out = [line(COLUMNS), "  ".join("-" * w for w in widths) + "  " + "-" * len(COLUMNS[-1])]
    prev = None
    for r, b in zip(rows, body):
        if prev is not None and r["workload"] != prev:
            out.append("")
        prev = r["workload"]
        out.append(line(b))
    return "\n".join(out)


def markdown(rows: list[dict[str, Any]], summaries: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    host = meta["host"]
    out = ["# dataio benchmark matrix", ""]
    if meta.get("noisy"):
        out += [f"> **NOISY**: the load average was {host['loadavg_start'][0]:.2f} on {host['usable_cpus']} CPUs when the run started; other work shared the machine.", ""]
    out.append(
        f"{meta['when']} · {host['cpu']} · {host['usable_cpus']} usable CPUs · load average at start {host['loadavg_start']} · "
        f"python {host['python']} · git {host['git']}"
    )
    out.append("")
    out.append(
        f"{meta['args']['epochs']} timed epochs after one warm-up epoch per cell; samples/s is their median; "
        "batch latency is the wall time between consecutive batches reaching the consumer."
    )
    for name, desc in meta["workloads"].items():
        wrows = [r for r in rows if r["workload"] == name]
        if not wrows:
            continue
        out += ["", f"## {name}", "", desc, ""]
        out.append("| " + " | ".join(COLUMNS[1:]) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 3) + ["---"]) + "|")
        for r in wrows:
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells(r)[1:]) + " |")
        ws = [s for s in summaries if s["workload"] == name]
        if ws:
            out.append("")
            out += [f"- {summary_line(s)}" for s in ws]
    out += ["", "Versions: " + "; ".join(f"{k} {v}" for k, v in sorted(meta["versions"].items()) if v), ""]
    return "\n".join(out)


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            row = dict(r)
            if row.get("epoch_samples_per_s"):
                row["epoch_samples_per_s"] = " ".join(f"{v:.1f}" for v in row["epoch_samples_per_s"])
            w.writerow(row)


def chart(rows: list[dict[str, Any]], path: Path, title: str) -> str | None:
    """A PNG: one panel per workload, samples/s per candidate, one bar per core
    count (the worker sweep). Returns why it was not drawn, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (it is in the bench dependency group)"
    ok = [r for r in rows if r["status"] == "ok"]
    names = list(dict.fromkeys(r["workload"] for r in ok))
    if not names:
        return "no cell ran"
    cores = sorted({r["cores"] for r in ok})
    ncols = min(3, len(names))
    nrows = -(-len(names) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.8 * nrows), squeeze=False)
    colors = plt.get_cmap("viridis")([0.15 + 0.7 * i / max(1, len(cores) - 1) for i in range(len(cores))])
    for ax, name in zip(axes.flat, names):
        wrows = [r for r in ok if r["workload"] == name]
        cands = list(dict.fromkeys(r["candidate"] for r in wrows))
        width = 0.8 / len(cores)
        values = [r["samples_per_s"] for r in wrows]
        log = max(values) / max(min(values), 1e-9) > 20  # a linear axis hides a 20x slower peer
        for j, c in enumerate(cores):
            vals = [next((r["samples_per_s"] for r in wrows if r["candidate"] == cand and r["cores"] == c), 0.0) for cand in cands]
            xs = [i + (j - (len(cores) - 1) / 2) * width for i in range(len(cands))]
            bars = ax.bar(xs, vals, width=width, color=colors[j], label=f"{c} core{'s' if c > 1 else ''}")
            ax.bar_label(bars, labels=[f"{v:,.0f}" if v else "" for v in vals], fontsize=6, rotation=90, padding=2)
        if log:
            ax.set_yscale("log")
        ax.margins(y=0.25)
        ax.set_title(name, fontsize=11)
        ax.set_ylabel("samples/s" + (" (log)" if log else ""))
        ax.set_xticks(range(len(cands)))
        ax.set_xticklabels(cands, fontsize=8, rotation=30, ha="right")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
