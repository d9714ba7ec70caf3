"""az:// beyond the conformance suite: typed errors without secrets, SAS and
wrong keys, the server killed mid-write (and restarted on its stored state),
and the image pipeline over az:// URIs."""

from __future__ import annotations

import base64
import io
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import dataio
import numpy as np
import pytest
from conftest import ACCOUNT, KEY, Azurite, configure, unconfigure

MiB = 1 << 20
WRONG_KEY = base64.b64encode(b"dataio-wrong-key-that-must-never-be-printed!!").decode()


def chunks(total: int, size: int = MiB) -> Iterator[bytes]:
    for i in range(total // size):
        yield bytes([i % 251]) * size


def test_missing_blob_and_container_are_file_not_found(az: tuple[Azurite, str]) -> None:
    _, container = az
    with pytest.raises(FileNotFoundError) as info:
        dataio.read(f"az://{container}/no/such.bin")
    assert container in str(info.value) and "no/such.bin" in str(info.value)
    with pytest.raises(FileNotFoundError) as info:
        dataio.head("az://dataio-no-such-container/k.bin")
    assert "dataio-no-such-container" in str(info.value)


def test_a_wrong_key_is_permission_denied_and_never_shown(az: tuple[Azurite, str]) -> None:
    server, container = az
    dataio.configure_credentials("az", method="shared_key", account=ACCOUNT, account_key=WRONG_KEY)
    for call in (lambda: dataio.read(f"az://{container}/k.bin"), lambda: dataio.write(f"az://{container}/k.bin", b"x")):
        with pytest.raises(PermissionError) as info:
            call()
        assert container in str(info.value)
        for text in (str(info.value), repr(info.value), repr(info.value.__cause__)):
            assert WRONG_KEY not in text and KEY not in text
    assert WRONG_KEY not in repr(dataio.config.get_credentials("az"))
    assert WRONG_KEY not in repr(dataio.capabilities.report())


def test_a_sas_token_stays_out_of_messages(az: tuple[Azurite, str]) -> None:
    # A syntactically valid SAS that Azurite will refuse: the error must not echo it.
    sas = "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2001-01-01T00:00:00Z&sig=c2VjcmV0LXNpZ25hdHVyZS1kYXRhaW8%3D"
    dataio.configure_credentials("az", method="sas", account=ACCOUNT, sas_token=sas)
    with pytest.raises(dataio.errors.DataioError) as info:
        dataio.read(f"az://{az[1]}/k.bin")
    assert "c2VjcmV0LXNpZ25hdHVyZS1kYXRhaW8" not in str(info.value)


def test_a_connection_string_is_read_by_the_default_method(az: tuple[Azurite, str], monkeypatch) -> None:
    server, container = az
    dataio.config.reset("az")
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={server.endpoint};",
    )
    uri = f"az://{container}/{uuid.uuid4().hex}/cs.bin"
    dataio.write(uri, b"from the connection string")
    assert dataio.read(uri) == b"from the connection string"


def test_a_streaming_write_stages_blocks_until_commit(az: tuple[Azurite, str]) -> None:
    server, container = az
    configure(server.endpoint, part_size=5 * MiB)
    uri = f"az://{container}/{uuid.uuid4().hex}/big.bin"
    with dataio.writer(uri) as w:
        w.write_chunks(chunks(11 * MiB))
        assert not dataio.exists(uri)
    assert dataio.head(uri).size == 11 * MiB
    assert dataio.read(uri, offset=5 * MiB, size=2) == bytes([5, 5])


def test_the_server_killed_mid_write_leaves_no_blob_after_restart(tmp_path: Path) -> None:
    server = Azurite(location=tmp_path / "azurite")
    server.start()
    server.create_container("killed")
    server.stop()  # persist the container; the kill below is the abrupt one
    server.start()
    configure(server.endpoint, part_size=5 * MiB)
    uri = "az://killed/cut/object.bin"
    try:
        def source() -> Iterator[bytes]:
            for i, chunk in enumerate(chunks(40 * MiB)):
                if i == 12:
                    threading.Thread(target=server.kill).start()
                yield chunk

        with pytest.raises(dataio.errors.StorageError) as info:
            with dataio.writer(uri) as w:
                w.write_chunks(source())
        assert "cut/object.bin" in str(info.value)
        server.start()  # same port, same location on disk
        assert server.blob_names("killed") == [], "staged blocks never become a blob"
        assert not dataio.exists(uri)
        dataio.write(uri, b"after restart")
        assert dataio.read(uri) == b"after restart"
    finally:
        server.kill()
        unconfigure()


def test_the_image_pipeline_reads_az_uris_like_local_files(az: tuple[Azurite, str], tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    Image = pytest.importorskip("PIL.Image")
    prefix = f"az://{az[1]}/{uuid.uuid4().hex}"
    local, remote = [], []
    rng = np.random.default_rng(1)
    for i in range(12):
        img = rng.integers(0, 255, (48, 40 + 4 * i, 3), dtype=np.uint8)
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
