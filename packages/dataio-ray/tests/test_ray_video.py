"""dataio-video on a two-node Ray cluster: random clips (with the image
chain on them) and random audio windows are the local run's, bit for bit,
and a checkpoint taken on Ray resumes locally."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from _data import snapshot

import dataio
from dataio.testing import require
from dataio_ray import RayExecutor

sys.path.insert(0, str(Path(__file__).parents[2] / "dataio-video" / "tests"))


@pytest.fixture
def two_workers(ray_cluster: Any) -> Any:
    ex = RayExecutor(num_workers=2)
    yield ex
    ex.close()


def test_clips_and_audio_windows_on_ray_are_the_local_run(two_workers: RayExecutor, tmp_path: Path) -> None:
    require("dataio_video", "the dataio-video plugin (packages/dataio-video, built by nox -s tests)")
    from media import write_video

    records = []
    for i in range(6):
        path = write_video(tmp_path / f"v{i}.mp4", 30 + 7 * i, gop=6 + i, bframes=2, audio=True)
        records.append({"key": f"v{i}", "video": str(path)})
    pipe = dataio.pipeline(
        dataio.slot("video").decode_video(num_frames=4, stride=2, clip="random").random_resized_crop(32, 32).hflip(),
        dataio.slot("sound", field="video").decode_audio(sample_rate=16000, mono=True, duration=0.25, offset="random"),
        dataio.batch(2),
    )
    with pipe.bind(records).run("numpy", seed=7) as loader:
        want = snapshot(loader)
    assert len(want) == 3
    with pipe.bind(records).run("numpy", seed=7, executor=two_workers) as loader:
        assert snapshot(loader) == want
    loader = pipe.bind(records).run("numpy", seed=7, executor=two_workers)
    it = iter(loader)
    head = [next(it)]
    state = loader.state_dict()
    loader.close()
    with pipe.bind(records).run("numpy", seed=7) as resumed:
        resumed.load_state_dict(state)
        assert snapshot(head) + snapshot(resumed) == want
