"""nginx as the dataio-http tests' real web server: started by the test
user (no root, no system paths: config, pid, logs and temp folders all in
one tmp folder), on 127.0.0.1 only, plain HTTP on one port and HTTPS (with
HTTP/2 where this nginx has it) on another, serving one folder. Its access
log records each request's method, URI, status, body bytes, protocol and
Range header, so that the tests can count what went over the wire."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"  # Debian puts it in /usr/sbin, off a user's PATH

CONF = """\
daemon off;
master_process on;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 256; }}
http {{
    log_format wire '$request_method $uri $status $body_bytes_sent $server_protocol "$http_range"';
    access_log {tmp}/access.log wire;
    default_type application/octet-stream;
    types {{ }}
    sendfile on;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{http_port};
        listen 127.0.0.1:{https_port} ssl{listen_h2};
        {http2_on}
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
        location / {{ }}
    }}
}}
"""


@dataclass(frozen=True)
class Hit:
    """One line of the access log."""

    method: str
    uri: str
    status: int
    body_bytes: int
    protocol: str
    range: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def version() -> tuple[int, ...]:
    out = subprocess.run([NGINX, "-v"], capture_output=True, text=True, check=True).stderr
    m = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def has_http2() -> bool:
    return "--with-http_v2_module" in subprocess.run([NGINX, "-V"], capture_output=True, text=True, check=True).stderr


class Nginx:
    def __init__(self, root: Path, tmp: Path, cert: Path, key: Path) -> None:
        self.tmp = tmp
        self.http_port, self.https_port = free_port(), free_port()
        h2 = has_http2()
        new_syntax = version() >= (1, 25, 1)  # `http2 on;` replaced `listen ... http2` in 1.25.1
        conf = tmp / "nginx.conf"
        conf.write_text(CONF.format(
            tmp=tmp, root=root, cert=cert, key=key, http_port=self.http_port, https_port=self.https_port,
            listen_h2=" http2" if h2 and not new_syntax else "",
            http2_on="http2 on;" if h2 and new_syntax else "",
            # As root (a CI container) the workers would switch to nobody,
            # who cannot read pytest's private tmp folders.
            user="user root;" if os.geteuid() == 0 else "",
        ))
        self.http2 = h2
        self.proc = subprocess.Popen([NGINX, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_up()

    def _wait_up(self) -> None:
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                log = (self.tmp / "error.log").read_text(errors="replace") if (self.tmp / "error.log").exists() else ""
                raise RuntimeError(f"nginx exited at start ({self.proc.returncode}): {err[-2000:]} {log[-2000:]}")
            try:
                for port in (self.http_port, self.https_port):
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("nginx did not come up within 20 s") from None
                time.sleep(0.05)

    def url(self, path: str, *, tls: bool, host: str = "127.0.0.1") -> str:
        scheme, port = ("https", self.https_port) if tls else ("http", self.http_port)
        return f"{scheme}://{host}:{port}/{path.lstrip('/')}"

    def hits(self) -> list[Hit]:
        """Every request so far (nginx writes a line when it finishes one)."""
        path = self.tmp / "access.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            head, _, rng = line.partition(' "')
            method, uri, status, sent, proto = head.split(" ")
            rng = rng.removesuffix('"')
            out.append(Hit(method, uri, int(status), int(sent), proto, "" if rng == "-" else rng))
        return out

    def mark(self) -> int:
        return len(self.hits())

    def since(self, mark: int) -> Iterator[Hit]:
        """The requests after ``mark``, once the log has settled: nginx logs
        a request after its last byte went out, which may be just after the
        client has it."""
        hits, deadline = self.hits(), time.monotonic() + 3
        while time.monotonic() < deadline:
            time.sleep(0.15)
            now = self.hits()
            if len(now) == len(hits) and len(now) > mark:
                break
            hits = now
        return iter(hits[mark:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
