"""The hf:// backend: the methods of ``dataio.hookspecs.PythonBackend`` over
``huggingface_hub``.

Reads are ranged GETs of the Hub's resolve URLs (retried with backoff on 429
and 5xx by huggingface_hub's ``http_backoff``), listings come from the tree
API, ``head`` from paths-info, and each committed write or delete is one Hub
commit — atomic, so nothing is visible before ``commit()``.
"""

from __future__ import annotations

import dataclasses
import tempfile
import urllib.parse
from collections.abc import Iterator
from typing import Any

from dataio.errors import (
    AccessDeniedError,
    InvalidURIError,
    NotFoundError,
    StorageError,
)

REPO_TYPES = {"datasets": "dataset", "spaces": "space", "models": "model"}
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}


@dataclasses.dataclass(frozen=True)
class HfPath:
    repo_type: str
    repo_id: str
    revision: str | None
    path: str  # inside the repo, no leading or trailing '/'

    def uri(self, path: str | None = None) -> str:
        rev = f"@{urllib.parse.quote(self.revision, safe='')}" if self.revision else ""
        inner = self.path if path is None else path
        return f"hf://{URL_PREFIX[self.repo_type]}{self.repo_id}{rev}/{inner}"


def parse(uri: str) -> HfPath:
    """``hf://[datasets/|spaces/|models/]org/name[@revision][/path]``."""
    if not uri.lower().startswith("hf://"):
        raise InvalidURIError(f"not an hf:// URI: {uri!r}")
    parts = uri[5:].split("/")
    repo_type = "model"
    if parts and parts[0] in REPO_TYPES:
        repo_type = REPO_TYPES[parts.pop(0)]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise InvalidURIError(f"{uri!r}: expected hf://[datasets/|spaces/]org/name[@revision]/path")
    org, name, rest = parts[0], parts[1], parts[2:]
    revision = None
    if "@" in name:
        name, revision = name.split("@", 1)
        revision = urllib.parse.unquote(revision)
        # refs/pr/N and refs/convert/parquet contain slashes.
        if revision == "refs" and len(rest) >= 2:
            revision = "/".join(["refs", rest[0], rest[1]])
            rest = rest[2:]
        if not revision:
            raise InvalidURIError(f"{uri!r}: empty revision after '@'")
    return HfPath(repo_type, f"{org}/{name}", revision, "/".join(rest).strip("/"))


def _raise_mapped(exc: Exception, uri: str) -> None:
    """Re-raises a huggingface_hub error as the dataio class a caller expects."""
    from huggingface_hub import errors

    where = f"{uri}"
    if isinstance(exc, errors.GatedRepoError):
        raise AccessDeniedError(f"{where}: the repository is gated; accept its terms and use a token") from None
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.RepositoryNotFoundError) and status == 401:
        # The Hub answers 401 for private repos as for missing ones.
        raise AccessDeniedError(f"{where}: no such repository, or no access with these credentials (HTTP 401)") from None
    if isinstance(exc, errors.RepositoryNotFoundError):
        raise NotFoundError(f"{where}: no such repository (or no access to it)") from None
    if isinstance(exc, errors.RevisionNotFoundError):
        raise NotFoundError(f"{where}: no such revision") from None
    if isinstance(exc, errors.EntryNotFoundError):
        raise NotFoundError(f"{where}: no such file in the repository") from None
    if isinstance(exc, errors.HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403):
            raise AccessDeniedError(f"{where}: access denied (HTTP {status})") from None
        if status == 404:
            raise NotFoundError(f"{where}: not found") from None
        if status == 416:
            raise ValueError(f"{where}: byte range not satisfiable") from None
        raise StorageError(f"{where}: the Hub answered HTTP {status}") from None
    if isinstance(exc, OSError):
        raise StorageError(f"{where}: {type(exc).__name__}: {exc}") from None
    raise exc


class HfWriter:
    """Spools the bytes to a temporary file; ``commit()`` uploads them as one Hub commit."""

    def __init__(self, backend: HfBackend, target: HfPath, uri: str) -> None:
        self._backend, self._target, self._uri = backend, target, uri
        self._spool = tempfile.TemporaryFile()  # huggingface_hub wants a real binary file

    def write(self, data: bytes) -> None:
        self._spool.write(data)

    def commit(self) -> str:
        self._spool.seek(0)
        t = self._target
        try:
            info = self._backend.api.upload_file(
                path_or_fileobj=self._spool, path_in_repo=t.path, repo_id=t.repo_id, repo_type=t.repo_type,
                revision=t.revision, commit_message=f"dataio: write {t.path}",
            )
        except Exception as exc:  # noqa: BLE001 - mapped below
            _raise_mapped(exc, self._uri)
        finally:
            self._spool.close()
        return str(getattr(info, "oid", "") or "")

    def abort(self) -> None:
        self._spool.close()


class HfBackend:
    name = "dataio-hf"
    capabilities = ("write", "delete", "list", "ranged_read")

    def __init__(self, endpoint: str | None, token: str | bool | None) -> None:
        from huggingface_hub import HfApi, constants

        self.endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
        self._token = token
        self.api = HfApi(endpoint=self.endpoint, token=token)

    def __repr__(self) -> str:
        return f"<dataio-hf backend {self.endpoint}>"

    def __reduce__(self) -> Any:
        raise TypeError("the hf:// backend holds a token and cannot be pickled")

    # -- helpers ------------------------------------------------------------

    def _target(self, uri: str, *, need_path: bool = True) -> HfPath:
        t = parse(uri)
        if need_path and not t.path:
            raise IsADirectoryError(f"{uri}: names a repository, not a file")
        return t

    def _url(self, t: HfPath) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(t.repo_id, t.path, repo_type=t.repo_type, revision=t.revision, endpoint=self.endpoint)

    def _get(self, uri: str, headers: dict[str, str]) -> bytes:
        from huggingface_hub.utils import (
            build_hf_headers,
            hf_raise_for_status,
            http_backoff,
        )

        t = self._target(uri)
        try:
            resp = http_backoff(
                "GET", self._url(t), headers={**build_hf_headers(token=self._token), **headers}, follow_redirects=True
            )
            hf_raise_for_status(resp)
        except Exception as exc:  # noqa: BLE001 - mapped below
            _raise_mapped(exc, uri)
        return resp.content

    def _meta(self, t: HfPath, entry: Any) -> dict[str, Any]:
        from huggingface_hub.hf_api import RepoFolder

        if isinstance(entry, RepoFolder):
            return {"uri": t.uri(entry.path), "size": 0, "is_dir": True}
        lfs = getattr(entry, "lfs", None)
        etag = (lfs.sha256 if lfs is not None else None) or getattr(entry, "blob_id", None)
        return {"uri": t.uri(entry.path), "size": int(entry.size), "etag": etag, "is_dir": False}

    # -- the backend protocol -----------------------------------------------

    def head(self, uri: str) -> dict[str, Any]:
        t = self._target(uri, need_path=False)
        if not t.path:
            try:
                self.api.repo_info(t.repo_id, repo_type=t.repo_type, revision=t.revision)
            except Exception as exc:  # noqa: BLE001
                _raise_mapped(exc, uri)
            return {"uri": uri, "size": 0, "is_dir": True}
        try:
            found = self.api.get_paths_info(t.repo_id, [t.path], repo_type=t.repo_type, revision=t.revision)
        except Exception as exc:  # noqa: BLE001
            _raise_mapped(exc, uri)
        if not found:
            raise NotFoundError(f"{uri}: no such file in {t.repo_type} {t.repo_id}")
        return self._meta(t, found[0])

    def read_range(self, uri: str, offset: int, size: int) -> bytes:
        if size == 0:
            meta = self.head(uri)
            if offset > meta["size"]:
                raise ValueError(f"{uri}: offset {offset} lies beyond the end ({meta['size']} bytes)")
            return b""
        data = self._get(uri, {"Range": f"bytes={offset}-{offset + size - 1}"})
        if len(data) != size:
            raise ValueError(f"{uri}: byte range [{offset}, {offset + size}) lies beyond the end of the file")
        return data

    def read_all(self, uri: str) -> bytes:
        return self._get(uri, {})

    def open_writer(self, uri: str) -> HfWriter:
        return HfWriter(self, self._target(uri), uri)

    def list(self, prefix: str, recursive: bool) -> Iterator[dict[str, Any]]:
        t = self._target(prefix, need_path=False)
        try:
            entries = list(
                self.api.list_repo_tree(
                    t.repo_id, path_in_repo=t.path or None, recursive=recursive, repo_type=t.repo_type, revision=t.revision
                )
            )
        except Exception as exc:  # noqa: BLE001
            _raise_mapped(exc, prefix)
        metas = [self._meta(t, e) for e in entries]
        if recursive:
            metas = [m for m in metas if not m["is_dir"]]
        return iter(sorted(metas, key=lambda m: m["uri"]))

    def exists(self, uri: str) -> bool:
        try:
            self.head(uri)
        except FileNotFoundError:
            return False
        return True

    def delete(self, uri: str) -> None:
        t = self._target(uri)
        if self.head(uri).get("is_dir"):
            raise IsADirectoryError(f"{uri}: is a folder")
        try:
            self.api.delete_file(t.path, t.repo_id, repo_type=t.repo_type, revision=t.revision, commit_message=f"dataio: delete {t.path}")
        except Exception as exc:  # noqa: BLE001
            _raise_mapped(exc, uri)
