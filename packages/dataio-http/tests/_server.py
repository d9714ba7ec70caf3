"""The HTTP(S) servers the dataio-http tests start on 127.0.0.1: files with
`Range`, `ETag` and `Last-Modified`, and faults on demand (the path's first
segment names one): `/503/...` answers 503 with `Retry-After: 1` the first
time, `/429/...` likewise, `/cut/...` cuts the body once, `/alwayscut/...`
always, `/slow/...` sends the body after a pause, `/stall/...` sends half the body
and then nothing for `STALL_SECONDS` (a server that hangs mid-body; the
handler gives up by itself), `/loop/...` redirects to
itself, `/tolocal/...` redirects to 127.0.0.1, `/noai/...` sends
`X-Robots-Tag: noai`, `/norange/...` ignores `Range`."""

from __future__ import annotations

import email.utils
import hashlib
import http.server
import os
import ssl
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

FAULTS = ("503", "429", "cut", "alwayscut", "slow", "stall", "loop", "tolocal", "noai", "norange")
STALL_SECONDS = 2.0


class Server:
    def __init__(self, root: Path, *, tls: ssl.SSLContext | None = None) -> None:
        self.root = root
        self.requests: Counter[str] = Counter()  # "METHOD /path" -> count
        self.sent = 0  # body bytes
        self.seen: Counter[str] = Counter()  # fault path -> times hit
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                outer.requests[f"{self.command} {self.path}"] += 1
                parts = self.path.lstrip("/").split("/", 1)
                fault = parts[0] if parts[0] in FAULTS else None
                rel = parts[1] if fault and len(parts) > 1 else self.path.lstrip("/")
                if fault:
                    outer.seen[self.path] += 1
                first = outer.seen[self.path] == 1
                if fault in ("503", "429") and first:
                    return self._plain(int(fault), b"busy", {"Retry-After": "1"})
                if fault == "loop":
                    return self._plain(302, b"", {"Location": self.path})
                if fault == "tolocal":
                    return self._plain(302, b"", {"Location": f"http://127.0.0.1:{self.server.server_address[1]}/{rel}"})
                path = outer.root / rel
                if not path.is_file():
                    return self._plain(404, b"not found")
                data = path.read_bytes()
                st = path.stat()
                headers = {
                    "ETag": '"' + hashlib.md5(data).hexdigest() + '"',
                    "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
                    "Accept-Ranges": "bytes",
                }
                if fault == "noai":
                    headers["X-Robots-Tag"] = "noai"
                status, body = 200, data
                rng = self.headers.get("Range")
                if rng and fault != "norange":
                    a, b = rng.removeprefix("bytes=").split("-")
                    start, end = int(a), min(int(b), len(data) - 1)
                    if start >= len(data):
                        return self._plain(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                    status, body = 206, data[start : end + 1]
                    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if head:
                    return
                if fault == "slow":
                    time.sleep(0.3)
                if fault == "stall":
                    return self._stall(body)
                if (fault == "cut" and first) or fault == "alwayscut":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    outer.sent += len(body) // 2
                    return
                self.wfile.write(body)
                outer.sent += len(body)

            def _stall(self, body: bytes) -> None:
                try:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    time.sleep(STALL_SECONDS)
                    self.wfile.write(body[len(body) // 2 :])
                except OSError:
                    pass  # the client gave up first, as it should
                self.close_connection = True

            def _plain(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}/{path.lstrip('/')}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_files(root: Path) -> dict[str, bytes]:
    out = {}
    for name, size in (("a.bin", 10_000), ("b.bin", 3), ("big.bin", 300_000)):
        data = os.urandom(size)
        (root / name).write_bytes(data)
        out[name] = data
    return out
