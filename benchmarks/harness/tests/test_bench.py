"""dataio_bench: the regression gate, the report's checks, and a smoke run of the matrix."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from dataio_bench import gate, report
from dataio_bench.cli import median_round, parse_cores
from dataio_bench.workloads import REGISTRY, get_workload


def row(workload: str, candidate: str, cores: int, rate: float | None, status: str = "ok", reason: str = "") -> dict:
    return {"workload": workload, "candidate": candidate, "cores": cores, "status": status, "samples_per_s": rate, "reason": reason, "epoch_samples_per_s": [rate] if rate else []}


BASE = [
    row("image", "dataio", 1, 600.0),
    row("image", "dataio", 2, 1000.0),
    row("image", "torch", 2, 100.0),
    row("bytes", "dataio", 2, 50_000.0),
]


def test_gate_passes_within_the_thresholds() -> None:
    cur = [row("image", "dataio", 1, 560.0), row("image", "dataio", 2, 990.0), row("image", "torch", 2, 10.0), row("bytes", "dataio", 2, 52_000.0)]
    res = gate.compare(cur, BASE)
    assert not res.failed, str(res)
    assert len(res.ratios) == 3, "only dataio's cells are gated by default"
    assert "gate: passed (3 cells compared)" in str(res)


def test_gate_fails_on_one_cell_and_names_it() -> None:
    cur = [row("image", "dataio", 1, 600.0), row("image", "dataio", 2, 700.0), row("bytes", "dataio", 2, 50_000.0)]
    res = gate.compare(cur, BASE, max_regression=0.15)
    assert res.failed
    text = str(res)
    assert "REGRESSED (-30.0%, limit -15%)" in text and "image dataio c2" in text.splitlines()[-1]


def test_gate_fails_on_the_geometric_mean() -> None:
    cur = [row("image", "dataio", 1, 540.0), row("image", "dataio", 2, 900.0), row("bytes", "dataio", 2, 45_000.0)]  # each -10%
    res = gate.compare(cur, BASE, max_regression=0.15, max_gmean_regression=0.05)
    assert res.failed and res.gmean == pytest.approx(0.9)
    assert "the geometric mean regressed" in str(res)


def test_gate_fails_when_a_cell_failed_but_not_when_it_is_unavailable() -> None:
    cur = [row("image", "dataio", 1, 600.0), row("image", "dataio", 2, None, "failed", "child exited with code -9"), row("bytes", "dataio", 2, None, "unavailable", "no peer")]
    res = gate.compare(cur, BASE)
    assert res.failed and "1 cell failed" in str(res) and "not compared (unavailable" in str(res)
    cur[1] = row("image", "dataio", 2, 1000.0)
    assert not gate.compare(cur, BASE).failed


def test_gate_every_candidate_and_new_cells() -> None:
    cur = [*BASE[:2], row("image", "torch", 2, 50.0), BASE[3], row("image", "dataio", 4, 1800.0)]
    res = gate.compare(cur, BASE, candidates=None)
    assert res.failed and "image torch c2" in str(res)
    assert "new (not in the baseline)" in str(res)


def test_gate_cli_reads_csvs_and_exits_3(tmp_path: Path) -> None:
    for r in BASE:
        r["label"] = r["candidate"]
    report.write_csv(BASE, tmp_path / "base.csv")
    worse = [dict(r, samples_per_s=r["samples_per_s"] * 0.5, epoch_samples_per_s=[]) for r in BASE]
    report.write_csv(worse, tmp_path / "cur.csv")
    report.write_csv(BASE, tmp_path / "same.csv")
    assert [r["samples_per_s"] for r in gate.load_csv(tmp_path / "base.csv")] == [600.0, 1000.0, 100.0, 50_000.0]

    def run(cur: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "dataio_bench", "--compare", str(tmp_path / "base.csv"), "--current", str(tmp_path / cur)], capture_output=True, text=True, timeout=120, check=False)

    bad = run("cur.csv")
    assert bad.returncode == 3, bad.stdout + bad.stderr
    assert "REGRESSED (-50.0%" in bad.stdout and "gate: FAILED" in bad.stdout
    good = run("same.csv")
    assert good.returncode == 0 and "gate: passed" in good.stdout


def test_rounds_report_the_median_round_and_keep_every_rate() -> None:
    rs = [row("image", "dataio", 2, 900.0), row("image", "dataio", 2, 1200.0), row("image", "dataio", 2, 1000.0)]
    m = median_round(rs)
    assert m["samples_per_s"] == 1000.0 and m["rounds"] == [900.0, 1200.0, 1000.0]
    # a failed round does not count as a rate; even counts take the lower middle
    m = median_round([row("image", "dali", 2, 300.0), row("image", "dali", 2, None, status="failed"), row("image", "dali", 2, 400.0)])
    assert m["samples_per_s"] == 300.0 and m["rounds"] == [300.0, "failed", 400.0]
    failed = row("image", "ray", 2, None, status="failed")
    assert median_round([failed]) is failed
    assert "rounds" not in median_round([row("image", "dataio", 1, 5.0)])


def test_parse_cores() -> None:
    assert parse_cores("sweep", 2) == [1, 2]
    assert parse_cores("sweep", 6) == [1, 2, 4, 6]
    assert parse_cores("sweep", 1) == [1]
    assert parse_cores("all,1", 8) == [1, 8]
    assert parse_cores("3,16", 8) == [3, 8]


def test_the_check_flags_a_candidate_that_computes_something_else() -> None:
    wl = get_workload("bytes")
    rows = [dict(row("bytes", "dataio", 1, 100.0), digest=[10.0, 500.0]), dict(row("bytes", "torch", 1, 50.0), digest=[10.0, 500.0]), dict(row("bytes", "threads", 1, 80.0), digest=[10.0, 499.0])]
    summary = report.analyse(rows, wl)
    assert rows[0]["check"] == "ok (reference)" and rows[1]["check"].startswith("ok")
    assert rows[2]["check"].startswith("MISMATCH")
    assert rows[1]["ratio_vs_dataio"] == pytest.approx(0.5)
    assert summary["best_peer"] == "threads" and summary["dataio_over_best_peer"] == pytest.approx(1.25)


def test_every_workload_loads_and_names_dataio_first() -> None:
    for name in REGISTRY:
        wl = get_workload(name)
        assert next(iter(wl.candidates())) == "dataio"
        assert set(wl.peers()) <= set(wl.candidates()) and "dataio" not in wl.peers()


def test_a_quick_run_writes_the_table_csv_and_report(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "dataio_bench", "--quick", "--workloads", "bytes,safetensors", "--cores", "1", "--files", "300",
        "--latents", "128", "--no-chart", "--out", str(out), "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "samples/s" in proc.stdout and "bytes cores=1: dataio / best peer" in proc.stdout
    with open(out / "bench.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    got = {(r["workload"], r["candidate"]): r for r in rows}
    assert set(got) == {("bytes", "dataio"), ("bytes", "torch"), ("bytes", "threads"), ("safetensors", "dataio"), ("safetensors", "torch")}
    for r in rows:
        assert r["status"] == "ok", r
        assert float(r["samples_per_s"]) > 0 and float(r["p95_batch_ms"]) >= float(r["p50_batch_ms"]) > 0
        assert float(r["first_batch_s"]) > 0 and float(r["peak_rss_mb"]) > 0
        assert r["check"].startswith("ok"), r["check"]
    assert got[("bytes", "dataio")]["dataio_waiting_on"]
    assert (out / "bench.md").read_text().startswith("# dataio benchmark matrix")
