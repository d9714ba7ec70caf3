"""hf:// beyond the conformance suite: URI forms and revisions, tokens that
never show, typed errors, and ranged reads of a large file."""

from __future__ import annotations

import pytest
from _hub import FakeHub

import dataio
from dataio_hf.backend import parse

TOKEN = "hf_dataioTestTokenThatMustNeverBePrinted"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("hf://org/model/a/b.bin", ("model", "org/model", None, "a/b.bin")),
        ("hf://datasets/org/data@v1.0/x.parquet", ("dataset", "org/data", "v1.0", "x.parquet")),
        ("hf://datasets/org/data@refs/pr/3/x.parquet", ("dataset", "org/data", "refs/pr/3", "x.parquet")),
        ("hf://datasets/org/data@refs%2Fconvert%2Fparquet/default/train/0.parquet",
         ("dataset", "org/data", "refs/convert/parquet", "default/train/0.parquet")),
        ("hf://spaces/org/app/app.py", ("space", "org/app", None, "app.py")),
        ("hf://org/model", ("model", "org/model", None, "")),
    ],
)
def test_uri_forms(uri: str, expected: tuple[object, ...]) -> None:
    t = parse(uri)
    assert (t.repo_type, t.repo_id, t.revision, t.path) == expected


def test_malformed_uris_are_refused(hf: FakeHub) -> None:
    for bad in ("hf://onlyorg", "hf://datasets/", "hf://org/name@/x"):
        with pytest.raises(ValueError):
            dataio.read(bad)


def test_revisions_are_read_separately(hf: FakeHub) -> None:
    hf.add_repo("dataset", "dataio/revs", {"f.txt": b"main"}, revisions=("main", "v2"))
    hf.repos[("dataset", "dataio/revs")]["v2"]["f.txt"] = b"version two"
    assert dataio.read("hf://datasets/dataio/revs/f.txt") == b"main"
    assert dataio.read("hf://datasets/dataio/revs@v2/f.txt") == b"version two"
    with pytest.raises(FileNotFoundError, match="revision"):
        dataio.read("hf://datasets/dataio/revs@nope/f.txt")


def test_missing_repo_and_file_are_file_not_found(hf: FakeHub) -> None:
    hf.add_repo("model", "dataio/present", {"a.bin": b"a"})
    with pytest.raises(FileNotFoundError, match="dataio/absent"):
        dataio.read("hf://dataio/absent/a.bin")
    with pytest.raises(FileNotFoundError, match="b.bin"):
        dataio.read("hf://dataio/present/b.bin")
    assert not dataio.exists("hf://dataio/present/b.bin")


def test_a_token_is_sent_and_never_shown(hf: FakeHub) -> None:
    hf.add_repo("model", "dataio/private", {"w.bin": b"weights"})
    hf.token = TOKEN
    try:
        dataio.configure_credentials("hf", method="anonymous")
        with pytest.raises(PermissionError) as info:
            dataio.read("hf://dataio/private/w.bin")
        assert TOKEN not in str(info.value)
        dataio.configure_credentials("hf", token="hf_wrongTokenValue123456")
        with pytest.raises(PermissionError) as info:
            dataio.read("hf://dataio/private/w.bin")
        assert "hf_wrongTokenValue123456" not in str(info.value) + repr(info.value)
        dataio.configure_credentials("hf", token=TOKEN)
        assert dataio.read("hf://dataio/private/w.bin") == b"weights"
        assert TOKEN not in repr(dataio.config.get_credentials("hf"))
        assert TOKEN not in repr(dataio.capabilities.report())
    finally:
        hf.token = None


def test_the_endpoint_setting_is_honoured(hf: FakeHub) -> None:
    hf.add_repo("model", "dataio/ep", {"x": b"mirror"})
    dataio.configure_endpoint("hf", hf.endpoint)
    dataio.configure_credentials("hf", method="anonymous")
    before = len(hf.requests)
    assert dataio.read("hf://dataio/ep/x") == b"mirror"
    assert len(hf.requests) > before


def test_ranged_reads_of_a_large_file_fetch_only_the_range(hf: FakeHub) -> None:
    data = bytes(range(256)) * (24 * 4096)  # 24 MiB
    hf.add_repo("model", "dataio/large", {"model.safetensors": data})
    uri = "hf://dataio/large/model.safetensors"
    assert dataio.head(uri).size == len(data)
    assert dataio.read(uri, offset=20 << 20, size=1000) == data[20 << 20 : (20 << 20) + 1000]
    buf = bytearray(4096)
    assert dataio.fetch_into(uri, buf, offset=123, size=4096) == 4096
    assert bytes(buf) == data[123 : 123 + 4096]
    assert dataio.glob("hf://dataio/large/*.safetensors") == [uri]
