"""dataio.write_shards into an S3 bucket (the emulator): every shard an
object that appears whole (a large one by multipart), the index beside them,
read back by dataio.tar_records over s3://; a rerun keeps what stands."""

from __future__ import annotations

import io
import uuid

import numpy as np
from conftest import S3Server, configure
from PIL import Image

import dataio
import dataio.shard_writer as sw

MiB = 1 << 20


def _records(n: int) -> list[dict[str, object]]:
    out = []
    for i in range(n):
        buf = io.BytesIO()
        Image.fromarray(np.full((40 + i, 50, 3), i * 9 % 256, np.uint8)).save(buf, format="PNG")
        out.append({"image": buf.getvalue(), "cls": i % 3, "key": f"s{i:03d}"})
    return out


def test_write_shards_to_s3_and_read_them_back(s3: S3Server, monkeypatch) -> None:
    configure("s3", s3.endpoint, part_size=5 * MiB)
    # Shards from 1 MiB go up by multipart here (64 MiB by default), so both paths run.
    monkeypatch.setattr(sw, "_MULTIPART_FROM", 1 * MiB)
    prefix = f"s3://{s3.bucket}/{uuid.uuid4().hex}/train"
    pipe = dataio.pipeline(
        dataio.slot("png", field="image").decode_image().encode_image("png"),
        dataio.slot("npy", field="image").decode_image().resize(64, 64),  # 12 KiB arrays: a large shard
        dataio.slot("cls").decode_bytes(),
        dataio.batch(8),
    )
    records = _records(120)
    report = dataio.write_shards(pipe.bind(records), prefix + "/train-{0000..}.tar", samples_per_shard=100)
    assert report.shards == [f"{prefix}/train-0000.tar", f"{prefix}/train-0001.tar"]
    assert report.samples == 120 and report.index == f"{prefix}/shardindex.json"
    sizes = [dataio.head(u).size for u in report.shards]
    assert sizes[0] > MiB > sizes[1], sizes  # the first went up by multipart, the second in one PUT
    assert not s3.client.list_multipart_uploads(Bucket=s3.bucket).get("Uploads"), "no upload left open"

    back = dataio.pipeline(dataio.slot("png").decode_image(), dataio.slot("cls").decode_bytes(), dataio.batch(16))
    got = {}
    for b in back.bind(dataio.tar_records(report.index, cache_dir=None)).run("numpy"):
        got.update({k: (px, int(bytes(c))) for k, px, c in zip(b.keys, b["png"], b["cls"])})
    assert sorted(got) == [f"s{i:03d}" for i in range(120)]
    for i in (0, 57, 119):
        px, c = got[f"s{i:03d}"]
        assert px.shape == (40 + i, 50, 3) and int(px[0, 0, 0]) == i * 9 % 256 and c == i % 3

    again = dataio.write_shards(pipe.bind(records), prefix + "/train-{0000..}.tar", samples_per_shard=100)
    assert (again.kept, again.samples) == (2, 0)
