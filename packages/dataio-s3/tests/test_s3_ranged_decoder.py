"""A native plugin decoder that reads its input by range (the op ABI's
RANGED_INPUT, with the core's test plugin dataio-nativeops) over S3 (moto):
it fetches the ranges it needs, not the objects."""

from __future__ import annotations

import uuid

import numpy as np
from conftest import S3Server

import dataio
from dataio.testing import require


def pgm(h: int, w: int, value: int) -> bytes:
    return f"P5 {w} {h} 255\n".encode() + bytes((value + i) % 256 for i in range(h * w))


def test_a_ranged_decoder_fetches_its_ranges_not_the_objects(s3: S3Server) -> None:
    require("dataio_nativeops", "the core's test plugin (tests/plugins/dataio-nativeops, built by nox -s tests)")
    prefix = f"ranged-{uuid.uuid4().hex[:8]}"
    tail = bytes(range(256)) * 4096  # 1 MiB after each image that must stay in the store
    records = []
    for i in range(4):
        key = f"{prefix}/img{i}.pgm"
        s3.client.put_object(Bucket=s3.bucket, Key=key, Body=pgm(6, 8, 5 * i) + tail)
        records.append({"key": f"r{i}", "img": f"s3://{s3.bucket}/{key}"})
    pipe = dataio.pipeline(dataio.slot("img").decode_pgm_ranged(), dataio.batch(2))
    with pipe.bind(records).run("numpy") as loader:
        got = {k: np.array(x) for b in loader for k, x in zip(b.keys, b["img"])}
        read = loader.stats()["bytes_read"]
    for i in range(4):
        want = np.array([(5 * i + j) % 256 for j in range(48)], np.uint8).reshape(6, 8, 1)
        assert np.array_equal(got[f"r{i}"], want)
    object_size = len(pgm(6, 8, 0)) + len(tail)
    assert read == 4 * (64 + 48), read  # 112 bytes of each 1 MiB object
    assert read < object_size / 1000
