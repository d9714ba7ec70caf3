"""dataio.rdma against a plain TCP socket copy, between the same two
processes, in one run; then a sweep of ``max_inflight`` x ``chunk_size``.

    python benchmarks/rdma_transfer.py [--size-mb 1024] [--sweep-size-mb 256] [--repeat 3]
                                       [--chunks 64K,256K,1M,4M,16M] [--inflight 1,2,4,8,16,32]
                                       [--provider 'tcp;ofi_rxm'] [--bind 127.0.0.1] [--json PATH]

One child process is the server: it serves a ``--size-mb`` region with
``rdma.serve`` (filled with pseudo-random bytes) and, from the same memory,
answers a plain TCP socket (``sendall`` of a memoryview of the region for
reads, ``recv_into`` it for writes). The parent is the client of both.

* **headline** — ``--size-mb`` (default 1 GiB) moved ``--repeat`` times each
  way, TCP and RDMA interleaved, each into (or out of) one preallocated
  buffer: TCP ``recv_into`` / ``sendall`` on one connection made beforehand;
  RDMA ``rdma.read_into`` / ``rdma.write`` on one client connected
  beforehand, with the default ``chunk_size`` / ``max_inflight`` and with the
  best pair of the sweep. The buffer's CRC32 is checked against the
  server's after the first read of each.
* **sweep** — ``rdma.read_into`` of ``--sweep-size-mb`` for every pair of
  ``--chunks`` x ``--inflight``, a fresh client per pair, one warm-up read,
  then the median of ``--repeat``.

Throughput is bytes / wall time of the call, in GB/s (1e9 bytes). Numbers on
a shared machine are noisy: the load average at start is printed with them.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import struct
import threading
import time
import zlib
from typing import Any

from dataio import rdma

MiB = 1 << 20


def _size(text: str) -> int:
    text = text.strip().upper()
    for suffix, mult in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * mult)
    return int(text)


def _human(n: int) -> str:
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {suffix}"
    return f"{n} B"


# --- the server process ---------------------------------------------------


def _tcp_serve(listener: socket.socket, view: memoryview) -> None:
    """Each request: 17 bytes (op, offset, size); 'r' sends the range, 'w'
    receives into it and answers one byte."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        _tune(conn)
        with conn:
            while True:
                head = conn.recv(17, socket.MSG_WAITALL)
                if len(head) < 17:
                    break
                op, offset, size = struct.unpack("<cQQ", head)
                if op == b"r":
                    conn.sendall(view[offset : offset + size])
                else:
                    got = 0
                    while got < size:
                        n = conn.recv_into(view[offset + got : offset + size], size - got, socket.MSG_WAITALL)
                        if n == 0:
                            return
                        got += n
                    conn.sendall(b"k")


def _server(size: int, bind: str, provider: str | None, pipe: Any) -> None:
    server = rdma.serve(f"{bind}:0", buffer_size=size, provider=provider)
    view = memoryview(server)
    # Pseudo-random content, so compression or zero pages cannot flatter anyone.
    block = os.urandom(16 * MiB)
    for off in range(0, size, len(block)):
        n = min(len(block), size - off)
        view[off : off + n] = block[:n]
    listener = socket.create_server((bind, 0))
    threading.Thread(target=_tcp_serve, args=(listener, view), daemon=True).start()
    pipe.send({"rdma": server.local_addr, "tcp": listener.getsockname()[1], "provider": server.provider, "crc": zlib.crc32(view)})
    while True:
        msg = pipe.recv()
        if msg == "crc":
            pipe.send(zlib.crc32(view))
        else:
            break
    listener.close()
    view.release()
    server.close()


# --- the client ---------------------------------------------------------


def _tune(sock: socket.socket) -> None:
    # Larger SO_SNDBUF/SO_RCVBUF (4-16 MiB) measured no faster on loopback.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class TcpPeer:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        _tune(self.sock)

    def read_into(self, buf: memoryview, offset: int = 0) -> None:
        n = len(buf)
        self.sock.sendall(struct.pack("<cQQ", b"r", offset, n))
        got = 0
        while got < n:
            # MSG_WAITALL: the kernel fills the whole range in one call.
            k = self.sock.recv_into(buf[got:], n - got, socket.MSG_WAITALL)
            if k == 0:
                raise ConnectionError("the server closed the socket")
            got += k

    def write(self, buf: memoryview, offset: int = 0) -> None:
        self.sock.sendall(struct.pack("<cQQ", b"w", offset, len(buf)))
        self.sock.sendall(buf)
        if self.sock.recv(1, socket.MSG_WAITALL) != b"k":
            raise ConnectionError("the server did not acknowledge the write")

    def close(self) -> None:
        self.sock.close()


def _timed(fn: Any, nbytes: int) -> float:
    t = time.perf_counter()
    fn()
    return nbytes / (time.perf_counter() - t) / 1e9


def _stats(xs: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(xs), "best": max(xs), "runs": xs}


def sweep(addr: str, provider: str | None, size: int, chunks: list[int], inflights: list[int], repeat: int) -> dict[tuple[int, int], float]:
    buf = bytearray(size)
    out: dict[tuple[int, int], float] = {}
    for chunk in chunks:
        for inflight in inflights:
            with rdma.connect(addr, provider=provider, chunk_size=chunk, max_inflight=inflight, timeout=60) as client:
                rdma.read_into(client, memoryview(buf)[: min(size, 64 * MiB)])
                runs = [_timed(lambda: rdma.read_into(client, buf), size) for _ in range(repeat)]
            out[(chunk, inflight)] = statistics.median(runs)
            print(f"  sweep chunk_size={_human(chunk):>8} max_inflight={inflight:>3}: {out[(chunk, inflight)]:.2f} GB/s", flush=True)
    return out


def headline(info: dict[str, Any], provider: str | None, bind: str, size: int, repeat: int, configs: dict[str, tuple[int, int]], pipe: Any) -> dict[str, Any]:
    buf = bytearray(size)
    view = memoryview(buf)
    tcp = TcpPeer(bind, info["tcp"])
    clients = {name: rdma.connect(info["rdma"], provider=provider, chunk_size=c, max_inflight=i, timeout=60) for name, (c, i) in configs.items()}
    # Correctness first: each path's read lands the server's bytes.
    tcp.read_into(view)
    assert zlib.crc32(buf) == info["crc"], "TCP read: CRC mismatch"
    for name, client in clients.items():
        ctypes.memset((ctypes.c_char * size).from_buffer(buf), 0, size)
        rdma.read_into(client, buf)
        assert zlib.crc32(buf) == info["crc"], f"RDMA read ({name}): CRC mismatch"
    results: dict[str, dict[str, list[float]]] = {"tcp socket": {"read": [], "write": []}}
    results.update({f"rdma {name}": {"read": [], "write": []} for name in clients})
    for _ in range(repeat):
        results["tcp socket"]["read"].append(_timed(lambda: tcp.read_into(view), size))
        for name, client in clients.items():
            results[f"rdma {name}"]["read"].append(_timed(lambda c=client: rdma.read_into(c, buf), size))
        results["tcp socket"]["write"].append(_timed(lambda: tcp.write(view), size))
        for name, client in clients.items():
            results[f"rdma {name}"]["write"].append(_timed(lambda c=client: rdma.write(c, 0, buf), size))
    # The writes landed too (the same bytes went back).
    pipe.send("crc")
    assert pipe.recv() == info["crc"], "after the writes: CRC mismatch"
    tcp.close()
    for client in clients.values():
        client.close()
    return {name: {op: _stats(xs) for op, xs in ops.items()} for name, ops in results.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--sweep-size-mb", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunks", default="64K,256K,1M,4M,16M")
    ap.add_argument("--inflight", default="1,2,4,8,16,32")
    ap.add_argument("--provider", default="tcp;ofi_rxm")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    size, sweep_size = args.size_mb * MiB, args.sweep_size_mb * MiB
    chunks = [_size(c) for c in args.chunks.split(",")]
    inflights = [int(i) for i in args.inflight.split(",")]

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_server, args=(max(size, sweep_size), args.bind, args.provider, child))
    proc.start()
    info = parent.recv()
    load = os.getloadavg()
    print(f"server pid {proc.pid}: rdma {info['rdma']} ({info['provider']}), tcp port {info['tcp']}; "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f}; DATAIO_RDMA_SPIN_US={os.environ.get('DATAIO_RDMA_SPIN_US', '0 (default)')}", flush=True)
    try:
        print(f"sweep: rdma.read_into of {_human(sweep_size)}, median of {args.repeat}", flush=True)
        grid = sweep(info["rdma"], args.provider, sweep_size, chunks, inflights, args.repeat)
        best = max(grid, key=lambda k: grid[k])
        configs = {"default": (rdma.DEFAULT_CHUNK_SIZE, rdma.DEFAULT_MAX_INFLIGHT), "best-of-sweep": best}
        print(f"headline: {_human(size)} each way, {args.repeat} runs, interleaved", flush=True)
        head = headline(info, args.provider, args.bind, size, args.repeat, configs, parent)
    finally:
        parent.send("stop")
        proc.join(timeout=60)

    tcp_read = head["tcp socket"]["read"]["median"]
    tcp_write = head["tcp socket"]["write"]["median"]
    lines = [
        "| path | settings | read GB/s (median / best) | vs TCP | write GB/s (median / best) | vs TCP |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, ops in head.items():
        if name == "tcp socket":
            settings = "recv_into / sendall, one connection"
        else:
            c, i = configs[name.removeprefix("rdma ")]
            settings = f"chunk_size={_human(c)}, max_inflight={i}"
        r, w = ops["read"], ops["write"]
        lines.append(
            f"| {name} | {settings} | {r['median']:.2f} / {r['best']:.2f} | {r['median'] / tcp_read:.0%} "
            f"| {w['median']:.2f} / {w['best']:.2f} | {w['median'] / tcp_write:.0%} |"
        )
    lines += ["", f"sweep (rdma.read_into of {_human(sweep_size)}, GB/s, median of {args.repeat}):", ""]
    lines.append("| chunk_size \\ max_inflight | " + " | ".join(str(i) for i in inflights) + " |")
    lines.append("| --- |" + " --- |" * len(inflights))
    for c in chunks:
        lines.append(f"| {_human(c)} | " + " | ".join(f"{grid[(c, i)]:.2f}" for i in inflights) + " |")
    print("\n" + "\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "host": {"cpus": os.cpu_count(), "load_average": load, "platform": platform.platform()},
                    "provider": info["provider"],
                    "size": size,
                    "sweep_size": sweep_size,
                    "headline": head,
                    "configs": {k: list(v) for k, v in configs.items()},
                    "sweep": [{"chunk_size": c, "max_inflight": i, "gbps": v} for (c, i), v in grid.items()],
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
