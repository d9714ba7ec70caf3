"""dataio-video over S3 (moto): a clip from a large video fetches the GOPs
it needs (and, once per file, the header), never the file."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
from conftest import CuttableProxy, S3Server, configure

import dataio
from dataio.testing import require

sys.path.insert(0, str(Path(__file__).parents[2] / "dataio-video" / "tests"))


def test_a_short_clip_from_a_large_video_fetches_a_small_part_of_it(s3: S3Server, tmp_path: Path) -> None:
    require("dataio_video", "the dataio-video plugin (packages/dataio-video, built by nox -s tests)")
    from media import frame_number, write_video

    prefix = f"video-{uuid.uuid4().hex[:8]}"
    records, sizes = [], {}
    for name, faststart in (("front.mp4", True), ("moov_at_end.mp4", False)):
        path = write_video(tmp_path / name, 240, gop=24, bframes=2, width=320, height=240, noise=True,
                           faststart=faststart)
        key = f"{prefix}/{name}"
        s3.client.upload_file(str(path), s3.bucket, key)
        sizes[name] = path.stat().st_size
        records.append({"key": name, "video": f"s3://{s3.bucket}/{key}"})
    assert min(sizes.values()) > 4 << 20, sizes  # several MB each: noise compresses badly
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=4, start_frame=150, stride=2), dataio.batch(1))

    def run() -> tuple[dict[str, list[int]], int]:
        with pipe.bind(records).run("numpy") as loader:
            got = {b.keys[0]: [frame_number(f) for f in np.array(b["video"][0])] for b in loader}
            return got, loader.stats()["bytes_read"]

    got, first = run()
    assert got == {name: [150, 152, 154, 156] for name in sizes}
    # One GOP (about 24 of 240 frames: ~10% of each file) plus the header and the
    # read blocks' rounding: well below the files.
    assert first < 0.2 * sum(sizes.values()), (first, sizes)
    # The index and the header are kept: a second pass fetches the GOPs only.
    got, again = run()
    assert got == {name: [150, 152, 154, 156] for name in sizes} and again <= first, (again, first)
    info = dataio.video_info(records[1]["video"])
    assert info["frames"] == 240 and info["width"] == 320 and info["size"] == sizes["moov_at_end.mp4"]


def test_a_loader_asks_for_an_objects_size_once_not_once_per_epoch(s3: S3Server, tmp_path: Path) -> None:
    """A clip per file per epoch was a HEAD per clip (the size and version of
    the object, for the reader and the index key); a loader now keeps them for
    all its epochs, and a new loader asks again."""
    require("dataio_video", "the dataio-video plugin (packages/dataio-video, built by nox -s tests)")
    from media import frame_number, write_video

    proxy = CuttableProxy(s3.port)
    configure("s3", f"http://127.0.0.1:{proxy.port}")
    prefix = f"heads-{uuid.uuid4().hex[:8]}"
    records = []
    for i in range(3):
        path = write_video(tmp_path / f"v{i}.mp4", 120, gop=12, width=320, height=240, noise=True)
        s3.client.upload_file(str(path), s3.bucket, f"{prefix}/v{i}.mp4")
        records.append({"key": f"v{i}", "video": f"s3://{s3.bucket}/{prefix}/v{i}.mp4"})
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=4, clip="random"), dataio.batch(3))

    loader = pipe.bind(records).run("numpy", seed=7)
    starts = []
    for epoch in range(3):
        loader.set_epoch(epoch)
        gets = proxy.requests["GET"]
        for b in loader:
            starts += [frame_number(np.array(clip[0])) for clip in b["video"]]
        assert proxy.requests["GET"] > gets  # every epoch reads its clips
    loader.close()
    assert len(starts) == 9 and len(set(starts)) > 1
    assert proxy.requests["HEAD"] == 3, proxy.requests  # one per object, not per clip

    with pipe.bind(records).run("numpy", seed=7) as again:
        assert sum(len(b.keys) for b in again) == 3
    assert proxy.requests["HEAD"] == 6, proxy.requests
