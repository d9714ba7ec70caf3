"""gs:// beyond the conformance suite: typed errors without secrets, a
server killed mid-write (and restarted on its stored state), multipart
writes, and the image pipeline over gs:// URIs."""

from __future__ import annotations

import io
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import dataio
import numpy as np
import pytest
from _xml_api import XmlApiFront
from conftest import FakeGcs, configure, unconfigure

MiB = 1 << 20
TOKEN = "ya29.dataio-test-token-never-printed"


def chunks(total: int, size: int = MiB) -> Iterator[bytes]:
    for i in range(total // size):
        yield bytes([i % 251]) * size


def test_missing_key_and_bucket_are_file_not_found(gcs: tuple[FakeGcs, str]) -> None:
    _, bucket = gcs
    with pytest.raises(FileNotFoundError) as info:
        dataio.read(f"gs://{bucket}/no/such.bin")
    assert bucket in str(info.value) and "no/such.bin" in str(info.value)
    with pytest.raises(FileNotFoundError) as info:
        dataio.head("gs://dataio-no-such-bucket-0042/k.bin")
    assert "dataio-no-such-bucket-0042" in str(info.value)


def test_a_bearer_token_never_shows(gcs: tuple[FakeGcs, str]) -> None:
    server, bucket = gcs
    dataio.configure_credentials("gs", method="token", token=TOKEN)
    uri = f"gs://{bucket}/{uuid.uuid4().hex}/t.bin"
    dataio.write(uri, b"with a token")  # the emulator accepts any token
    assert dataio.read(uri) == b"with a token"
    with pytest.raises(FileNotFoundError) as info:
        dataio.read(uri + ".missing")
    assert TOKEN not in str(info.value) and TOKEN not in repr(dataio.config.get_credentials("gs"))
    assert TOKEN not in repr(dataio.capabilities.report())


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


def test_the_image_pipeline_reads_gs_uris_like_local_files(gcs: tuple[FakeGcs, str], tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    Image = pytest.importorskip("PIL.Image")
    _, bucket = gcs
    prefix = f"gs://{bucket}/{uuid.uuid4().hex}"
    local, remote = [], []
    rng = np.random.default_rng(0)
    for i in range(12):
        img = rng.integers(0, 255, (40 + 5 * i, 60, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=85)
        (tmp_path / f"{i}.jpg").write_bytes(buf.getvalue())
        dataio.write(f"{prefix}/{i}.jpg", buf.getvalue())
        local.append({"key": str(i), "image": str(tmp_path / f"{i}.jpg")})
        remote.append({"key": str(i), "image": f"{prefix}/{i}.jpg"})

    def run(records: list[dict[str, str]]) -> np.ndarray:
        pipe = dataio.pipeline(
            dataio.slot("image").decode_image(mode="rgb").resize_short(32).center_crop(h=32, w=32).normalize("imagenet"),
            dataio.batch(5),
        )
        with pipe.bind(records).run("torch", concurrency=8) as loader:
            return torch.cat([b["image"].clone() for b in loader]).numpy()

    np.testing.assert_array_equal(run(remote), run(local))
