"""dataio-http against servers the tests start (127.0.0.1, http and https):
every verb, shard sources, URL lists, retries, cut bodies, and URLs that
point inside refused unless allowed."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from _server import STALL_SECONDS, Server

import dataio
import dataio_http
from dataio.errors import AccessDeniedError, DataioError, NotFoundError, RowError, StorageError


def test_internal_addresses_are_refused_by_default(http_server: Server) -> None:
    dataio.config.reset("http")
    for url, rule in [
        (http_server.url("a.bin"), "loopback"),
        (http_server.url("a.bin", host="localhost"), "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.7/x", "private"),
        ("http://[::1]/x", "loopback"),
    ]:
        t0 = time.monotonic()
        with pytest.raises(AccessDeniedError) as info:
            dataio.read(url)
        msg = str(info.value)
        assert url in msg and rule in msg and "configure_http(allow_private=True)" in msg, msg
        assert time.monotonic() - t0 < 5, "refused before any connection"
    assert http_server.requests == {} or all("a.bin" not in k for k in http_server.requests), http_server.requests
    assert dataio_http.stats()["refused"] >= 5


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_every_read_verb(request: pytest.FixtureRequest, files: tuple[Path, dict[str, bytes]], allow_local: None, tls: bool) -> None:
    server: Server = request.getfixturevalue("https_server" if tls else "http_server")
    _, data = files
    host = "localhost" if tls else "127.0.0.1"
    url = server.url("a.bin", host=host)
    assert dataio.read(url) == data["a.bin"]
    assert dataio.read(url, 100, 50) == data["a.bin"][100:150]
    assert dataio.read_ranges(url, [(0, 10), (9_000, 1_000)]) == [data["a.bin"][:10], data["a.bin"][9_000:]]
    info = dataio.head(url)
    assert info.size == 10_000 and info.etag and info.mtime and not info.is_dir
    assert dataio.exists(url) and not dataio.exists(server.url("missing.bin", host=host))
    buf = bytearray(200)
    assert dataio.fetch_into(url, buf, offset=9_800, size=200) == 200 and bytes(buf) == data["a.bin"][9_800:]
    with dataio.reader(url) as r:
        assert r.size == 10_000 and r.read(5000, 10) == data["a.bin"][5000:5010]
    with pytest.raises(NotFoundError):
        dataio.read(server.url("missing.bin", host=host))
    with pytest.raises(DataioError, match="past the end|out of range|416"):
        dataio.read(url, 9_990, 100)
    with pytest.raises(DataioError, match="no writes|read-only"):
        dataio.write(server.url("new.bin", host=host), b"x")


def test_tar_shards_over_https_with_brace_ranges(https_server: Server, allow_local: None, tmp_path: Path) -> None:
    recs = dataio.tar_records(https_server.url("train-{0..3}.tar", host="localhost"), shuffle_window=8,
                              cache_dir=tmp_path / "c", index_dir=tmp_path / "i")
    pipe = dataio.pipeline(dataio.slot("bin", stack="never").decode_bytes(), dataio.batch(4))
    with pipe.bind(recs).run("numpy", seed=1) as loader:
        got = {int(k.split("#")[-1]): bytes(np.asarray(v)) for b in loader for k, v in zip(b.keys, b["bin"])}
    assert got == {n: bytes([n]) * (100 + n) for n in range(20)}
    with pytest.raises(DataioError, match="no listing"):
        dataio.tar_records(https_server.url("train-*.tar", host="localhost"), cache_dir=tmp_path / "c2", index_dir=tmp_path / "i2")


def test_retries_honour_retry_after_and_a_cut_body_is_never_short(http_server: Server, files: tuple[Path, dict[str, bytes]],
                                                                   allow_local: None) -> None:
    _, data = files
    before = dataio_http.stats()["retries"]
    t0 = time.monotonic()
    assert dataio.read(http_server.url("503/a.bin")) == data["a.bin"]
    assert dataio.read(http_server.url("429/b.bin")) == data["b.bin"]
    assert time.monotonic() - t0 >= 1.9, "Retry-After: 1 was waited, twice"
    assert dataio.read(http_server.url("cut/big.bin")) == data["big.bin"], "retried whole after the cut"
    assert dataio.read(http_server.url("slow/b.bin")) == data["b.bin"]
    assert dataio_http.stats()["retries"] - before >= 3
    with pytest.raises(DataioError) as info:
        dataio.read(http_server.url("alwayscut/big.bin"))
    assert "connection cut" in str(info.value) and "after 4 attempts" in str(info.value), info.value


def test_a_body_that_stalls_past_the_timeout_fails_after_the_retries(http_server: Server) -> None:
    dataio.configure_http(allow_hosts=["127.0.0.1"], timeout=0.3, retries=2)
    try:
        url, before, t0 = http_server.url("stall/big.bin"), dataio_http.stats()["retries"], time.monotonic()
        with pytest.raises(StorageError) as info:
            dataio.read(url)
        took = time.monotonic() - t0
        msg = str(info.value)
        assert url in msg and "timed out" in msg and "after 3 attempts" in msg, msg
        assert http_server.seen["/stall/big.bin"] == 3 and dataio_http.stats()["retries"] - before == 2
        assert took < STALL_SECONDS + 1, f"each attempt gave up at the timeout, not when the server went on ({took:.1f} s)"
    finally:
        dataio.config.reset("http")


def test_a_stalled_body_is_a_timeout_error(http_server: Server) -> None:
    dataio.configure_http(allow_hosts=["127.0.0.1"], timeout=0.3, retries=0)
    try:
        with pytest.raises(dataio.errors.TimeoutError, match="stalled past the timeout") as info:
            dataio.read(http_server.url("stall/a.bin"))
        assert str(info.value).count(http_server.url("stall/a.bin")) == 1, "the URL is named once"
    finally:
        dataio.config.reset("http")


def test_redirects_robots_and_ranges(http_server: Server, files: tuple[Path, dict[str, bytes]]) -> None:
    _, data = files
    # "localhost" allowed by name; a redirect from it to 127.0.0.1 is not.
    dataio.configure_http(allow_hosts=["localhost"])
    try:
        with pytest.raises(AccessDeniedError, match="a redirect to http://127.0.0.1.*loopback"):
            dataio.read(http_server.url("tolocal/a.bin", host="localhost"))
        loop = http_server.url("loop/a.bin", host="localhost")
        with pytest.raises(dataio.errors.StorageError, match="more than 10 redirects") as info:
            dataio.read(loop)
        assert not isinstance(info.value, AccessDeniedError), "a loop is the server's fault, not a refusal"
        assert loop in str(info.value) and http_server.seen["/loop/a.bin"] == 10, "followed to the limit, not retried"
        with pytest.raises(AccessDeniedError, match="X-Robots-Tag: noai"):
            dataio.read(http_server.url("noai/a.bin", host="localhost"))
        dataio.configure_http(respect_robots=False)
        assert dataio.read(http_server.url("noai/a.bin", host="localhost")) == data["a.bin"]
        with pytest.raises(DataioError, match="does not serve ranges"):
            dataio.read(http_server.url("norange/a.bin", host="localhost"), 10, 10)
        dataio.configure_http(allow_private=True)
        assert dataio.read(http_server.url("tolocal/b.bin", host="localhost")) == data["b.bin"]
    finally:
        dataio.config.reset("http")


def test_a_url_list_skips_dead_links_naming_them(http_server: Server, files: tuple[Path, dict[str, bytes]],
                                                 allow_local: None) -> None:
    _, data = files
    records = [
        {"key": "good", "url": http_server.url("a.bin")},
        {"key": "dead", "url": http_server.url("gone.bin")},
        {"key": "inside", "url": "http://169.254.169.254/latest/meta-data/"},
        {"key": "small", "url": http_server.url("b.bin")},
    ]
    pipe = dataio.pipeline(dataio.slot("body", field="url", stack="never").decode_bytes(), dataio.batch(4))
    with pytest.raises(RowError) as info:
        list(pipe.bind(records).run("numpy"))
    assert info.value.key == "dead" and info.value.uri == records[1]["url"] and "404" in str(info.value)
    errors: list[RowError] = []
    with pipe.bind(records).run("numpy", on_failure="skip", log_errors=errors.append) as loader:
        got = {k: bytes(np.asarray(v)) for b in loader for k, v in zip(b.keys, b["body"])}
    assert got == {"good": data["a.bin"], "small": data["b.bin"]}
    why = {e.key: str(e) for e in errors}
    assert set(why) == {"dead", "inside"} and "link-local" in why["inside"], why


def test_configure_http_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="allow_private"):
        dataio.configure_http(allow_private="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="allow_hosts"):
        dataio.configure_http(allow_hosts="10.0.0.0/8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        dataio.configure_http(timeout=0)
    assert dataio.configure_http(retries=5)["retries"] == 5
    dataio.config.reset("http")
    assert dataio.config.http_settings()["retries"] == 3


def test_loader_stats_count_this_loaders_http_traffic(http_server: Server, files: tuple[Path, dict[str, bytes]]) -> None:
    """loader.stats()["http"] (the plugin's dataio_register_stats section):
    responses by status class, bytes, refusals and retries since the loader
    started, not since the process did."""
    _, data = files
    pipe = dataio.pipeline(dataio.slot("body", field="url", stack="never").decode_bytes(), dataio.batch(3))
    dead = [{"key": f"dead{i}", "url": http_server.url(f"gone-{i}.bin")} for i in range(3)]
    live = [{"key": "a", "url": http_server.url("a.bin")}, {"key": "b", "url": http_server.url("b.bin")}]
    dataio.configure_http(allow_hosts=["127.0.0.1"])
    try:
        rows = [live[0], *dead[:2], live[1], dead[2]]  # each batch has a live row
        with pipe.bind(rows).run("numpy", on_failure="skip") as loader:
            got = {k: bytes(np.asarray(v)) for b in loader for k, v in zip(b.keys, b["body"])}
            running = loader.stats()["http"]
        http = loader.stats()["http"]
    finally:
        dataio.config.reset("http")
    assert got == {"a": data["a.bin"], "b": data["b.bin"]}
    assert http["4xx"] == 3 and http["2xx"] >= 2 and http["bytes"] >= len(data["a.bin"]) + len(data["b.bin"]), http
    assert http["refused"] == 0 and http["retries"] == 0 and http["5xx"] == 0, http
    assert running == http, "the last epoch ended: the section stays as it was"
    # Default settings: the loopback server and the metadata address are refused.
    inside = [{"key": "meta", "url": "http://169.254.169.254/latest/meta-data/"}, *live]
    with pipe.bind(inside).run("numpy", on_failure="skip") as loader, pytest.warns(RuntimeWarning, match="every row failed"):
        assert [k for b in loader for k in b.keys] == []
        http = loader.stats()["http"]
    assert http["refused"] == 3 and http["4xx"] == 0 and http["2xx"] == 0 and http["bytes"] == 0, http
