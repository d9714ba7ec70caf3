"""The shard cache serves hits without asking the store, under names anyone
can compute: a cache directory another local user can write is refused with
an error that names it, its owner and mode, and says how to fix it."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

import dataio
from dataio.errors import AccessDeniedError

PIPE = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(4))


def tar_bytes(n: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(n):
            data = str(100 + i).encode()
            info = tarfile.TarInfo(f"s{i:03d}.x")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_world_writable_cache_dir_is_refused_naming_it(tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "dataio"))
    # mem:// (the test plugin) is a remote store: its shards go through the cache.
    uri = f"mem://perm-{unique}/train-0000.tar"
    dataio.write(uri, tar_bytes(10))
    shared = tmp_path / "scratch"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(AccessDeniedError) as info:
        dataio.tar_records(uri, cache_dir=shared, cache_bytes=1 << 20)
    assert isinstance(info.value, PermissionError)
    msg = str(info.value)
    for part in (str(shared), f"owned by uid {os.geteuid()}", "mode 0777", f"chmod 700 {shared}"):
        assert part in msg, (part, msg)

    # Fixed as the message says, the same pipeline reads through the cache.
    shared.chmod(0o700)
    records = dataio.tar_records(uri, cache_dir=shared, cache_bytes=1 << 20)
    with PIPE.bind(records).run("numpy") as loader:
        got = sorted(bytes(v).decode() for b in loader for v in b["x"])
    assert got == [str(100 + i) for i in range(10)]
    (entry,) = (shared / "data").iterdir()
    assert entry.stat().st_mode & 0o077 == 0

    # An entry others could have rewritten is not served.
    entry.chmod(0o666)
    records = dataio.tar_records(uri, cache_dir=shared, cache_bytes=1 << 20)
    with pytest.raises(AccessDeniedError, match=rf"{entry}.*mode 0666.*chmod 600"):
        with PIPE.bind(records).run("numpy") as loader:
            list(loader)
