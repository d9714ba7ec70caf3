"""End to end: the image pipeline over records whose "image" fields are
s3:// URIs gives exactly the tensors it gives over local copies."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import dataio
import numpy as np
import pytest
from conftest import S3Server

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")


def jpeg(h: int, w: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 127 // (h + w))], axis=-1)
    noisy = np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(noisy).save(out, format="JPEG", quality=90)
    return out.getvalue()


def run(records: list[dict[str, str]]) -> tuple[list[str], np.ndarray]:
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").resize_short(64).center_crop(h=56, w=56).normalize("imagenet"),
        dataio.batch(8, prefetch=2),
    )
    keys: list[str] = []
    tensors = []
    with pipe.bind(records).run("torch", concurrency=16) as loader:
        for batch in loader:
            keys.extend(batch.keys)
            tensors.append(batch["image"].clone())
    return keys, torch.cat(tensors).numpy()


def test_the_image_pipeline_reads_s3_uris_like_local_files(s3: S3Server, tmp_path: Path) -> None:
    prefix = f"s3://{s3.bucket}/{uuid.uuid4().hex}/images"
    local, remote = [], []
    for i in range(20):
        data = jpeg(80 + 7 * i, 120 - 3 * i, seed=i)
        path = tmp_path / f"{i:03d}.jpg"
        path.write_bytes(data)
        dataio.write(f"{prefix}/{i:03d}.jpg", data)
        local.append({"key": f"k{i}", "image": str(path)})
        remote.append({"key": f"k{i}", "image": f"{prefix}/{i:03d}.jpg"})
    assert dataio.glob(prefix + "/*.jpg") == [r["image"] for r in remote]
    keys_local, from_local = run(local)
    keys_remote, from_s3 = run(remote)
    assert keys_remote == keys_local == [r["key"] for r in remote]
    assert from_s3.shape == (20, 3, 56, 56)
    np.testing.assert_array_equal(from_s3, from_local)


def test_a_missing_object_in_a_pipeline_is_a_row_error_naming_the_uri(s3: S3Server) -> None:
    uri = f"s3://{s3.bucket}/{uuid.uuid4().hex}/missing.jpg"
    pipe = dataio.pipeline(dataio.slot("image").decode_image(mode="rgb").resize(h=8, w=8), dataio.batch(1))
    with pytest.raises(dataio.errors.DataioError) as info:
        with pipe.bind([{"key": "m", "image": uri}]).run("torch") as loader:
            list(loader)
    assert uri in str(info.value)
