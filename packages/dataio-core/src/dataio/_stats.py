"""Turns ``loader.stats()`` snapshots into per-stage rates and a verdict on
where the pipeline is waiting. Pure Python over the counters the native
loader keeps (relaxed atomics, cheap enough to leave on); nothing here runs
unless asked.

The stages, in the order data flows:

* **source** — pulling records from the Python record source, running the
  record maps and ``context=`` (the coordinator thread, holding the GIL);
* **fetch** — reading each slot's bytes (local files on the CPU pool, remote
  objects on the IO runtime);
* **decode** — decode and the fused transforms, written into the batch (CPU pool);
* **batch** — batches being filled (``batches_in_window``);
* **hand-off** — finished batches waiting for the consumer (``batches_ready``),
  and the time the consumer waited in ``next()``.

Used as ``loader.report()`` (since the epoch started, or since an earlier
snapshot) or ``dataio.loader.describe_stats(after, before)``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StatsReport", "describe_stats"]

# A host that fetched more than this many times the shard bytes its ranks
# delivered is named in the report's hints.
HOST_FETCH_RATIO = 1.1
# Thresholds of the verdict. The consumer is "waiting" when it spends more
# than WAIT of the interval blocked in next(); then the stage nearest its
# capacity is the limit if it uses at least LIMITING of it (not higher: on a
# shared machine a saturated pool still shows well under 100%); admission is
# "full" at FULL of concurrency.
WAIT = 0.10
LIMITING = 0.50
FULL = 0.90


@dataclass
class StatsReport:
    """What ``describe_stats`` found. ``str(report)`` is a short readable summary."""

    interval_s: float
    rates: dict[str, float]
    per_record_ms: dict[str, float]
    busy: dict[str, float]
    queues: dict[str, Any]
    waiting_on: str
    verdict: str
    hints: list[str] = field(default_factory=list)
    #: With an executor plugin: the slowest worker, what it waits on and a
    #: one-line summary (the executor's ``stats()["slowest_worker"]``).
    slowest_worker: dict[str, Any] | None = None
    #: A shard source's counters (shards opened, the shard cache's hits,
    #: misses, bytes fetched, evictions, and ``host_fetch_to_delivery``: what
    #: this rank's host fetched over what its ranks delivered), since the
    #: source was opened.
    shards: dict[str, Any] | None = None
    #: A mix (``dataio.mix``): the source whose records take longest to read,
    #: as ``{"source": s, "ms_per_record": ..., "records": n}``.
    slowest_source: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "rates": dict(self.rates),
            "per_record_ms": dict(self.per_record_ms),
            "busy": dict(self.busy),
            "queues": dict(self.queues),
            "waiting_on": self.waiting_on,
            "verdict": self.verdict,
            "hints": list(self.hints),
            "slowest_worker": dict(self.slowest_worker) if self.slowest_worker else None,
            "shards": dict(self.shards) if self.shards else None,
            "slowest_source": dict(self.slowest_source) if self.slowest_source else None,
        }

    def __str__(self) -> str:
        r, b, q = self.rates, self.busy, self.queues
        lines = [
            (
                f"over {self.interval_s:.2f} s: {r['records_per_s']:,.0f} records/s, {r['batches_per_s']:,.1f} batches/s, "
                f"{r['mb_per_s']:,.1f} MB/s read" + (f", {r['failed_per_s']:,.1f} failed/s" if r["failed_per_s"] else "")
            ),
            "  per record: " + ", ".join(f"{k} {v:.2f} ms" for k, v in self.per_record_ms.items()),
            (
                f"  busy: source {b['source']:.0%} (one thread), fetch {b['fetch_in_flight']:.1f} reads in progress on average, "
                f"CPU pool {b['cpu_pool']:.0%} of {q['cpu_threads']} threads (decode {b['decode']:.0%}), consumer waiting {b['consumer_wait']:.0%}"
            ),
            (
                f"  queues now: {q['records_in_flight']}/{q['concurrency'] or '?'} records in flight, "
                f"{q['batches_in_window']} batches in the window, {q['batches_ready']}/{q['prefetch'] or '?'} ready"
            ),
            f"  waiting on: {self.waiting_on} — {self.verdict}",
        ]
        if self.slowest_worker:
            lines.append("  " + str(self.slowest_worker.get("summary", self.slowest_worker)))
        if self.slowest_source:
            w = self.slowest_source
            lines.append(
                f"  slowest source of the mix: #{w['source']}, {w['ms_per_record']:.2f} ms per record read "
                f"({w['records']} records; the others {w['others_ms_per_record']:.2f} ms)"
            )
        if self.shards:
            s = self.shards
            line = f"  shards: {s.get('shards', '?')} in the source, {s.get('shards_opened', 0)} opened"
            if "cache_hits" in s:
                line += (
                    f"; cache {s['cache_hits']} hits, {s['cache_misses']} misses, "
                    f"{s['cache_bytes_fetched'] / 1e6:,.1f} MB fetched, {s['cache_evictions']} evictions, "
                    f"{s['cache_bytes_used'] / 1e6:,.1f} of {s['cache_budget'] / 1e6:,.1f} MB used"
                )
            if "host_fetch_to_delivery" in s:
                line += f"; host {s.get('host', 0)} fetched {s['host_fetch_to_delivery']:.2f}x what its ranks delivered"
            req = s.get("requests")
            if isinstance(req, dict) and req:
                line += "; requests " + ", ".join(f"{k} {v}" for k, v in req.items())
            lines.append(line)
        lines += [f"  hint: {h}" for h in self.hints]
        return "\n".join(lines)


def _num(d: Mapping[str, Any], key: str) -> float:
    v = d.get(key, 0)
    return float(v) if isinstance(v, (int, float)) else 0.0


def describe_stats(
    after: Mapping[str, Any],
    before: Mapping[str, Any] | None = None,
    *,
    concurrency: int | None = None,
    prefetch: int | None = None,
    cpu_threads: int | None = None,
    ops: Collection[str] | None = None,
) -> StatsReport:
    """Per-stage rates between two ``loader.stats()`` snapshots (``before``
    omitted: since the epoch started) and where the pipeline is waiting.

    ``waiting_on`` is one of:

    * ``"consumer"`` — the consumer rarely waits (under 10% of the time) for
      a batch: the training step (whatever consumes batches) is the bottleneck;

    otherwise the consumer waits and the loader's limiting stage is the one
    nearest its capacity, when it uses at least half of it:

    * ``"source"`` — the record source, the record maps or ``context=``
      (Python, one thread) cannot keep up;
    * ``"decode"`` — the CPU pool is busy reading, decoding and transforming;
    * ``"fetch"`` — remote reads take most of each record's time (I/O-bound:
      raise ``concurrency`` if the reads in progress reach it);
    * ``"admission"`` — ``concurrency`` records are in flight and neither
      reads nor the CPU pool are near their limit (raise ``concurrency``);
    * ``"hand-off"`` — no stage is near its limit yet the consumer waits:
      handing batches over under the GIL (lists of many variable-size
      outputs cost most), or other processes sharing the CPUs;
    * ``"idle"`` — nothing moved in the interval.

    A snapshot from another epoch than ``after`` (the counters restart each
    epoch) is ignored: the report then covers ``after``'s epoch from its start.

    ``ops`` names the ops of the plan (``loader.report()`` passes them): a
    hint about one kind of decode is given only when the plan has it
    (resizing early pays through DCT scaling only under ``decode_image``).
    ``None`` (not known) gives every hint.
    """
    if before is not None and _num(before, "elapsed_seconds") > _num(after, "elapsed_seconds"):
        before = None  # another epoch: its counters were reset
    base: Mapping[str, Any] = before or {}

    def delta(key: str) -> float:
        return max(0.0, _num(after, key) - _num(base, key))

    dt = delta("elapsed_seconds")
    span = max(dt, 1e-9)
    done = delta("records_done")
    delivered = delta("batches_delivered")
    fetch_s, decode_s, source_s, wait_s = delta("fetch_seconds"), delta("decode_seconds"), delta("source_seconds"), delta("consumer_wait_seconds")
    if isinstance(after.get("cpu_threads"), int):
        # An executor that decodes elsewhere says how many threads did it.
        cpu_threads = after["cpu_threads"]
    if cpu_threads is None:
        from . import _native

        cpu_threads = _native.pool_info()[0]
    threads = max(1, int(cpu_threads))

    rates = {
        "records_per_s": done / span,
        "failed_per_s": delta("records_failed") / span,
        "batches_per_s": delivered / span,
        "mb_per_s": delta("bytes_read") / span / 1e6,
    }
    per = max(done, 1.0)
    per_record_ms = {"source": 1e3 * source_s / per, "fetch": 1e3 * fetch_s / per, "decode": 1e3 * decode_s / per}
    fetch_in_flight = fetch_s / span
    # Local reads run on the CPU pool (they occupy its threads); remote reads
    # wait on the IO runtime and show as many more reads in progress than
    # there are CPU threads.
    cpu_s = decode_s + (fetch_s if fetch_in_flight <= threads else 0.0)
    busy = {
        "source": min(1.0, source_s / span),
        "fetch_in_flight": fetch_in_flight,
        "decode": min(1.0, decode_s / (span * threads)),
        "cpu_pool": min(1.0, cpu_s / (span * threads)),
        "consumer_wait": min(1.0, wait_s / span),
    }
    in_flight = int(_num(after, "records_in_flight"))
    ready = int(_num(after, "batches_ready"))
    queues = {
        "records_in_flight": in_flight,
        "concurrency": concurrency,
        "batches_in_window": int(_num(after, "batches_in_window")),
        "batches_ready": ready,
        "prefetch": prefetch,
        "cpu_threads": threads,
    }
    saturated = concurrency is not None and in_flight >= FULL * concurrency
    hints: list[str] = []

    if done == 0 and delivered == 0:
        waiting_on, verdict = "idle", "no record finished and no batch was delivered in the interval"
    elif busy["consumer_wait"] < WAIT:
        waiting_on = "consumer"
        verdict = f"the consumer waited for batches only {busy['consumer_wait']:.0%} of the time: the loader keeps ahead, the training step is the bottleneck"
    else:
        # The consumer waits: the loader is the bottleneck. Its limiting stage
        # is the one nearest its capacity (each score is a share, 0..1).
        lead = f"the consumer waited for batches {busy['consumer_wait']:.0%} of the time"
        scores = {"source": busy["source"], "decode": busy["cpu_pool"]}
        if fetch_in_flight > threads:  # remote reads: their share of each record's time
            scores["fetch"] = fetch_s / max(fetch_s + decode_s, 1e-9)
        stage = max(scores, key=lambda k: scores[k])
        if scores[stage] < LIMITING:
            stage = "admission" if saturated else ("consumer" if busy["consumer_wait"] < 0.5 else "hand-off")
        waiting_on = stage
        if stage == "source":
            verdict = f"{lead}; pulling records (record source, record maps, context=) kept its thread {busy['source']:.0%} busy"
            hints.append("move per-record Python work into native ops, or hand the loader a sized source with _dataio_take (as parquet_records does)")
        elif stage == "decode":
            verdict = (
                f"{lead}; the CPU pool was {busy['cpu_pool']:.0%} busy reading, decoding and transforming "
                f"({per_record_ms['decode']:.2f} ms decode + {per_record_ms['fetch']:.2f} ms read per record)"
            )
            smaller = ", smaller decodes (resize early to use DCT scaling)" if ops is None or "decode_image" in ops else ""
            hints.append(f"more cores (DATAIO_CPU_THREADS){smaller}, or fewer ops")
        elif stage == "fetch":
            verdict = (
                f"{lead}; reads took {per_record_ms['fetch']:.1f} ms per record against {per_record_ms['decode']:.2f} ms of decode, "
                f"{fetch_in_flight:.0f} in progress on average (concurrency={concurrency}): the store sets the pace"
            )
            if concurrency and fetch_in_flight >= FULL * concurrency:
                hints.append("raise concurrency= (remote stores need 64-256 reads in flight)")
        elif stage == "admission":
            verdict = f"{lead}; {in_flight} records in flight (the concurrency limit) while the CPU pool was {busy['cpu_pool']:.0%} busy"
            hints.append("raise concurrency=")
        elif stage == "consumer":
            verdict = f"{lead} (start-up or bursts) and no loader stage is near its limit: mostly the training step is the bottleneck"
        else:
            verdict = (
                f"{lead}; no stage is near its limit (CPU pool {busy['cpu_pool']:.0%} busy, source {busy['source']:.0%}): "
                "the hand-off (batches converted and delivered under the GIL; many variable-size outputs cost most) "
                "or other processes sharing the CPUs set the pace"
            )
    if ready and prefetch and ready >= prefetch and waiting_on != "consumer":
        hints.append(f"{ready} batches are ready now: the last moments of the interval were consumer-bound")
    slowest = after.get("slowest_worker")
    shards = after.get("source")
    ratio = shards.get("host_fetch_to_delivery") if isinstance(shards, dict) else None
    if isinstance(shards, dict) and ratio is not None and ratio > HOST_FETCH_RATIO:
        hints.append(
            f"host {shards.get('host', 0)} fetched {ratio:.2f}x the shard bytes its ranks delivered: its shards are "
            "fetched more than once (a cache budget below the open windows evicts them before they are read through, "
            "or the hosts are not named: shard={'hosts': N}, or torchrun's LOCAL_WORLD_SIZE)"
        )
    short = cache_short_note(shards) if isinstance(shards, dict) else None
    if short:
        hints.append(short)
    slowest_source = _slowest_source(after.get("source_reads"), before.get("source_reads") if before else None)
    return StatsReport(
        dt, rates, per_record_ms, busy, queues, waiting_on, verdict, hints,
        slowest if isinstance(slowest, dict) else None,
        shards if isinstance(shards, dict) and "shards_opened" in shards else None,
        slowest_source,
    )


def cache_short_note(source: Mapping[str, Any]) -> str | None:
    """What to say when the shard cache is below the working set (the
    shards an epoch reads at once, each from its first record to its last):
    some shards are then fetched more than once, or read into memory
    uncached when not even the open ones fit; and the budget that fetches
    each once."""
    budget = int(source.get("cache_budget", 0) or 0)
    working = int(source.get("cache_working_set", 0) or 0)
    uncached = int(source.get("cache_uncached", 0) or 0)
    need = max(working, int(source.get("cache_short_need", 0) or 0))
    if not budget or (not uncached and working <= budget):
        return None
    what = (
        f"{uncached} shards ({int(source.get('cache_uncached_bytes', 0)) / 1e6:,.1f} MB) did not fit beside the open "
        "ones and were read into memory, uncached, and read-ahead stopped"
        if uncached
        else "shards it evicts come back later in the epoch and are fetched again"
    )
    return (
        f"the shard cache ({budget / 1e6:,.1f} MB) is below the working set of this epoch's shards "
        f"({need / 1e6:,.1f} MB read at once at the peak): {what}; cache_bytes={need} would fetch each shard once "
        "(or shrink shuffle_window / shuffle_spread)"
    )


def _slowest_source(after: Any, before: Any) -> dict[str, Any] | None:
    """Of a mix's sources, the one whose records took longest to read, per record."""
    if not isinstance(after, list) or len(after) < 2:
        return None
    base = before if isinstance(before, list) and len(before) == len(after) else [(0, 0.0)] * len(after)
    per = [(int(a[0]) - int(b[0]), float(a[1]) - float(b[1])) for a, b in zip(after, base)]
    read = [(s, n, t) for s, (n, t) in enumerate(per) if n > 0]
    if len(read) < 2:
        return None
    s, n, t = max(read, key=lambda x: x[2] / x[1])
    others_n = sum(x[1] for x in read if x[0] != s)
    others_t = sum(x[2] for x in read if x[0] != s)
    return {"source": s, "ms_per_record": 1e3 * t / n, "records": n, "others_ms_per_record": 1e3 * others_t / max(others_n, 1)}
