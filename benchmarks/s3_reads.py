"""Remote reads over S3: dataio against obstore, boto3 and s3fs, in one run.

    python benchmarks/s3_reads.py [--objects 2000] [--object-kb 100] [--inflight 64]
                                  [--boto-threads 32] [--large-mb 1024] [--range-mb 16]
                                  [--ranges-inflight 8] [--repeat 3] [--count-requests]
                                  [--only small|large] [--clients NAMES] [--json PATH]

Every client reads the same objects from the same server: nginx, started by
this script as a child process on 127.0.0.1 (a free port), serving a temp
folder laid out as ``bucket/key``. nginx answers path-style S3 GETs, ranged
GETs and HEADs of those files and ignores the signature, so every client runs
its real S3 code path (SigV4 signing included) against a server fast enough
not to hide it; moto answers ~150 GETs/s, which would. Needs Debian's
``nginx`` (``apt-get install nginx``) and the peers of the ``bench`` group of
packages/dataio-s3/pyproject.toml (``uv pip install --group
packages/dataio-s3/pyproject.toml:bench``).

Workloads:

* **small** — loader-style reads: ``--objects`` objects of ``--object-kb`` KB
  each, ``--inflight`` requests in flight:
  ``dataio pipeline`` (``slot("data").decode_bytes()`` over ``s3://``
  records, ``run("numpy", concurrency=inflight)``); ``dataio.read pool``
  (``dataio.read`` on a thread pool of ``inflight`` threads) and ``dataio.read
  pool size=`` (the same with the length given — a diagnostic: without it
  ``read`` sends a HEAD first); ``obstore`` (``get_async`` + ``bytes_async``,
  ``inflight`` coroutines on one event loop); ``boto3``
  (``get_object().read()`` on a ``--boto-threads`` thread pool, one client
  with as many pooled connections); ``s3fs`` (``cat(paths,
  batch_size=inflight)``, ``max_pool_connections=inflight``).
* **large** — one ``--large-mb`` MiB object read in ``--range-mb`` MiB
  ranges, ``--ranges-inflight`` in flight: ``dataio fetch_into`` (each range
  straight into its slice of one preallocated buffer, from a thread pool);
  ``dataio fetch_into x1`` (one call for the whole object into the buffer);
  ``obstore`` (``get_range_async``); ``boto3`` (``get_object(Range=...)`` on a
  thread pool); ``s3fs`` (``cat_ranges``). The peers keep the bytes objects
  they return and copy nothing; dataio fills the buffer the caller gave.

The ``curl (yardstick)`` row is libcurl fetching the same URLs unsigned with as
many transfers in flight, bodies to /dev/null: what this server and loopback
give a client that does nothing else. It is not a competitor and is in no
ratio.

Each figure is the median of ``--repeat`` runs, the clients taking turns
within each round (so a burst of load on a shared machine hits every client).
``cpu s`` is the benchmark process's CPU time during the run (all its threads,
and curl's for the yardstick), ``nginx`` the server's, ``others`` what the rest
of the machine used meanwhile (other work on a shared machine; kernel softirq
time not charged to a process lands there too); the client's CPU is also
split by thread (the objstore runtime, the core's pools, Python threads) for
the first round. ``--count-requests`` turns on
nginx's access log and reports the requests each client sent per object (or
per range).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.metadata
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dataio_bench.nginx import Nginx, NginxUnavailable

BUCKET = "bench"
ACCESS_KEY = "AKIADATAIOBENCH00001"
SECRET_KEY = "dataio-bench-secret-not-a-real-one-000000"
REGION = "us-east-1"
MIB = 1 << 20


# -- the server (dataio_bench.nginx) ------------------------------------------

# -- the data -----------------------------------------------------------------


def make_data(root: Path, n: int, size: int, large: int) -> tuple[list[str], str]:
    """``n`` objects of ``size`` random bytes under ``bench/small/`` and one of
    ``large`` bytes at ``bench/large/blob.bin``; returns their keys."""
    small = root / BUCKET / "small"
    small.mkdir(parents=True, exist_ok=True)
    keys = []
    for i in range(n):
        key = f"small/{i:06d}.bin"
        path = root / BUCKET / key
        if not path.exists() or path.stat().st_size != size:
            path.write_bytes(os.urandom(size))
        keys.append(key)
    large_key = "large/blob.bin"
    path = root / BUCKET / large_key
    if large and (not path.exists() or path.stat().st_size != large):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            left = large
            while left:
                chunk = os.urandom(min(left, 64 * MIB))
                f.write(chunk)
                left -= len(chunk)
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return keys, large_key


# -- the clients --------------------------------------------------------------


@dataclass
class Ctx:
    endpoint: str
    keys: list[str]
    size: int
    large_key: str
    large_size: int
    range_size: int
    inflight: int
    boto_threads: int
    ranges_inflight: int
    cache: dict[str, Any] = field(default_factory=dict)

    def uri(self, key: str) -> str:
        return f"s3://{BUCKET}/{key}"

    def ranges(self) -> list[tuple[int, int]]:
        return [(a, min(a + self.range_size, self.large_size)) for a in range(0, self.large_size, self.range_size)]


def setup_dataio(ctx: Ctx) -> None:
    import dataio
    import dataio_s3

    dataio.configure_endpoint("s3", ctx.endpoint)
    dataio.configure_credentials("s3", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, region=REGION)
    dataio_s3.configure("s3", max_retries=2)


def small_dataio_pipeline(ctx: Ctx, keys: list[str]) -> int:
    import dataio

    pipe = ctx.cache.get("pipe")
    if pipe is None:
        pipe = ctx.cache["pipe"] = dataio.pipeline(dataio.slot("data").decode_bytes(), dataio.batch(64, prefetch=4))
    total = 0
    with pipe.bind([{"data": ctx.uri(k)} for k in keys]).run("numpy", concurrency=ctx.inflight) as loader:
        for batch in loader:
            total += sum(a.nbytes for a in batch["data"])
    return total


def small_dataio_read(ctx: Ctx, keys: list[str]) -> int:
    import dataio

    pool = ctx.cache.setdefault("dataio_pool", ThreadPoolExecutor(ctx.inflight))
    return sum(len(b) for b in pool.map(dataio.read, [ctx.uri(k) for k in keys]))


def small_dataio_read_sized(ctx: Ctx, keys: list[str]) -> int:
    """Diagnostic: the same with ``size=`` given, which saves the HEAD that
    ``dataio.read(uri)`` sends first to learn the length."""
    import dataio

    pool = ctx.cache.setdefault("dataio_pool", ThreadPoolExecutor(ctx.inflight))
    return sum(len(b) for b in pool.map(lambda u: dataio.read(u, 0, ctx.size), [ctx.uri(k) for k in keys]))


def _obstore(ctx: Ctx) -> Any:
    if "obstore" not in ctx.cache:
        from obstore.store import S3Store

        ctx.cache["obstore"] = S3Store(
            BUCKET, endpoint=ctx.endpoint, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
            region=REGION, client_options={"allow_http": True},
        )
    return ctx.cache["obstore"]


def _bounded(n: int, jobs: list[Callable[[], Any]]) -> list[Any]:
    """Runs the coroutine factories ``jobs`` with ``n`` in flight on one event loop."""

    async def main() -> list[Any]:
        it = iter(enumerate(jobs))
        out: list[Any] = [None] * len(jobs)

        async def worker() -> None:
            for i, job in it:
                out[i] = await job()

        await asyncio.gather(*(worker() for _ in range(min(n, len(jobs)))))
        return out

    return asyncio.run(main())


def small_obstore(ctx: Ctx, keys: list[str]) -> int:
    import obstore

    store = _obstore(ctx)

    async def get(key: str) -> int:
        resp = await obstore.get_async(store, key)
        return len(await resp.bytes_async())

    return sum(_bounded(ctx.inflight, [lambda k=k: get(k) for k in keys]))


def _boto3(ctx: Ctx, pool: int) -> Any:
    name = f"boto3-{pool}"
    if name not in ctx.cache:
        import boto3
        from botocore.config import Config

        ctx.cache[name] = boto3.client(
            "s3", endpoint_url=ctx.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, config=Config(max_pool_connections=pool, s3={"addressing_style": "path"}),
        )
    return ctx.cache[name]


def small_boto3(ctx: Ctx, keys: list[str]) -> int:
    client = _boto3(ctx, ctx.boto_threads)
    pool = ctx.cache.setdefault("boto_pool", ThreadPoolExecutor(ctx.boto_threads))
    return sum(pool.map(lambda k: len(client.get_object(Bucket=BUCKET, Key=k)["Body"].read()), keys))


def _s3fs(ctx: Ctx, pool: int) -> Any:
    name = f"s3fs-{pool}"
    if name not in ctx.cache:
        import s3fs

        ctx.cache[name] = s3fs.S3FileSystem(
            key=ACCESS_KEY, secret=SECRET_KEY, endpoint_url=ctx.endpoint, client_kwargs={"region_name": REGION},
            config_kwargs={"max_pool_connections": pool, "s3": {"addressing_style": "path"}},
            skip_instance_cache=True, use_listings_cache=False,
        )
    return ctx.cache[name]


def small_s3fs(ctx: Ctx, keys: list[str]) -> int:
    fs = _s3fs(ctx, ctx.inflight)
    out = fs.cat([f"{BUCKET}/{k}" for k in keys], batch_size=ctx.inflight)
    return sum(len(v) for v in out.values())


def _buffer(ctx: Ctx) -> np.ndarray:
    if "buffer" not in ctx.cache:
        buf = np.empty(ctx.large_size, dtype=np.uint8)
        buf[:: 4096] = 0  # fault the pages in once, outside every timed run
        ctx.cache["buffer"] = buf
    return ctx.cache["buffer"]


def large_dataio_ranges(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    import dataio

    buf = _buffer(ctx)
    uri = ctx.uri(ctx.large_key)
    pool = ctx.cache.setdefault("range_pool", ThreadPoolExecutor(ctx.ranges_inflight))
    return sum(pool.map(lambda r: dataio.fetch_into(uri, buf[r[0] : r[1]], offset=r[0], size=r[1] - r[0]), ranges))


def large_dataio_one_call(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    import dataio

    buf = _buffer(ctx)
    a, b = ranges[0][0], ranges[-1][1]
    return dataio.fetch_into(ctx.uri(ctx.large_key), buf[a:b], offset=a, size=b - a)


def large_obstore(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    import obstore

    store = _obstore(ctx)

    async def get(a: int, b: int) -> int:
        return len(await obstore.get_range_async(store, ctx.large_key, start=a, end=b))

    return sum(_bounded(ctx.ranges_inflight, [lambda r=r: get(*r) for r in ranges]))


def large_boto3(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    client = _boto3(ctx, ctx.ranges_inflight)
    pool = ctx.cache.setdefault("boto_range_pool", ThreadPoolExecutor(ctx.ranges_inflight))

    def get(r: tuple[int, int]) -> int:
        body = client.get_object(Bucket=BUCKET, Key=ctx.large_key, Range=f"bytes={r[0]}-{r[1] - 1}")["Body"]
        return len(body.read())

    return sum(pool.map(get, ranges))


def large_s3fs(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    fs = _s3fs(ctx, ctx.ranges_inflight)
    path = f"{BUCKET}/{ctx.large_key}"
    out = fs.cat_ranges([path] * len(ranges), [a for a, _ in ranges], [b for _, b in ranges], batch_size=ctx.ranges_inflight)
    return sum(len(v) for v in out)


def _curl(ctx: Ctx, entries: list[tuple[str, tuple[int, int] | None]], parallel: int) -> int:
    """The yardstick: curl (C, libcurl's multi interface) fetching the same
    URLs unsigned with ``parallel`` transfers in flight, bodies to /dev/null.
    What the server and loopback deliver to a client that does nothing else."""
    cfg = ctx.cache.get(("curl", len(entries), parallel))
    if cfg is None:
        fd, cfg = tempfile.mkstemp(prefix="dataio-curl-", suffix=".cfg")
        with os.fdopen(fd, "w") as f:
            for key, rng in entries:
                f.write(f'url = "{ctx.endpoint}/{BUCKET}/{key}"\noutput = "/dev/null"\n')
                if rng is not None:
                    f.write(f'range = "{rng[0]}-{rng[1] - 1}"\n')
        ctx.cache[("curl", len(entries), parallel)] = cfg
    out = subprocess.run(
        ["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-immediate",
         "--parallel-max", str(parallel), "--write-out", "%{size_download}\\n", "-K", cfg],
        check=True, capture_output=True, text=True,
    ).stdout
    return sum(int(v) for v in out.split())


def small_curl(ctx: Ctx, keys: list[str]) -> int:
    return _curl(ctx, [(k, None) for k in keys], ctx.inflight)


def large_curl(ctx: Ctx, ranges: list[tuple[int, int]]) -> int:
    return _curl(ctx, [(ctx.large_key, r) for r in ranges], ctx.ranges_inflight)


SMALL: dict[str, Callable[[Ctx, list[str]], int]] = {
    "dataio pipeline": small_dataio_pipeline,
    "dataio.read pool": small_dataio_read,
    "dataio.read pool size=": small_dataio_read_sized,
    "obstore": small_obstore,
    "boto3": small_boto3,
    "s3fs": small_s3fs,
    "curl (yardstick)": small_curl,
}
LARGE: dict[str, Callable[[Ctx, list[tuple[int, int]]], int]] = {
    "dataio fetch_into": large_dataio_ranges,
    "dataio fetch_into x1": large_dataio_one_call,
    "obstore": large_obstore,
    "boto3": large_boto3,
    "s3fs": large_s3fs,
    "curl (yardstick)": large_curl,
}
PEERS = ("obstore", "boto3", "s3fs")
TARGETS = {"obstore": 1.0, "boto3": 3.0, "s3fs": 3.0}


def available(name: str) -> str | None:
    """Why a client cannot run here, or None."""
    if name.startswith("curl"):
        return None if shutil.which("curl") else "curl is not installed"
    module = {"obstore": "obstore", "boto3": "boto3", "s3fs": "s3fs"}.get(name, "dataio_s3")
    try:
        __import__(module)
    except ImportError as e:
        return f"{module} is not installed ({e})"
    return None


# -- running ------------------------------------------------------------------


@dataclass
class Row:
    name: str
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)
    other_cpu: list[float] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)
    threads: dict[str, float] = field(default_factory=dict)
    skipped: str | None = None


def verify_small(ctx: Ctx, root: Path, name: str) -> None:
    """Reads a few objects through the client and compares them with the files."""
    sample = ctx.keys[:: max(1, len(ctx.keys) // 5)][:5]
    if name.startswith("dataio"):
        import dataio

        got = [dataio.read(ctx.uri(k)) for k in sample]
    elif name == "obstore":
        import obstore

        got = [bytes(obstore.get(_obstore(ctx), k).bytes()) for k in sample]
    elif name == "boto3":
        got = [_boto3(ctx, ctx.boto_threads).get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in sample]
    else:
        got = [_s3fs(ctx, ctx.inflight).cat_file(f"{BUCKET}/{k}") for k in sample]
    for k, data in zip(sample, got):
        if data != (root / BUCKET / k).read_bytes():
            sys.exit(f"{name}: {k} read back different bytes")


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy (not idle, not iowait) so far, from /proc/stat."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return float("nan")
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def thread_cpu() -> collections.Counter[str]:
    """CPU seconds of this process's threads so far, by thread name with any
    trailing number dropped (``dataio-objstore``, ``tokio-rt-worker``, the
    core's ``dataio-io``/``dataio-cpu``; Python threads show as ``python``)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: collections.Counter[str] = collections.Counter()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue  # the thread has exited
        name = re.sub(r"[-_:]?\d+$", "", raw[raw.index("(") + 1 : raw.rindex(")")])
        fields = raw.rsplit(")", 1)[1].split()
        out[name] += (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its reaped children (curl)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(
    title: str, clients: dict[str, Callable[[Ctx, Any], int]], ctx: Ctx, work: list[Any], warm: list[Any],
    expected: int, repeat: int, server: Nginx, count_requests: bool,
    prepare: Callable[[str], None], check: Callable[[str], None], only: list[str],
) -> list[Row]:
    """Warms every client up, then runs them in turns, ``repeat`` rounds; the
    first round's result of each is checked against the files (untimed)."""
    rows = [Row(name) for name in clients if not only or any(name.startswith(w) for w in only)]
    for row in rows:
        row.skipped = available(row.name)
        if row.skipped:
            print(f"  {row.name}: skipped — {row.skipped}", flush=True)
            continue
        clients[row.name](ctx, warm)  # connections, pools, page cache
    for r in range(repeat):
        for row in rows:
            if row.skipped:
                continue
            if r == 0:
                prepare(row.name)
            before = server.requests() if count_requests and r == 0 else None
            threads_before = thread_cpu() if r == 0 else None
            t, c, sc, mc = time.perf_counter(), cpu_seconds(), server.cpu_seconds(), machine_busy_seconds()
            got = clients[row.name](ctx, work)
            dt, dc = time.perf_counter() - t, cpu_seconds() - c
            dsc, dmc = server.cpu_seconds() - sc, machine_busy_seconds() - mc
            if got != expected:
                sys.exit(f"{row.name}: read {got} bytes, expected {expected}")
            row.seconds.append(dt)
            row.cpu.append(dc)
            row.server_cpu.append(dsc)
            row.other_cpu.append(max(0.0, dmc - dc - dsc))
            if threads_before is not None:
                row.threads = {k: v for k, v in (thread_cpu() - threads_before).items() if v > 0}
            if before is not None:
                row.requests = dict(server.requests() - before)
            if r == 0:
                check(row.name)
            print(f"  [{title} round {r + 1}/{repeat}] {row.name:<22} {dt:7.3f} s  cpu: client {dc:5.2f} s, "
                  f"nginx {dsc:5.2f} s, rest of the machine {row.other_cpu[-1]:5.2f} s", flush=True)
    return rows


def report(title: str, rows: list[Row], units: int, unit_bytes: int, unit_word: str, headline: str,
           count_requests: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"clients": {}, "ratios": {}}
    head = next((r for r in rows if r.name == headline and r.seconds), None)
    head_t = statistics.median(head.seconds) if head else None
    print(f"\n{title}")
    cols = (f"  {'client':<22} {unit_word + '/s':>10} {'MB/s':>9} {'median s':>9} {'cpu s':>6} {'nginx':>6} "
            f"{'others':>6}  {'dataio/x':>8}")
    print(cols + ("  requests per " + unit_word.rstrip("s") if count_requests else ""))
    for row in rows:
        if not row.seconds:
            print(f"  {row.name:<22} skipped: {row.skipped}")
            continue
        t = statistics.median(row.seconds)
        ratio = (t / head_t) if head_t else None
        per = {k: round(v / units, 2) for k, v in sorted(row.requests.items())}
        med = statistics.median
        print(f"  {row.name:<22} {units / t:10.1f} {units * unit_bytes / t / 1e6:9.1f} {t:9.3f} "
              f"{med(row.cpu):6.2f} {med(row.server_cpu):6.2f} {med(row.other_cpu):6.2f}  {ratio:8.2f}"
              + (f"  {per}" if count_requests else ""))
        out["clients"][row.name] = {
            f"{unit_word}_per_s": units / t, "mb_per_s": units * unit_bytes / t / 1e6, "seconds": row.seconds,
            "cpu_seconds": row.cpu, "nginx_cpu_seconds": row.server_cpu, "other_cpu_seconds": row.other_cpu,
            "requests": row.requests, "thread_cpu_seconds_round1": row.threads,
        }
    print(f"  client CPU per {unit_word.rstrip('s')} by thread (first round, µs): ")
    for row in rows:
        if row.threads:
            parts = ", ".join(f"{k} {1e6 * v / units:.0f}" for k, v in sorted(row.threads.items(), key=lambda kv: -kv[1]))
            print(f"    {row.name:<22} {parts}")
    if head_t:
        for peer in PEERS:
            row = next((r for r in rows if r.name == peer and r.seconds), None)
            if row is None:
                continue
            ratio = statistics.median(row.seconds) / head_t
            out["ratios"][f"{headline} / {peer}"] = ratio
            verdict = "meets" if ratio >= TARGETS[peer] else "MISSES"
            print(f"  {headline} / {peer}: {ratio:.2f}x  ({verdict} the target >= {TARGETS[peer]:g}x)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--object-kb", type=int, default=100, help="object size in KB (1000 bytes)")
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--boto-threads", type=int, default=32)
    ap.add_argument("--large-mb", type=int, default=1024, help="large object size in MiB")
    ap.add_argument("--range-mb", type=int, default=16, help="range size in MiB")
    ap.add_argument("--ranges-inflight", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nginx-workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", choices=("small", "large"))
    ap.add_argument("--clients", help="comma-separated names (or prefixes) of the clients to run; default all")
    ap.add_argument("--count-requests", action="store_true", help="nginx access log on; requests per object/range")
    ap.add_argument("--data-dir", help="keep the objects here between runs (default: a temp folder, removed)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    only = [w.strip() for w in args.clients.split(",") if w.strip()] if args.clients else []
    size, large = args.object_kb * 1000, (args.large_mb * MIB if args.only != "small" else 0)
    root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="dataio-s3-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"host: {platform.processor() or platform.machine()}, {cpus} usable cores, load {load:.2f}; "
          f"python {platform.python_version()}; nginx on loopback, {args.nginx_workers} workers")
    t = time.perf_counter()
    keys, large_key = make_data(root, args.objects if args.only != "large" else 0, size, large)
    print(f"data: {len(keys)} x {size} B + {large} B under {root} ({time.perf_counter() - t:.1f} s)", flush=True)
    try:
        server = Nginx(root, args.nginx_workers, args.count_requests)
    except NginxUnavailable as e:
        sys.exit(str(e))
    results: dict[str, Any] = {
        "host": {"cores": cpus, "load_at_start": load, "python": platform.python_version()},
        "args": vars(args),
    }
    try:
        ctx = Ctx(server.endpoint, keys, size, large_key, large, args.range_mb * MIB, args.inflight,
                  args.boto_threads, args.ranges_inflight)
        if available("dataio") is None:
            setup_dataio(ctx)
        versions: dict[str, str | None] = {}
        for mod in ("dataio", "dataio-s3", "obstore", "boto3", "botocore", "s3fs", "aiobotocore"):
            try:
                versions[mod] = importlib.metadata.version(mod)
            except importlib.metadata.PackageNotFoundError:
                versions[mod] = None
        results["versions"] = versions
        print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
        if args.only != "large":
            print(f"\nsmall: {len(keys)} objects x {size // 1000} KB, {args.inflight} in flight "
                  f"(boto3: {args.boto_threads} threads)", flush=True)
            warm = keys[: min(len(keys), 4 * args.inflight)]
            rows = measure("small", SMALL, ctx, keys, warm, size * len(keys), args.repeat, server,
                           args.count_requests, lambda name: None, lambda name: verify_small(ctx, root, name), only)
            results["small"] = report(
                f"small objects: {len(keys)} x {size // 1000} KB, {args.inflight} in flight (median of {args.repeat})",
                rows, len(keys), size, "objects", "dataio pipeline", args.count_requests)
            pipe_row = next((r for r in rows if r.name == "dataio.read pool" and r.seconds), None)
            if pipe_row is not None:
                head = statistics.median(pipe_row.seconds)
                for peer in PEERS:
                    row = next((r for r in rows if r.name == peer and r.seconds), None)
                    if row is not None:
                        results["small"]["ratios"][f"dataio.read pool / {peer}"] = statistics.median(row.seconds) / head
        if args.only != "small":
            ranges = ctx.ranges()
            print(f"\nlarge: {large >> 20} MiB object in {args.range_mb} MiB ranges, {args.ranges_inflight} in flight",
                  flush=True)

            samples = (ranges[0], ranges[len(ranges) // 2], ranges[-1])

            def clear_samples(name: str) -> None:
                if name.startswith("dataio"):
                    for a, b in samples:
                        _buffer(ctx)[a:b] = 0

            def check_large(name: str) -> None:
                if name.startswith("dataio"):
                    with open(root / BUCKET / large_key, "rb") as f:
                        for a, b in samples:
                            f.seek(a)
                            if f.read(b - a) != _buffer(ctx)[a:b].tobytes():
                                sys.exit(f"{name}: range {a}-{b} differs from the file")

            warm = ranges[: args.ranges_inflight]
            rows = measure("large", LARGE, ctx, ranges, warm, large, args.repeat, server,
                           args.count_requests, clear_samples, check_large, only)
            results["large"] = report(
                f"large ranged reads: {large >> 20} MiB in {args.range_mb} MiB ranges, {args.ranges_inflight} in flight "
                f"(median of {args.repeat})", rows, len(ranges), args.range_mb * MIB, "ranges", "dataio fetch_into",
                args.count_requests)
    finally:
        server.stop()
        for k, v in ctx.cache.items() if "ctx" in locals() else ():
            if isinstance(k, tuple) and k[0] == "curl":
                os.unlink(v)
        if not args.data_dir:
            shutil.rmtree(root, ignore_errors=True)
    results["load_at_end"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"\nload average at the end: {results['load_at_end']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
