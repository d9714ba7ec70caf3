"""The image pipeline over hf:// URIs of files that arrived both ways: added
to the repo on the Hub's side and committed through dataio. (The format
checks and the image pipeline over dataio-written files are the
conformance suites in test_hf_conformance.py.)"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import numpy as np
from _hub import FakeHub

import dataio
from dataio.testing import pipeline_images, require


def test_the_image_pipeline_reads_hf_uris_like_local_files(hf: FakeHub, tmp_path: Path) -> None:
    Image = require("PIL.Image")
    repo = f"dataio/images-{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(2)
    files: dict[str, bytes] = {}
    local, remote = [], []
    for i in range(12):
        img = rng.integers(0, 255, (40 + 5 * i, 64 - 2 * i, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=85)
        (tmp_path / f"{i:02d}.jpg").write_bytes(buf.getvalue())
        files[f"train/{i:02d}.jpg"] = buf.getvalue()
        local.append({"key": str(i), "image": str(tmp_path / f"{i:02d}.jpg")})
        remote.append({"key": str(i), "image": f"hf://datasets/{repo}/train/{i:02d}.jpg"})
    hf.add_repo("dataset", repo, files)
    # one more written through dataio (a commit), read by the same pipeline
    extra = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (50, 50, 3), dtype=np.uint8)).save(extra, format="JPEG", quality=85)
    (tmp_path / "12.jpg").write_bytes(extra.getvalue())
    dataio.write(f"hf://datasets/{repo}/train/12.jpg", extra.getvalue())
    local.append({"key": "12", "image": str(tmp_path / "12.jpg")})
    remote.append({"key": "12", "image": f"hf://datasets/{repo}/train/12.jpg"})
    assert dataio.glob(f"hf://datasets/{repo}/**/*.jpg") == [r["image"] for r in remote]

    keys_remote, from_hf = pipeline_images(remote)
    keys_local, from_local = pipeline_images(local)
    assert keys_remote == keys_local == [r["key"] for r in remote]
    assert from_hf.shape == (13, 3, 32, 32)
    np.testing.assert_array_equal(from_hf, from_local)
