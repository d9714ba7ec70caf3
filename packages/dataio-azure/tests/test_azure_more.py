"""az:// beyond the conformance suites (test_azure_conformance.py): SAS
tokens kept out of messages, connection strings, block-staged streaming
writes, and the server killed mid-write (and restarted on its stored
state)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ACCOUNT, KEY, Azurite, configure, unconfigure

import dataio

MiB = 1 << 20


def chunks(total: int, size: int = MiB) -> Iterator[bytes]:
    for i in range(total // size):
        yield bytes([i % 251]) * size


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
