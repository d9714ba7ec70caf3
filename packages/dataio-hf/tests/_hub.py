"""A small local server that speaks the parts of the Hugging Face Hub API
that hf:// uses, as the Hub documents them: resolve URLs (HEAD/GET with
ranges, ``X-Repo-Commit`` / ``X-Linked-*`` headers, ``X-Error-Code`` on 404),
the tree and paths-info APIs, repo info, and commits (preupload answers
``regular`` for every file, so content travels base64 in the NDJSON commit).
No Xet headers: it does not speak Xet. Repos are created with
:meth:`FakeHub.add_repo`; an optional token is required when set."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import threading
import urllib.parse
from typing import Any

TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}


class FakeHub:
    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.repos: dict[tuple[str, str], dict[str, dict[str, bytes]]] = {}
        self.commits = 0
        self.requests: list[str] = []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _json(self, obj: Any, status: int = 200) -> None:
                self._send(status, json.dumps(obj).encode(), {"Content-Type": "application/json"})

            def _error(self, status: int, code: str, message: str) -> None:
                self._send(status, json.dumps({"error": message}).encode(),
                           {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message})

            def _authorized(self) -> bool:
                if hub.token is None:
                    return True
                return self.headers.get("Authorization") == f"Bearer {hub.token}"

            def _files(self, rtype: str, repo: str, rev: str) -> dict[str, bytes] | None:
                revs = hub.repos.get((rtype, repo))
                if revs is None:
                    self._error(404, "RepoNotFound", "Repository not found")
                    return None
                files = revs.get(rev)
                if files is None:
                    self._error(404, "RevisionNotFound", "Invalid rev id")
                    return None
                return files

            def _body(self) -> bytes:
                return self._request_body

            def _handle(self) -> None:
                # Read the body first: an error answered before reading it
                # would leave it in the kept-alive connection.
                self._request_body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.requests.append(f"{self.command} {self.path}")
                url = urllib.parse.urlsplit(self.path)
                path = urllib.parse.unquote(url.path)
                query = urllib.parse.parse_qs(url.query)
                if not self._authorized():
                    return self._error(401, "RepoNotFound", "Invalid credentials in Authorization header")
                m = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)(?:/(tree|paths-info|preupload|commit|revision)/(.*))?", path)
                if m:
                    return self._api(TYPES[m.group(1)], m.group(2), m.group(3), m.group(4) or "", query)
                m = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/(.+)", path)
                if m and self.command in ("GET", "HEAD"):
                    rtype = TYPES[m.group(1)] if m.group(1) else "model"
                    return self._resolve(rtype, m.group(2), m.group(3))
                self._error(404, "EntryNotFound", f"no route {path}")

            def _split_rev(self, rtype: str, repo: str, rest: str) -> tuple[str, str]:
                revs = hub.repos.get((rtype, repo), {})
                for rev in sorted(revs, key=len, reverse=True):
                    if rest == rev or rest.startswith(rev + "/"):
                        return rev, rest[len(rev) + 1 :]
                rev, _, inner = rest.partition("/")
                return rev, inner

            def _resolve(self, rtype: str, repo: str, rest: str) -> None:
                rev, fpath = self._split_rev(rtype, repo, rest)
                files = self._files(rtype, repo, rev)
                if files is None:
                    return
                if fpath not in files:
                    return self._error(404, "EntryNotFound", "Entry not found")
                data = files[fpath]
                etag = hashlib.sha1(data).hexdigest()
                headers = {"ETag": f'"{etag}"', "X-Repo-Commit": "c0ffee" * 6 + "c0ff", "X-Linked-Etag": f'"{etag}"',
                           "X-Linked-Size": str(len(data)), "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
                rng = self.headers.get("Range")
                if rng and self.command == "GET":
                    start_s, _, end_s = rng.removeprefix("bytes=").partition("-")
                    start = int(start_s)
                    end = min(int(end_s) if end_s else len(data) - 1, len(data) - 1)
                    if start >= len(data):
                        return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                    headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                    return self._send(206, data[start : end + 1], headers)
                if self.command == "HEAD":
                    self.send_response(200)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    return
                self._send(200, data, headers)

            def _entries(self, files: dict[str, bytes], base: str, recursive: bool) -> list[dict[str, Any]] | None:
                prefix = f"{base}/" if base else ""
                if base and base in files:
                    return None
                out: dict[str, dict[str, Any]] = {}
                for name, data in sorted(files.items()):
                    if not name.startswith(prefix):
                        continue
                    rest = name[len(prefix) :].split("/")
                    for depth in range(1, len(rest)):
                        folder = prefix + "/".join(rest[:depth])
                        if recursive or depth == 1:
                            out.setdefault(folder, {"type": "directory", "oid": "0" * 40, "path": folder})
                        if not recursive:
                            break
                    if recursive or len(rest) == 1:
                        out[name] = {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": name}
                if base and not out:
                    return []
                return list(out.values())

            def _api(self, rtype: str, repo: str, op: str | None, rest: str, query: dict[str, list[str]]) -> None:
                if op is None or op == "revision":
                    rev = rest or "main"
                    if self._files(rtype, repo, rev) is None:
                        return
                    return self._json({"id": repo, "sha": "c0ffee" * 6 + "c0ff", "siblings": [], "private": False})
                rev, inner = (self._split_rev(rtype, repo, rest) if op == "tree" else (urllib.parse.unquote(rest), ""))
                files = self._files(rtype, repo, rev)
                if files is None:
                    return
                if op == "tree":
                    recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
                    entries = self._entries(files, inner.strip("/"), recursive)
                    if entries is None or (inner.strip("/") and not entries):
                        return self._error(404, "EntryNotFound", "Entry not found")
                    return self._json(entries)
                body = self._body()
                if op == "paths-info":
                    form = urllib.parse.parse_qs(body.decode())
                    paths = form.get("paths", [])
                    if not paths and body.startswith(b"{"):
                        paths = json.loads(body).get("paths", [])
                    found = []
                    for p in paths:
                        p = p.strip("/")
                        if p in files:
                            data = files[p]
                            found.append({"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": p})
                        elif any(n.startswith(p + "/") for n in files):
                            found.append({"type": "directory", "oid": "0" * 40, "path": p})
                    return self._json(found)
                if op == "preupload":
                    wanted = json.loads(body).get("files", [])
                    return self._json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in wanted]})
                if op == "commit":
                    staged = dict(files)
                    for line in body.decode().splitlines():
                        if not line.strip():
                            continue
                        item = json.loads(line)
                        value = item.get("value", {})
                        if item.get("key") == "file":
                            staged[value["path"]] = base64.b64decode(value["content"])
                        elif item.get("key") == "deletedFile":
                            if value["path"] not in staged:
                                return self._error(404, "EntryNotFound", f"{value['path']} does not exist")
                            del staged[value["path"]]
                        elif item.get("key") == "lfsFile":
                            return self._error(400, "BadRequest", "this test server takes regular files only")
                    files.clear()
                    files.update(staged)
                    hub.commits += 1
                    oid = hashlib.sha1(str(hub.commits).encode()).hexdigest()
                    return self._json({"commitUrl": f"{hub.endpoint}/{repo}/commit/{oid}", "commitOid": oid, "pullRequestUrl": None})
                self._error(404, "EntryNotFound", f"no api {op}")

            do_GET = do_HEAD = do_POST = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add_repo(self, repo_type: str, repo_id: str, files: dict[str, bytes] | None = None, revisions: tuple[str, ...] = ("main",)) -> None:
        self.repos[(repo_type, repo_id)] = {rev: dict(files or {}) for rev in revisions}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
