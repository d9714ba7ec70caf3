"""The regression gate: a run's CSV against a stored baseline CSV, by ratios.

For every gated cell (workload, candidate, cores) that ran in the baseline,
``ratio = current samples/s / baseline samples/s``. The gate fails when

* a cell's ratio is below ``1 - max_regression`` (default: it lost more than 15%),
* the geometric mean of the ratios is below ``1 - max_gmean_regression``
  (default 5%): many small losses add up,
* a cell that ran in the baseline *failed* now.

A cell that is unavailable now (a peer or a plugin not installed here) or
absent is listed as not compared and does not fail the gate; cells new since
the baseline are listed too. Only dataio's cells are gated by default: the
peers' speed is not ours to defend (``--gate-candidates all`` gates them too).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Key = tuple[str, str, int]


def load_csv(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a benchmark CSV, numbers parsed."""
    rows = []
    with open(path, newline="") as f:
        for raw in csv.DictReader(f):
            row: dict[str, Any] = dict(raw)
            try:
                row["cores"] = int(raw["cores"])
            except (KeyError, ValueError):
                continue
            v = raw.get("samples_per_s") or ""
            row["samples_per_s"] = float(v) if v else None
            rows.append(row)
    return rows


def _key(r: dict[str, Any]) -> Key:
    return (r["workload"], r["candidate"], int(r["cores"]))


@dataclass
class GateResult:
    failed: bool
    lines: list[str]
    ratios: dict[Key, float] = field(default_factory=dict)
    gmean: float | None = None

    def __str__(self) -> str:
        return "\n".join(self.lines)


def compare(
    current: list[dict[str, Any]],
    baseline: list[dict[str, Any]],
    *,
    max_regression: float = 0.15,
    max_gmean_regression: float = 0.05,
    candidates: tuple[str, ...] | None = ("dataio",),
    baseline_name: str = "baseline",
) -> GateResult:
    """Compares ``current`` with ``baseline`` (rows as written by the bench's
    CSV); ``candidates=None`` gates every candidate."""

    def gated(r: dict[str, Any]) -> bool:
        return candidates is None or r["candidate"] in candidates

    base = {_key(r): r for r in baseline if gated(r) and r.get("status") == "ok" and r.get("samples_per_s")}
    cur = {_key(r): r for r in current if gated(r)}
    floor, gfloor = 1.0 - max_regression, 1.0 - max_gmean_regression
    who = "every candidate" if candidates is None else ", ".join(candidates)
    lines = [
        (
            f"regression gate against {baseline_name}: a cell may lose at most {max_regression:.0%} of its samples/s, "
            f"the geometric mean at most {max_gmean_regression:.0%} (gated: {who})"
        ),
    ]
    head = f"  {'cell':<34} {'baseline/s':>12} {'current/s':>12} {'ratio':>7}  verdict"
    lines.append(head)
    ratios: dict[Key, float] = {}
    regressed: list[Key] = []
    broken: list[Key] = []
    not_compared = 0
    for key in sorted(base):
        b = base[key]
        name = f"{key[0]} {key[1]} c{key[2]}"
        c = cur.get(key)
        if c is None:
            lines.append(f"  {name:<34} {b['samples_per_s']:>12,.1f} {'-':>12} {'-':>7}  not compared (not in this run)")
            not_compared += 1
            continue
        if c.get("status") != "ok" or not c.get("samples_per_s"):
            why = (c.get("reason") or "")[:100]
            if c.get("status") == "failed":
                lines.append(f"  {name:<34} {b['samples_per_s']:>12,.1f} {'-':>12} {'-':>7}  FAILED now: {why}")
                broken.append(key)
            else:
                lines.append(f"  {name:<34} {b['samples_per_s']:>12,.1f} {'-':>12} {'-':>7}  not compared ({c.get('status')}: {why})")
                not_compared += 1
            continue
        ratio = c["samples_per_s"] / b["samples_per_s"]
        ratios[key] = ratio
        if ratio < floor:
            regressed.append(key)
            verdict = f"REGRESSED ({ratio - 1:+.1%}, limit -{max_regression:.0%})"
        else:
            verdict = "ok" if ratio <= 1 / floor else f"ok (faster: {ratio - 1:+.1%})"
        lines.append(f"  {name:<34} {b['samples_per_s']:>12,.1f} {c['samples_per_s']:>12,.1f} {ratio:>7.3f}  {verdict}")
    for key in sorted(set(cur) - set(base)):
        c = cur[key]
        if c.get("status") == "ok" and c.get("samples_per_s"):
            lines.append(f"  {key[0] + ' ' + key[1] + ' c' + str(key[2]):<34} {'-':>12} {c['samples_per_s']:>12,.1f} {'-':>7}  new (not in the baseline)")
    gmean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios)) if ratios else None
    gmean_bad = gmean is not None and gmean < gfloor
    if gmean is not None:
        verdict = f"REGRESSED ({gmean - 1:+.1%}, limit -{max_gmean_regression:.0%})" if gmean_bad else "ok"
        lines.append(f"  {'geometric mean of ' + str(len(ratios)) + ' cells':<34} {'':>12} {'':>12} {gmean:>7.3f}  {verdict}")
    problems = []
    if regressed:
        problems.append(f"{len(regressed)} cell{'s' if len(regressed) > 1 else ''} regressed ({', '.join(f'{k[0]} {k[1]} c{k[2]}' for k in regressed)})")
    if gmean_bad:
        problems.append("the geometric mean regressed")
    if broken:
        problems.append(f"{len(broken)} cell{'s' if len(broken) > 1 else ''} failed")
    if not ratios and not broken:
        problems.append("no cell could be compared (different workloads or core counts?)")
    failed = bool(problems)
    tail = f"; {not_compared} not compared" if not_compared else ""
    lines.append(f"gate: FAILED — {'; '.join(problems)}{tail}" if failed else f"gate: passed ({len(ratios)} cells compared{tail})")
    return GateResult(failed, lines, ratios, gmean)
