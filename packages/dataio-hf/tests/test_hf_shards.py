"""A parquet dataset as the Hub publishes it (``datasets`` ``Image`` column,
several files under data/), read through hf:// by row group: shuffled, every
row once, images decoded natively, and a bounded number of Hub requests per
epoch, reported by the loader."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio

datasets = pytest.importorskip("datasets", reason="datasets is in the core's test group")


def jpeg(value: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((12, 20, 3), value % 251, np.uint8)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def test_hub_parquet_with_images_by_row_group(hf: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(tmp_path / "cache"))
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    files, total = {}, 0
    for f, count in enumerate([9, 12, 7]):
        images = [Image.open(io.BytesIO(jpeg(total + i))) for i in range(count)]
        ds = datasets.Dataset.from_dict({"image": images, "label": list(range(total, total + count))}, features=features)
        out = tmp_path / f"{f}.parquet"
        ds.to_parquet(str(out), batch_size=4)
        files[f"data/train-{f:05d}-of-00003.parquet"] = out.read_bytes()
        total += count
    hf.add_repo("dataset", "org/pets", files)
    records = dataio.parquet_records("hf://datasets/org/pets/data/train-*.parquet", key="label", shuffle_window=8)
    row_groups = len(records._dataio_layout()[0])
    assert len(records) == total and row_groups == 3 + 3 + 2
    pipe = dataio.pipeline(dataio.slot("image").decode_image(mode="rgb"), dataio.slot("label").decode_bytes(), dataio.batch(6))
    hf.requests.clear()
    with pipe.bind(records).run("numpy", seed=4) as loader:
        rows = [(int(lab), int(px)) for b in loader for lab, px in zip(b["label"], b["image"][:, 0, 0, 0])]
        source = loader.stats()["source"]
    labels = [lab for lab, _ in rows]
    assert sorted(labels) == list(range(total)) and labels != list(range(total))
    assert all(px == lab % 251 for lab, px in rows)
    # Each row group is read about once (a bounded set is held), each read a
    # few ranged requests; never a request per row.
    assert source["row_groups_read"] <= 2 * row_groups, source
    assert len(hf.requests) <= 8 * row_groups + 4 * len(files), hf.requests
    assert len(hf.requests) < total
