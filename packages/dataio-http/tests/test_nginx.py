"""dataio-http against nginx (a real web server, HTTP/1.1 and, over TLS,
HTTP/2): every read verb over http and https compared with the files on
disk, every record source over https compared with the same pipeline over
the local files, and what went over the wire (nginx's access log and
``dataio_http.stats()``) for reads that should take only what they need."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _nginx import Nginx
from _site import CSV_SHARDS, JSONL_SHARDS, MEMBER_BYTES, SAMPLES_PER_SHARD, TAR_SHARDS, tar_member

import dataio
import dataio_http
from dataio.errors import DataioError, NotFoundError


@pytest.fixture
def allow_loopback() -> Iterator[None]:
    dataio.configure_http(allow_hosts=["127.0.0.1", "localhost"])
    yield
    dataio.config.reset("http")


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_every_read_verb_against_nginx(nginx: Nginx, site: Path, allow_loopback: None, tls: bool) -> None:
    a, big = (site / "a.bin").read_bytes(), (site / "big.bin").read_bytes()
    url = nginx.url("a.bin", tls=tls)
    assert dataio.read(url) == a
    assert dataio.read(url, 99_000) == a[99_000:]
    assert dataio.read(url, 1234, 4321) == a[1234:5555]
    assert dataio.read_ranges(url, [(0, 10), (50_000, 7), (99_990, 10)]) == [a[:10], a[50_000:50_007], a[99_990:]]
    meta = dataio.head(url)
    assert meta.size == len(a) and meta.etag and meta.mtime and not meta.is_dir
    assert dataio.exists(url) and not dataio.exists(nginx.url("missing.bin", tls=tls))
    buf = bytearray(len(big))
    assert dataio.fetch_into(nginx.url("big.bin", tls=tls), buf) == len(big) and buf == big  # 8 MiB parts, at once
    part = np.zeros(1000, np.uint8)
    assert dataio.fetch_into(url, part, offset=500, size=1000) == 1000 and part.tobytes() == a[500:1500]
    with dataio.reader(url) as r:
        assert r.size == len(a) and r.read(70_000, 16) == a[70_000:70_016] and r.read_all() == a
    with pytest.raises(NotFoundError):
        dataio.read(nginx.url("missing.bin", tls=tls))
    with pytest.raises(DataioError, match="past the end|out of range|416"):
        dataio.read(url, 99_990, 100)


def test_https_speaks_http2_to_nginx(nginx: Nginx, site: Path, allow_loopback: None) -> None:
    if not nginx.http2:
        pytest.skip("this nginx was built without the HTTP/2 module")
    mark = nginx.mark()
    assert dataio.read(nginx.url("a.bin", tls=True), 0, 100) == (site / "a.bin").read_bytes()[:100]
    assert {h.protocol for h in nginx.since(mark)} == {"HTTP/2.0"}, nginx.hits()


def _rows(loader: Any, slots: list[str]) -> dict[str, tuple[bytes, ...]]:
    """Each delivered row by its key's last path segment (the same for the
    local and the remote copy of a file), its slots as bytes."""
    out = {}
    for b in loader:
        for i, key in enumerate(b.keys):
            out[key.rsplit("/", 1)[-1]] = tuple(np.asarray(b[s][i]).tobytes() for s in slots)
    return out


def _same_over_https(nginx: Nginx, site: Path, tmp_path: Path, make: Callable[[Callable[[str], str], Path], Any],
                     pipe: dataio.Pipeline, slots: list[str]) -> dict[str, tuple[bytes, ...]]:
    """Runs ``pipe`` over ``make(name -> uri)`` with local paths and with
    https URLs to nginx (fresh caches each) and checks both deliver the
    same rows; returns them."""
    local = _rows(pipe.bind(make(lambda name: str(site / name), tmp_path / "local")).run("numpy", seed=5), slots)
    with pipe.bind(make(lambda name: nginx.url(name, tls=True), tmp_path / "remote")).run("numpy", seed=5) as loader:
        remote = _rows(loader, slots)
    assert remote == local and local
    return remote


def test_tar_shards_over_https_match_the_local_run(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    pipe = dataio.pipeline(dataio.slot("a", stack="never").decode_bytes(), dataio.slot("b", stack="never").decode_bytes(),
                           dataio.batch(5))
    rows = _same_over_https(nginx, site, tmp_path, lambda uri, d: dataio.tar_records(
        uri(f"train-{{0..{TAR_SHARDS - 1}}}.tar"), shuffle_window=8, cache_dir=d / "c", index_dir=d / "i"), pipe, ["a", "b"])
    want = {f"{n:04d}": (tar_member(n, "a"), tar_member(n, "b")) for n in range(TAR_SHARDS * SAMPLES_PER_SHARD)}
    assert {k.split("#")[-1]: v for k, v in rows.items()} == want


def test_parquet_over_https_matches_the_local_run(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.slot("blob", stack="never").decode_bytes(), dataio.batch(16))
    rows = _same_over_https(nginx, site, tmp_path, lambda uri, d: dataio.parquet_records(
        uri("data.parquet"), columns=["key", "label", "blob"], key="key", index_dir=d / "i"), pipe, ["label", "blob"])
    assert len(rows) == 120 and rows["k007"][1] == bytes([7]) * 8


def test_jsonl_over_https_matches_the_local_run(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    pipe = dataio.pipeline(dataio.slot("text", stack="never").decode_bytes(), dataio.slot("i").decode_bytes(), dataio.batch(4))
    rows = _same_over_https(nginx, site, tmp_path, lambda uri, d: dataio.jsonl_records(
        uri(f"part-{{0..{JSONL_SHARDS - 1}}}.jsonl"), shuffle_window=8, cache_dir=d / "c", index_dir=d / "i"), pipe, ["text", "i"])
    assert len(rows) == JSONL_SHARDS * 10 and rows["part-1.jsonl#L3"][0] == "doc 1-2 數據".encode()


def test_csv_over_https_matches_the_local_run(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    pipe = dataio.pipeline(dataio.slot("word", stack="never").decode_bytes(), dataio.slot("label").decode_bytes(), dataio.batch(4))
    rows = _same_over_https(nginx, site, tmp_path, lambda uri, d: dataio.csv_records(
        uri(f"part-{{0..{CSV_SHARDS - 1}}}.csv"), columns={"label": int}, shuffle_window=8, cache_dir=d / "c", index_dir=d / "i"),
        pipe, ["word", "label"])
    assert len(rows) == CSV_SHARDS * 10 and rows["part-2.csv#L4"][0] == b"w2-2, quoted"  # line 1 is the header


def test_a_list_of_urls_over_https_matches_the_local_run(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    names = ["a.bin", "train-2.tar", "part-0.jsonl", "data.parquet"]
    pipe = dataio.pipeline(dataio.slot("body", field="file", stack="never").decode_bytes(), dataio.batch(2))
    rows = _same_over_https(nginx, site, tmp_path, lambda uri, _d: [{"key": n, "file": uri(n)} for n in names], pipe, ["body"])
    assert rows == {n: ((site / n).read_bytes(),) for n in names}


def test_video_over_http_matches_the_local_file(nginx: Nginx, site: Path, allow_loopback: None) -> None:
    if not (site / "clip.mp4").exists():
        pytest.skip("the ffmpeg CLI is not installed")
    if "decode_video" not in dataio.plugins.list_ops():
        pytest.skip("dataio-video is not installed")
    local, url = str(site / "clip.mp4"), nginx.url("clip.mp4", tls=False)
    assert dataio.video_info(url) == dataio.video_info(local)
    np.testing.assert_array_equal(dataio.read_video(url, start_frame=10, num_frames=8, stride=2),
                                  dataio.read_video(local, start_frame=10, num_frames=8, stride=2))
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=6, stride=2, clip="random"), dataio.batch(3))
    clips = {}
    for where in (local, url):
        with pipe.bind([{"key": f"r{i}", "video": where} for i in range(6)]).run("numpy", seed=9) as loader:
            clips[where] = {k: np.asarray(v).copy() for b in loader for k, v in zip(b.keys, b["video"])}
    assert clips[local].keys() == clips[url].keys()
    for k in clips[local]:
        np.testing.assert_array_equal(clips[local][k], clips[url][k])


def _http_bytes() -> int:
    return dataio_http.stats()["bytes"]


def test_a_host_fetches_only_its_shards(nginx: Nginx, site: Path, tmp_path: Path, allow_loopback: None) -> None:
    """With a shard index, opening reads no shard, and the first of two
    hosts fetches its half of the shards once: at most 1.05x the member
    bytes it reads. (Ranks of one host share its shards' stream: without
    ``hosts`` every rank reads every shard.)"""
    records = dataio.tar_records(nginx.url("shardindex.json", tls=True), shuffle_window=6, shuffle_spread=1,
                                 cache_dir=tmp_path / "c", index_dir=tmp_path / "i")
    pipe = dataio.pipeline(dataio.slot("a", stack="never").decode_bytes(), dataio.slot("b", stack="never").decode_bytes(),
                           dataio.batch(6))
    before, mark = _http_bytes(), nginx.mark()
    with pipe.bind(records).run("numpy", seed=1, shard={"id": 0, "of": 2, "hosts": 2}) as loader:
        got = sum(len(np.asarray(x).tobytes()) for b in loader for s in ("a", "b") for x in b[s])
    fetched = _http_bytes() - before
    assert got == TAR_SHARDS // 2 * SAMPLES_PER_SHARD * 2 * MEMBER_BYTES
    assert fetched <= 1.05 * got, (fetched, got, list(nginx.since(mark)))
    wire = sum(h.body_bytes for h in nginx.since(mark))
    assert abs(wire - fetched) <= 4096, (wire, fetched)  # the plugin's count is what nginx sent


def test_reading_one_member_of_each_sample_fetches_only_that_member(nginx: Nginx, tmp_path: Path, allow_loopback: None) -> None:
    """Once a shard's member table is kept (`python -m dataio index` keeps
    it, as any earlier epoch does), a plan that reads some members fetches
    those members' ranges, not the shard."""
    from dataio.__main__ import main

    shards = [nginx.url(f"train-{i}.tar", tls=True) for i in range(TAR_SHARDS)]
    assert main(["index", *shards, "--out", str(tmp_path / "shardindex.json"), "--index-dir", str(tmp_path / "i"), "--quiet"]) == 0
    pipe = dataio.pipeline(dataio.slot("a", stack="never").decode_bytes(), dataio.batch(6))
    for epoch in range(2):
        records = dataio.tar_records(nginx.url("shardindex.json", tls=True), shuffle_window=6, cache=False, index_dir=tmp_path / "i")
        before, mark = _http_bytes(), nginx.mark()
        with pipe.bind(records).run("numpy", seed=1, epoch=epoch) as loader:
            got = {bytes(np.asarray(x)) for b in loader for x in b["a"]}
        fetched = _http_bytes() - before
        assert got == {tar_member(n, "a") for n in range(TAR_SHARDS * SAMPLES_PER_SHARD)}
        read = TAR_SHARDS * SAMPLES_PER_SHARD * MEMBER_BYTES
        assert fetched <= 1.05 * read, f"epoch {epoch}: fetched {fetched} bytes to read {read} bytes of members ({fetched / read:.2f}x)"
        assert all(h.range for h in nginx.since(mark) if h.uri.endswith(".tar") and h.method == "GET"), "a shard was fetched whole"


def test_globs_over_http_are_an_error_and_brace_ranges_work(nginx: Nginx, tmp_path: Path, allow_loopback: None) -> None:
    for source in (dataio.tar_records, dataio.jsonl_records):
        with pytest.raises(DataioError, match="no listing") as info:
            source(nginx.url("train-*.tar", tls=True), cache_dir=tmp_path / "c", index_dir=tmp_path / "i")
        assert "brace" in str(info.value) or "index" in str(info.value) or "no listing" in str(info.value)
    with pytest.raises(DataioError, match="no listing"):
        dataio.glob(nginx.url("*.bin", tls=False))
    braced = dataio.tar_records(nginx.url(f"train-{{0..{TAR_SHARDS - 1}}}.tar", tls=False), cache_dir=tmp_path / "c",
                                index_dir=tmp_path / "i")
    assert len(braced) == TAR_SHARDS * SAMPLES_PER_SHARD


def test_a_shard_that_changes_on_the_server_is_a_typed_error_naming_it(nginx: Nginx, site: Path, tmp_path: Path,
                                                                       allow_loopback: None) -> None:
    """ETag and Last-Modified are a remote shard's version: a shard replaced
    after the source was opened is refused when the epoch reaches it, never
    read as the data the index describes."""
    import io
    import os
    import tarfile

    from dataio.errors import CorruptDataError

    folder = site / "changing"
    folder.mkdir(exist_ok=True)

    def shard(path: Path, fill: int, n: int) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for i in range(n):
                info = tarfile.TarInfo(f"{path.stem}-{i:03d}.bin")
                info.size = 64
                t.addfile(info, io.BytesIO(bytes([fill]) * 64))
        path.write_bytes(buf.getvalue())

    for s in range(2):
        shard(folder / f"c-{s}.tar", s, 5)
    records = dataio.tar_records(nginx.url("changing/c-{0..1}.tar", tls=True), cache_dir=tmp_path / "c",
                                 index_dir=tmp_path / "i")
    assert len(records) == 10
    shard(folder / "c-1.tar", 9, 5)  # replaced on the server: same size, new bytes and time
    st = (folder / "c-1.tar").stat()
    os.utime(folder / "c-1.tar", (st.st_atime, st.st_mtime + 5))
    pipe = dataio.pipeline(dataio.slot("bin").decode_bytes(), dataio.batch(5))
    with pytest.raises(CorruptDataError, match="changed since it was indexed") as info:
        list(pipe.bind(records).run("numpy"))
    assert "changing/c-1.tar" in str(info.value)
