"""`python -m dataio convert` of a URL list served by nginx on loopback:
5% dead links and 2% files that are not images are skipped and named, every
other row becomes one sample of the WebDataset shards, which webdataset,
wids (through the written index) and dataio.tar_records read back."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _nginx import Nginx
from PIL import Image

import dataio

ROWS = 100
DEAD = set(range(3, ROWS, 20))  # 5 rows: 404
NOT_IMAGES = {11, 57}  # 2 rows: an HTML page


def _photo(i: int) -> bytes:
    y, x = np.mgrid[0 : 90 + i % 5 * 7, 0:120]
    px = np.stack([x * 2 + i, y * 2, (x + y + 3 * i) % 256], -1).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(px).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture(scope="module")
def url_list(site: Path, nginx: Nginx, tmp_path_factory: pytest.TempPathFactory) -> Path:
    photos = site / "photos"
    photos.mkdir(exist_ok=True)
    urls, captions = [], []
    for i in range(ROWS):
        name = f"p{i:03d}.jpg"
        if i in NOT_IMAGES:
            (photos / name).write_bytes(b"<html><body>gone fishing</body></html>")
        elif i not in DEAD:
            (photos / name).write_bytes(_photo(i))
        urls.append(nginx.url(f"photos/{name}", tls=False))
        captions.append(f"photo number {i}")
    out = tmp_path_factory.mktemp("lists") / "urls.parquet"
    pq.write_table(pa.table({"url": urls, "caption": captions}), out)
    return out


def test_a_url_list_becomes_webdataset_shards_with_failures_named(url_list: Path, tmp_path: Path) -> None:
    import wids
    from webdataset import WebDataset

    dest = tmp_path / "out" / "train-{000..}.tar"
    cmd = [sys.executable, "-m", "dataio", "convert", str(url_list), str(dest), "--resize-short", "64",
           "--samples-per-shard", "25", "--allow-private", "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote 93 samples in 4 shards" in done.stdout, done.stdout
    assert "failed rows: 2 DecodeError, 5 NotFoundError" in done.stdout, done.stdout
    assert "p003.jpg" in done.stdout  # the first skipped rows are named with their URL

    good = [i for i in range(ROWS) if i not in DEAD | NOT_IMAGES]
    shards = sorted(str(p) for p in (tmp_path / "out").glob("train-*.tar"))
    samples = list(WebDataset(shards, shardshuffle=False))
    assert [s["txt"].decode() for s in samples] == [f"photo number {i}" for i in good]
    for s in samples:
        im = Image.open(io.BytesIO(s["jpg"]))
        assert im.format == "JPEG" and min(im.size) == 64

    index = tmp_path / "out" / "shardindex.json"
    assert [e["nsamples"] for e in json.loads(index.read_text())["shardlist"]] == [25, 25, 25, 18]
    ds = wids.ShardListDataset(str(index))
    assert len(ds) == len(good) and ds[30]["__key__"] == samples[30]["__key__"]

    pipe = dataio.pipeline(dataio.slot("jpg").decode_image(), dataio.slot("txt").decode_bytes(), dataio.batch(16))
    texts = [bytes(t).decode() for b in pipe.bind(dataio.tar_records(str(index))).run("numpy") for t in b["txt"]]
    assert sorted(texts) == sorted(f"photo number {i}" for i in good)


def test_internal_urls_are_refused_without_allow_private(url_list: Path, tmp_path: Path) -> None:
    dest = tmp_path / "out" / "x-{0..}.tar"
    cmd = [sys.executable, "-m", "dataio", "convert", str(url_list), str(dest), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote 0 samples" in done.stdout and f"{ROWS} AccessDeniedError" in done.stdout, done.stdout
    assert "loopback" in done.stdout and "configure_http" in done.stdout
