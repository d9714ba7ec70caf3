"""A pure-Python ``mem://`` backend: objects live in a dict of this process."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator

__all__ = ["MemoryStore", "MemoryWriter", "STORE"]


class MemoryWriter:
    def __init__(self, store: MemoryStore, uri: str) -> None:
        self._store = store
        self._uri = uri
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._parts.append(bytes(data))

    def commit(self) -> str:
        data = b"".join(self._parts)
        self._store._put(self._uri, data)
        return hashlib.md5(data).hexdigest()

    def abort(self) -> None:
        self._parts.clear()


class MemoryStore:
    """Implements dataio's Python backend protocol (see dataio.hookspecs.PythonBackend)."""

    name = "dataio-memfs"
    capabilities = ("write", "delete", "list", "ranged_read")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, tuple[bytes, float]] = {}

    def _put(self, uri: str, data: bytes) -> None:
        with self._lock:
            self._objects[uri] = (data, time.time())

    def _get(self, uri: str) -> bytes:
        with self._lock:
            item = self._objects.get(uri)
        if item is None:
            if self._is_prefix(uri):
                raise IsADirectoryError(f"{uri} is a prefix, not an object")
            raise FileNotFoundError(f"no object {uri}")
        return item[0]

    def _is_prefix(self, uri: str) -> bool:
        prefix = uri.rstrip("/") + "/"
        with self._lock:
            return any(k.startswith(prefix) for k in self._objects)

    def head(self, uri: str) -> dict:
        with self._lock:
            item = self._objects.get(uri)
        if item is None:
            if self._is_prefix(uri):
                return {"uri": uri, "size": 0, "is_dir": True}
            raise FileNotFoundError(f"no object {uri}")
        data, mtime = item
        return {"uri": uri, "size": len(data), "mtime": mtime, "etag": hashlib.md5(data).hexdigest()}

    def read_range(self, uri: str, offset: int, size: int) -> bytes:
        data = self._get(uri)
        if offset + size > len(data):
            raise ValueError(f"range [{offset}, {offset + size}) beyond the end of {uri} ({len(data)} bytes)")
        return data[offset : offset + size]

    def read_all(self, uri: str) -> bytes:
        return self._get(uri)

    def open_writer(self, uri: str) -> MemoryWriter:
        if uri.endswith("/"):
            raise ValueError(f"{uri}: a write destination must name an object")
        return MemoryWriter(self, uri)

    def list(self, prefix: str, recursive: bool) -> Iterator[dict]:
        base = prefix if prefix.endswith("/") else prefix + "/"
        with self._lock:
            items = sorted(self._objects.items())
        if not any(k == prefix or k.startswith(base) for k, _ in items):
            raise FileNotFoundError(f"nothing under {prefix}")
        dirs: set[str] = set()
        for key, (data, mtime) in items:
            if key == prefix:
                yield {"uri": key, "size": len(data), "mtime": mtime}
                continue
            if not key.startswith(base):
                continue
            rest = key[len(base) :]
            if not recursive and "/" in rest:
                dirs.add(base + rest.split("/", 1)[0])
                continue
            yield {"uri": key, "size": len(data), "mtime": mtime}
        for d in sorted(dirs):
            yield {"uri": d, "size": 0, "is_dir": True}

    def exists(self, uri: str) -> bool:
        with self._lock:
            if uri in self._objects:
                return True
        return self._is_prefix(uri)

    def delete(self, uri: str) -> None:
        with self._lock:
            if uri not in self._objects:
                raise FileNotFoundError(f"no object {uri}")
            del self._objects[uri]


STORE = MemoryStore()
