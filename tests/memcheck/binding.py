"""The Python binding's `unsafe` code under valgrind (run by `nox -s memcheck`).

Exercises what crosses the native boundary through raw pointers: batch
buffers handed to numpy (buffer protocol and DLPack), `fetch_into` /
`read_ranges` writing into caller buffers, `Reader` views, `write` from
a memoryview, a shard source's member slices, and a Python backend's
bytes kept alive by the engine. Prints "ok" when every check passed.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile

import numpy as np
from PIL import Image

import dataio


def main() -> None:
    d = tempfile.mkdtemp()
    recs = []
    for i in range(12):
        p = os.path.join(d, f"{i}.png")
        Image.fromarray(np.full((20 + i, 30, 3), i * 20, np.uint8)).save(p)
        recs.append({"image": p, "label": i})
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize(16, 16).normalize(), dataio.slot("label").decode_bytes(), dataio.batch(4)
    )
    labels = []
    for b in pipe.bind(recs).run("numpy", seed=1, concurrency=4):
        img = np.asarray(b["image"])
        assert img.shape == (4, 3, 16, 16) and img.dtype == np.float32
        if hasattr(b["image"], "__dlpack__"):
            assert np.from_dlpack(b["image"]).shape == img.shape
        labels += list(np.asarray(b["label"]))
    assert sorted(labels) == list(range(12)), labels

    # IO verbs writing into and reading from caller memory.
    path = os.path.join(d, "blob.bin")
    payload = bytes(range(256)) * 64
    dataio.write(path, memoryview(payload))
    buf = bytearray(1000)
    assert dataio.fetch_into(path, buf, offset=100, size=1000) == 1000 and bytes(buf) == payload[100:1100]
    parts = dataio.read_ranges(path, [(0, 10), (5000, 300), (16000, 384)])
    assert [bytes(p) for p in parts] == [payload[:10], payload[5000:5300], payload[16000:16384]]
    with dataio.reader(path) as r:
        assert r.read(0, 64) == payload[:64]
        view = memoryview(r)  # the buffer protocol over the local map
        assert bytes(view[100:200]) == payload[100:200]
        into = bytearray(len(payload) - 10)
        assert r.read_into(into, 10) == len(into) and bytes(into) == payload[10:]
        view.release()

    # A tar shard source: member bytes are slices of the mapped shard.
    shard = os.path.join(d, "s-000.tar")
    with tarfile.open(shard, "w") as t:
        for i in range(6):
            data = io.BytesIO()
            Image.fromarray(np.full((8, 8, 3), i, np.uint8)).save(data, format="PNG")
            for name, body in ((f"{i:03d}.png", data.getvalue()), (f"{i:03d}.cls", str(i).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
    shard_pipe = dataio.pipeline(dataio.slot("image", field="png").decode_image(), dataio.batch(3))
    seen = 0
    for b in shard_pipe.bind(dataio.tar_records(shard)).run("numpy", seed=3):
        seen += np.asarray(b["image"]).shape[0]
    assert seen == 6
    print("ok")


if __name__ == "__main__":
    main()
