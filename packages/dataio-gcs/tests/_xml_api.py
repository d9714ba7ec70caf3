"""A thin HTTP front for fake-gcs-server that completes the GCS XML API the
native client speaks.

fake-gcs-server serves XML-API reads and, on the public host, PUTs of
*signed* URLs; it has no XML multipart upload. This front adds exactly that,
as GCS documents it: a plain ``PUT /bucket/object`` is forwarded as a signed
PUT (the emulator checks no signature), and ``POST ?uploads`` / ``PUT
?partNumber&uploadId`` / ``POST ?uploadId`` / ``DELETE ?uploadId`` keep the
parts here until ``complete``, which stores the object with one PUT — so, as
on GCS, nothing is visible before completion. Everything else passes through
unchanged (except that a listing of a missing bucket answers 404
NoSuchBucket, as GCS does, where the emulator fails with a 5xx).

The emulator checks no credentials; with ``required_token`` set, the front
does, as GCS would: a request without ``Authorization: Bearer <that token>``
is answered 401 (the client must take that for refused credentials).
"""

from __future__ import annotations

import hashlib
import http.client
import http.server
import json
import re
import threading
import urllib.parse
import uuid
from typing import Any


class XmlApiFront:
    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.uploads: dict[str, dict[int, bytes]] = {}
        self.completed = 0
        self.required_token: str | None = None
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                headers = dict(headers or {})
                if self.command != "HEAD" or not any(k.lower() == "content-length" for k in headers):
                    headers = {k: v for k, v in headers.items() if k.lower() != "content-length"}
                    headers["Content-Length"] = str(len(body))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _forward(self, method: str, path: str, body: bytes | None) -> tuple[int, list[tuple[str, str]], bytes]:
                conn = http.client.HTTPConnection("127.0.0.1", front.upstream, timeout=60)
                headers = {
                    k: v for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", "connection", "transfer-encoding")
                }
                headers["Host"] = f"127.0.0.1:{front.upstream}"
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                return resp.status, resp.getheaders(), data

            def _signed_put(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
                status, _, data = self._forward("PUT", path + "?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=emulator", body)
                headers: dict[str, str] = {}
                if status == 200:
                    meta = json.loads(data)
                    headers = {"ETag": f'"{meta.get("etag", "")}"', "x-goog-generation": str(meta.get("generation", "1"))}
                    data = b""
                return status, headers, data

            def _handle(self) -> None:
                # The emulator routes on the raw path and trips over escapes
                # the client adds for unreserved characters ('-' as %2D).
                raw = urllib.parse.urlsplit(self.path)
                self.path = urllib.parse.urlunsplit(
                    ("", "", urllib.parse.quote(urllib.parse.unquote(raw.path), safe="/-._~!$&'()*+,;=:@"), raw.query, "")
                )
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
                xml_object = not url.path.startswith(("/storage/", "/upload/", "/download/", "/_internal/"))
                body = self._body() if self.command in ("PUT", "POST") else None
                if front.required_token is not None and self.headers.get("Authorization") != f"Bearer {front.required_token}":
                    error = b"<Error><Code>AuthenticationRequired</Code><Message>Invalid credentials.</Message></Error>"
                    return self._reply(401, error, {"Content-Type": "application/xml"})
                if xml_object and self.command == "POST" and "uploads" in query:
                    upload_id = uuid.uuid4().hex
                    front.uploads[upload_id] = {}
                    bucket, _, key = url.path.lstrip("/").partition("/")
                    xml = (f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{key}</Key>"
                           f"<UploadId>{upload_id}</UploadId></InitiateMultipartUploadResult>")
                    return self._reply(200, xml.encode(), {"Content-Type": "application/xml"})
                if xml_object and "uploadId" in query:
                    upload_id = query["uploadId"][0]
                    parts = front.uploads.get(upload_id)
                    if parts is None:
                        return self._reply(404, b"<Error><Code>NoSuchUpload</Code></Error>")
                    if self.command == "PUT":
                        parts[int(query["partNumber"][0])] = body or b""
                        etag = hashlib.md5(body or b"").hexdigest()
                        return self._reply(200, b"", {"ETag": f'"{etag}"'})
                    if self.command == "DELETE":
                        del front.uploads[upload_id]
                        return self._reply(204)
                    if self.command == "POST":
                        numbers = [int(n) for n in re.findall(rb"<PartNumber>(\d+)</PartNumber>", body or b"")]
                        data = b"".join(parts[n] for n in numbers)
                        status, headers, out = self._signed_put(url.path, data)
                        if status != 200:
                            return self._reply(status, out)
                        del front.uploads[upload_id]
                        front.completed += 1
                        bucket, _, key = url.path.lstrip("/").partition("/")
                        xml = (f"<CompleteMultipartUploadResult><Location>{url.path}</Location><Bucket>{bucket}</Bucket>"
                               f"<Key>{key}</Key><ETag>{headers['ETag']}</ETag></CompleteMultipartUploadResult>")
                        return self._reply(200, xml.encode(), {"Content-Type": "application/xml"})
                if xml_object and self.command == "PUT" and not url.query:
                    status, headers, out = self._signed_put(url.path, body or b"")
                    return self._reply(status, out, headers)
                status, headers, out = self._forward(self.command, self.path, body)
                bucket_only = xml_object and "/" not in url.path.strip("/")
                if bucket_only and status >= 500:
                    # The emulator fails an XML listing of a missing bucket
                    # with a 5xx; GCS answers 404 NoSuchBucket.
                    bucket = urllib.parse.quote(url.path.strip("/"))
                    if self._forward("GET", f"/storage/v1/b/{bucket}", None)[0] == 404:
                        return self._reply(404, b"<Error><Code>NoSuchBucket</Code></Error>", {"Content-Type": "application/xml"})
                skip = {"transfer-encoding", "connection"}
                self._reply(status, out, {k: v for k, v in headers if k.lower() not in skip})

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
