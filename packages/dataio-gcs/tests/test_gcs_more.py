"""gs:// beyond the conformance suites (test_gcs_conformance.py): default
credentials that find none, multipart writes through the XML API, and a
server killed mid-write (and restarted on its stored state)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _xml_api import XmlApiFront
from conftest import FakeGcs, configure, unconfigure

import dataio

MiB = 1 << 20


def chunks(total: int, size: int = MiB) -> Iterator[bytes]:
    for i in range(total // size):
        yield bytes([i % 251]) * size


def test_default_credentials_without_any_is_permission_error(gcs: tuple[FakeGcs, str], monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    dataio.configure_credentials("gs", method="default")
    with pytest.raises((PermissionError, dataio.errors.DataioError)) as info:
        dataio.read(f"gs://{gcs[1]}/x")
    assert "missing.json" in str(info.value) or "credentials" in str(info.value).lower()


def test_a_large_streaming_write_uses_the_xml_multipart_api(gcs: tuple[FakeGcs, str]) -> None:
    server, bucket = gcs
    configure(server.front.endpoint, part_size=5 * MiB)
    uri = f"gs://{bucket}/{uuid.uuid4().hex}/big.bin"
    before = server.front.completed
    with dataio.writer(uri) as w:
        w.write_chunks(chunks(11 * MiB))
        assert not dataio.exists(uri)
    assert server.front.completed == before + 1
    assert dataio.read(uri) == b"".join(chunks(11 * MiB))


def test_the_server_killed_mid_write_leaves_no_object_after_restart(tmp_path: Path) -> None:
    server = FakeGcs(root=tmp_path / "gcs")
    server.start()
    front = XmlApiFront(server.port)
    bucket = "killed"
    server.create_bucket(bucket)
    configure(front.endpoint, part_size=5 * MiB)
    uri = f"gs://{bucket}/cut/object.bin"
    try:
        def source() -> Iterator[bytes]:
            for i, chunk in enumerate(chunks(40 * MiB)):
                if i == 8:
                    threading.Thread(target=lambda: (server.kill(), front.stop())).start()
                yield chunk

        with pytest.raises(dataio.errors.StorageError) as info:
            with dataio.writer(uri) as w:
                w.write_chunks(source())
        assert "cut/object.bin" in str(info.value)
        server.start()  # same port, same stored state
        assert server.object_names(bucket, "cut/") == []
        front = XmlApiFront(server.port)
        configure(front.endpoint)
        assert not dataio.exists(uri)
        dataio.write(uri, b"after restart")
        assert dataio.read(uri) == b"after restart"
    finally:
        front.stop()
        server.kill()
        unconfigure()
