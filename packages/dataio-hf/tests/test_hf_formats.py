"""Formats end to end against the local Hub server, where every write is a
commit: a sharded safetensors checkpoint written to hf:// reads back equal to
the local one tensor for tensor (and the files are byte-identical),
``get_slice`` reads rows of a remote tensor, ``glob("**/*.parquet")`` +
``read_parquet`` give what pyarrow gives on the local files, and the image
pipeline over hf:// URIs gives what it gives over local copies."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import dataio
import numpy as np
import pytest
from _hub import FakeHub

torch = pytest.importorskip("torch")
from dataio.testing import FormatsConformance


class TestHFFormats(FormatsConformance):
    @pytest.fixture
    def root(self, hf: FakeHub) -> str:
        repo = f"dataio/e2e-{uuid.uuid4().hex[:8]}"
        hf.add_repo("dataset", repo)
        return f"hf://datasets/{repo}"


def test_the_image_pipeline_reads_hf_uris_like_local_files(hf: FakeHub, tmp_path: Path) -> None:
    Image = pytest.importorskip("PIL.Image")
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

    def run(records: list[dict[str, str]]) -> tuple[list[str], np.ndarray]:
        pipe = dataio.pipeline(
            dataio.slot("image").decode_image(mode="rgb").resize_short(32).center_crop(h=32, w=32).normalize("imagenet"),
            dataio.batch(5),
        )
        keys: list[str] = []
        out = []
        with pipe.bind(records).run("torch", concurrency=8) as loader:
            for b in loader:
                keys.extend(b.keys)
                out.append(b["image"].clone())
        return keys, torch.cat(out).numpy()

    keys_remote, from_hf = run(remote)
    keys_local, from_local = run(local)
    assert keys_remote == keys_local == [r["key"] for r in remote]
    assert from_hf.shape == (13, 3, 32, 32)
    np.testing.assert_array_equal(from_hf, from_local)
