"""nginx as a fast local S3 front for the read benchmarks.

moto's server answers a few hundred GETs per second on a small machine,
which hides the client; nginx serving the objects as files (a folder laid
out ``bucket/key``) answers path-style S3 GETs, ranged GETs and HEADs fast
enough to show it (it does not check signatures). Used by the matrix's
``s3`` workload and by ``benchmarks/s3_reads.py``.
"""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["Nginx", "NginxUnavailable", "free_port", "nginx_binary"]


class NginxUnavailable(RuntimeError):
    """nginx is not installed or did not start."""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)


NGINX_CONF = """\
worker_processes {workers};
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{
    worker_connections 4096;
    multi_accept on;
}}
http {{
    access_log {access_log};
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    types {{ }}
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    open_file_cache max=10000 inactive=60s;
    server {{
        listen 127.0.0.1:{port} backlog=4096 reuseport;
        root {root};
        location / {{ }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx as a child process, serving ``root`` (``bucket/key`` files) on
    127.0.0.1; path-style S3 GETs, ranged GETs and HEADs map onto the files."""

    def __init__(self, root: Path, workers: int, access_log: bool) -> None:
        binary = nginx_binary()
        if binary is None:
            raise NginxUnavailable("nginx is not installed: apt-get install -y nginx (Debian's package; the benchmark starts it itself)")
        self.tmp = Path(tempfile.mkdtemp(prefix="dataio-nginx-"))
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.access_path = self.tmp / "access.log" if access_log else None
        conf = self.tmp / "nginx.conf"
        conf.write_text(NGINX_CONF.format(
            workers=workers, tmp=self.tmp, port=self.port, root=root,
            user="user root;" if os.geteuid() == 0 else "",
            access_log=f"{self.access_path} combined buffer=256k flush=100ms" if access_log else "off",
        ))
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.tmp), "-e", str(self.tmp / "error.log"), "-c", str(conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise NginxUnavailable(f"nginx exited at start ({self.proc.returncode}): {err[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.endpoint}/", timeout=0.5).read()
                break
            except urllib.error.HTTPError:
                break  # it answers (403/404 for the root): up
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise NginxUnavailable("nginx did not come up within 20 s") from None
                time.sleep(0.05)

    def cpu_seconds(self) -> float:
        """CPU time of the nginx master and workers so far (Linux /proc)."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in [self.proc.pid, *self._workers()]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick

    def _workers(self) -> list[int]:
        try:
            return [int(p) for p in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()]
        except OSError:
            return []

    def requests(self) -> collections.Counter[str]:
        """Requests logged so far, by method."""
        if self.access_path is None:
            return collections.Counter()
        time.sleep(0.25)  # the log buffer flushes every 100 ms
        counts: collections.Counter[str] = collections.Counter()
        if self.access_path.exists():
            with open(self.access_path, errors="replace") as f:
                for line in f:
                    parts = line.split('"')
                    if len(parts) > 2:
                        status = parts[2].split()[0] if parts[2].split() else "?"
                        counts[parts[1].split(" ", 1)[0] + ("" if status in ("200", "206") else f" {status}")] += 1
        return counts

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
