"""The Direct IO verbs (the README's "Direct IO" section: head, read, write,
exists, ls, glob, fetch_into, reader, writer) over s3:// against moto, in a
bucket named ``bucket``; and credentials and an endpoint configured for R2."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Iterator

import pytest
from conftest import S3Server

import dataio


@pytest.fixture
def direct_io_bucket(s3: S3Server) -> Iterator[None]:
    client = s3.client
    try:
        client.create_bucket(Bucket="bucket")
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        info = tarfile.TarInfo("0001.jpg")
        info.size = 4
        tf.addfile(info, io.BytesIO(b"jpeg"))
    client.put_object(Bucket="bucket", Key="file.bin", Body=bytes(range(256)) * 8192)
    client.put_object(Bucket="bucket", Key="shard.tar.gz", Body=gzip.compress(raw.getvalue()))
    client.put_object(Bucket="bucket", Key="prefix/a.bin", Body=b"a")
    client.put_object(Bucket="bucket", Key="models/x/model.safetensors", Body=b"{}")
    client.put_object(Bucket="bucket", Key="checkpoint.bin", Body=b"\x01" * (3 << 20))
    yield


def huge_generator() -> Iterator[bytes]:
    for i in range(4):
        yield bytes([i]) * (1 << 20)


def test_the_direct_io_examples_run_verbatim(direct_io_bucket: None) -> None:
    # -- the calls, as a user writes them --------------------------------------
    dataio.head("s3://bucket/file.bin")
    chunk = dataio.read("s3://bucket/file.bin", offset=0, size=1 << 20)
    etag  = dataio.write("s3://bucket/out.bin", chunk)

    dataio.exists("s3://bucket/out.bin")
    dataio.ls("s3://bucket/prefix/")
    dataio.glob("s3://bucket/**/*.safetensors")

    buf = bytearray(1 << 30)
    n = dataio.fetch_into("s3://bucket/checkpoint.bin", buf)
    view = memoryview(buf)[:n]

    src = dataio.reader("s3://bucket/shard.tar.gz")
    payload = src.gunzip().tar_entry("0001.jpg").read_all()

    with dataio.writer("s3://bucket/checkpoint.bin") as w:
        w.write_chunks(huge_generator())
    # ---------------------------------------------------------------------------
    assert dataio.head("s3://bucket/file.bin").size == 256 * 8192
    assert chunk == (bytes(range(256)) * 8192)[: 1 << 20]
    assert isinstance(etag, str) and etag
    assert dataio.exists("s3://bucket/out.bin")
    assert dataio.ls("s3://bucket/prefix/") == ["s3://bucket/prefix/a.bin"]
    assert dataio.glob("s3://bucket/**/*.safetensors") == ["s3://bucket/models/x/model.safetensors"]
    assert n == 3 << 20 and bytes(view[:2]) == b"\x01\x01"
    assert payload == b"jpeg"
    assert dataio.read("s3://bucket/checkpoint.bin") == b"".join(huge_generator())


def test_the_credentials_example_configures_r2(s3: S3Server) -> None:
    dataio.configure_credentials("s3", method="default")  # platform chain
    dataio.configure_credentials("r2", access_key_id="...", secret_access_key="...")
    dataio.configure_endpoint("r2", "https://<account>.r2.cloudflarestorage.com".replace("<account>", "acct"))
    name, caps = dataio._native.backend_info("r2://bucket/x")
    assert name == "dataio-s3" and "write" in caps
    assert "..." not in repr(dataio.config.get_credentials("r2")).replace("=***", "")
    dataio.config.reset("r2")
