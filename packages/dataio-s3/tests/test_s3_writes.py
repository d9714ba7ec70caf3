"""Streaming multipart writes: parts go up while the caller writes, nothing
is visible before commit, and a failure — in the caller's chunk source or on
the wire — leaves no object and no completed upload behind."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import CuttableProxy, S3Server, configure

import dataio

MiB = 1 << 20


def chunks(total: int, size: int = MiB, seed: int = 0) -> Iterator[bytes]:
    for i in range(total // size):
        yield bytes([(seed + i) % 251]) * size


def key_of(uri: str) -> str:
    return uri.split("/", 3)[3]


def uploads(s3: S3Server, prefix: str) -> list[dict]:
    return s3.client.list_multipart_uploads(Bucket=s3.bucket, Prefix=prefix).get("Uploads", [])


def test_a_large_streaming_write_is_a_multipart_upload(s3: S3Server) -> None:
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/big.bin"
    configure("s3", s3.endpoint, part_size=5 * MiB)
    with dataio.writer(uri) as w:
        w.write_chunks(chunks(12 * MiB))
        assert not dataio.exists(uri), "invisible until the block ends"
        assert len(uploads(s3, key_of(uri))) == 1, "parts already going up"
    assert w.bytes_written == 12 * MiB
    head = s3.client.head_object(Bucket=s3.bucket, Key=key_of(uri))
    assert head["ContentLength"] == 12 * MiB
    assert head["ETag"].strip('"').endswith("-3"), "three parts: 5 + 5 + 2 MiB"
    assert dataio.read(uri) == b"".join(chunks(12 * MiB))
    assert dataio.read(uri, offset=5 * MiB - 3, size=6) == bytes([4]) * 3 + bytes([5]) * 3
    assert uploads(s3, key_of(uri)) == []


def test_a_failing_source_aborts_the_multipart_upload(s3: S3Server) -> None:
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/aborted.bin"
    configure("s3", s3.endpoint, part_size=5 * MiB)

    def failing() -> Iterator[bytes]:
        yield from chunks(11 * MiB)
        raise RuntimeError("the source died")

    with pytest.raises(RuntimeError, match="the source died"):
        with dataio.writer(uri) as w:
            w.write_chunks(failing())
    assert w.bytes_written == 11 * MiB
    assert not dataio.exists(uri)
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=key_of(uri))
    assert uploads(s3, key_of(uri)) == [], "the upload was aborted, not left behind"


def test_the_server_dying_mid_write_leaves_no_object(s3: S3Server) -> None:
    """The client's connection to the store dies while parts are going up
    (a proxy in front of moto is cut, as if the server had been killed). The
    write fails with a storage error, the abort cannot reach the server
    either, and the store — checked behind the proxy — holds no object: the
    parts sit in an uncompleted upload, which S3 never shows."""
    proxy = CuttableProxy(s3.port)
    configure("s3", f"http://127.0.0.1:{proxy.port}", part_size=5 * MiB)
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/cut.bin"
    cut_at = 8 * MiB

    def source() -> Iterator[bytes]:
        sent = 0
        for chunk in chunks(40 * MiB):
            if sent >= cut_at and proxy.alive:
                proxy.cut()  # parts are in flight now: the first went up at 5 MiB
            sent += len(chunk)
            yield chunk

    with pytest.raises(dataio.errors.StorageError) as info, dataio.writer(uri) as w:
        w.write_chunks(source())
    assert not proxy.alive and proxy.bytes_up > 0
    assert key_of(uri) in str(info.value)
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=key_of(uri))
    pending = uploads(s3, key_of(uri))
    assert len(pending) <= 1, "at most the one upload, never completed"
    # Through a live endpoint again, dataio sees nothing either.
    configure("s3", s3.endpoint)
    assert not dataio.exists(uri)
    with pytest.raises(FileNotFoundError):
        dataio.head(uri)
