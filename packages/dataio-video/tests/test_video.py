"""decode_video and the video verbs on media FFmpeg wrote, every frame
carrying its number: frame exactness is read back, not assumed."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from media import frame_number

import dataio
from dataio.errors import DecodeError, RowError

ALL = ["h264_bframes.mp4", "moov_at_end.mp4", "long_gop.mp4", "vfr.mp4", "h264.mkv", "vp9.webm", "hevc.mp4",
       "mpeg4.avi", "with_audio.mp4", "av1.mkv"]


def numbers(clip: np.ndarray) -> list[int]:
    return [frame_number(f) for f in clip]


def pyav_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


@pytest.mark.parametrize("name", ALL)
def test_every_frame_in_presentation_order(videos: dict[str, tuple[Path, int]], name: str) -> None:
    path, n = videos[name]
    info = dataio.video_info(str(path))
    assert info["frames"] == n and info["has_video"] and (info["width"], info["height"]) == (128, 96), info
    assert info["keyframes"][0] == 0 and all(0 <= k < n for k in info["keyframes"]), info
    clip = dataio.read_video(str(path))
    assert clip.shape == (n, 96, 128, 3) and clip.dtype == np.uint8
    assert numbers(clip) == list(range(n))


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "long_gop.mp4", "vfr.mp4", "h264.mkv", "vp9.webm", "hevc.mp4"])
def test_the_same_pixels_as_pyav(videos: dict[str, tuple[Path, int]], name: str) -> None:
    path, n = videos[name]
    ours = dataio.read_video(str(path)).astype(np.int16)
    theirs = np.stack(pyav_frames(path)).astype(np.int16)
    assert ours.shape == theirs.shape
    diff = np.abs(ours - theirs)
    # The same decoder; only the YUV -> RGB conversion may round differently.
    assert diff.mean() < 1.5 and np.percentile(diff, 99.9) <= 8, (diff.mean(), diff.max())


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "moov_at_end.mp4", "long_gop.mp4", "vfr.mp4", "h264.mkv", "mpeg4.avi"])
def test_clips_anywhere_are_exact(videos: dict[str, tuple[Path, int]], name: str) -> None:
    path, n = videos[name]
    rng = np.random.default_rng(5)
    for _ in range(12):
        stride = int(rng.integers(1, 4))
        t = int(rng.integers(1, 6))
        start = int(rng.integers(0, n - (t - 1) * stride))
        clip = dataio.read_video(str(path), start_frame=start, num_frames=t, stride=stride)
        assert numbers(clip) == [start + k * stride for k in range(t)], (start, t, stride)


def test_video_info(videos: dict[str, tuple[Path, int]]) -> None:
    info = dataio.video_info(str(videos["h264_bframes.mp4"][0]))
    assert info["codec"] == "h264" and info["fps"] == pytest.approx(25.0)
    assert info["duration"] == pytest.approx(60 / 25, rel=0.02) and info["keyframes"] == [0, 12, 24, 36, 48]
    assert info["audio"] == []
    with_audio = dataio.video_info(str(videos["with_audio.mp4"][0]))
    (a,) = with_audio["audio"]
    assert a["codec"] == "aac" and a["sample_rate"] == 48000 and a["channels"] == 2
    vfr = dataio.video_info(str(videos["vfr.mp4"][0]))
    assert vfr["frames"] == 40 and vfr["codec"] == "h264"
    assert dataio.video_info(str(videos["hevc.mp4"][0]))["codec"] == "hevc"
    assert dataio.video_info(str(videos["vp9.webm"][0]))["codec"] == "vp9"


def records(videos: dict[str, tuple[Path, int]], names: list[str]) -> list[dict[str, Any]]:
    return [{"key": name, "video": str(videos[name][0])} for name in names]


def run(pipe: Any, recs: list[dict[str, Any]], **kw: Any) -> dict[str, np.ndarray]:
    with pipe.bind(recs).run("numpy", **kw) as loader:
        return {k: np.array(x) for b in loader for k, x in zip(b.keys, b["video"])}


MP4S = ["h264_bframes.mp4", "moov_at_end.mp4", "long_gop.mp4", "vfr.mp4", "h264.mkv", "with_audio.mp4"]


def test_random_clips_in_a_pipeline_are_keyed_and_batch(videos: dict[str, tuple[Path, int]]) -> None:
    # num_frames and stride by position, in the order the op declares them.
    pipe = dataio.pipeline(dataio.slot("video").decode_video(5, 2, clip="random"), dataio.batch(3))
    recs = records(videos, MP4S)
    a = run(pipe, recs, seed=11)
    assert a.keys() == {r["key"] for r in recs}
    starts = {}
    for k, clip in a.items():
        got = numbers(clip)
        assert clip.shape == (5, 96, 128, 3)
        assert got == [got[0] + 2 * i for i in range(5)] and got[-1] < videos[k][1], (k, got)
        starts[k] = got[0]
    b = run(pipe, recs, seed=11, concurrency=1)
    assert all(np.array_equal(a[k], b[k]) for k in a), "the same seed gives the same clips on any concurrency"
    c = run(pipe, recs, seed=12)
    assert any(numbers(c[k])[0] != starts[k] for k in a), "another seed draws other starts"
    with pipe.bind(recs).run("numpy", seed=11) as loader:
        e0 = {k: numbers(np.array(x))[0] for bt in loader for k, x in zip(bt.keys, bt["video"])}
        e1 = {k: numbers(np.array(x))[0] for bt in loader for k, x in zip(bt.keys, bt["video"])}
    assert e0 == starts and e1 != e0, "each epoch draws again"


def test_start_center_fps_and_padding(videos: dict[str, tuple[Path, int]]) -> None:
    path = str(videos["h264_bframes.mp4"][0])  # 60 frames at 25 fps
    recs = [{"key": "a", "video": path}]

    def one(**params: Any) -> list[int]:
        pipe = dataio.pipeline(dataio.slot("video").decode_video(**params), dataio.batch(1))
        return numbers(run(pipe, recs)["a"])

    assert one(num_frames=3, clip="start") == [0, 1, 2]
    assert one(num_frames=4, clip="center") == [28, 29, 30, 31]
    assert one(num_frames=3, start_frame=40, stride=5) == [40, 45, 50]
    assert one(num_frames=3, start_time=1.0) == [25, 26, 27]
    # fps resamples by timestamps: 12.5 fps from 25 fps takes every other frame.
    assert one(num_frames=4, clip="start", fps=12.5) == [0, 2, 4, 6]
    assert one(num_frames=3, clip="start", fps=50.0) == [0, 0, 1]
    # Past the end: the last frame repeats, or an error names the frames.
    assert one(num_frames=4, start_frame=57) == [57, 58, 59, 59]
    with pytest.raises(RowError) as e:
        one(num_frames=4, start_frame=57, pad="error")
    assert "57" in str(e.value) and e.value.op == "decode_video" and e.value.uri == path, e.value
    with pytest.raises(RowError, match="start_frame=70 is past the last frame"):
        one(num_frames=2, start_frame=70)


def test_vfr_fps_follows_timestamps(videos: dict[str, tuple[Path, int]]) -> None:
    path, n = videos["vfr.mp4"]
    pts = [i * 40 + (i % 3) * 13 + (i // 10) * 100 for i in range(n)]
    recs = [{"key": "a", "video": str(path)}]
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=8, clip="start", fps=10.0), dataio.batch(1))
    got = numbers(run(pipe, recs)["a"])
    # Frame shown at t = k / 10 s: the last whose timestamp is <= t.
    want = [max(i for i in range(n) if pts[i] <= k * 100) for k in range(8)]
    assert got == want


def test_clip_transforms_draw_once_per_clip(videos: dict[str, tuple[Path, int]]) -> None:
    recs = records(videos, MP4S)
    plain = dataio.pipeline(dataio.slot("video").decode_video(num_frames=4, clip="start"), dataio.batch(2))
    flipped = dataio.pipeline(dataio.slot("video").decode_video(num_frames=4, clip="start").hflip(p=0.5), dataio.batch(2))
    a, b = run(plain, recs, seed=3), run(flipped, recs, seed=3)
    kinds = set()
    for k in a:
        same = [np.array_equal(a[k][i], b[k][i]) for i in range(4)]
        mirrored = [np.array_equal(a[k][i][:, ::-1], b[k][i]) for i in range(4)]
        assert all(same) or all(mirrored), (k, same, mirrored)
        kinds.add(all(same))
    assert kinds == {True, False}, "p=0.5 over six clips flips some, not all"
    chain = dataio.pipeline(
        dataio.slot("video").decode_video(num_frames=4, stride=2).random_resized_crop(32, 32).normalize("imagenet"),
        dataio.batch(3),
    )
    with chain.bind(recs).run("numpy", seed=1) as loader:
        batch = next(iter(loader))
    assert batch["video"].shape == (3, 4, 3, 32, 32) and batch["video"].dtype == np.float32
    # layout="CTHW": the same numbers, channels first across the clip.
    cthw = dataio.pipeline(
        dataio.slot("video").decode_video(num_frames=4, stride=2).random_resized_crop(32, 32)
        .normalize("imagenet", layout="CTHW"),
        dataio.batch(3),
    )
    with cthw.bind(recs).run("numpy", seed=1) as loader:
        channels_first = next(iter(loader))
    assert channels_first["video"].shape == (3, 3, 4, 32, 32)
    assert np.array_equal(channels_first["video"], batch["video"].transpose(0, 2, 1, 3, 4))


def test_resume_mid_epoch_equals_an_uninterrupted_run(videos: dict[str, tuple[Path, int]]) -> None:
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=3, stride=3).hflip(), dataio.batch(2))
    recs = records(videos, MP4S)
    whole = run(pipe, recs, seed=9)
    with pipe.bind(recs).run("numpy", seed=9) as loader:
        it = iter(loader)
        first = next(it)
        state = loader.state_dict()
    seen = {k: np.array(x) for k, x in zip(first.keys, first["video"])}
    with pipe.bind(recs).run("numpy", seed=9) as loader:
        loader.load_state_dict(state)
        for b in loader:
            for k, x in zip(b.keys, b["video"]):
                assert k not in seen
                seen[k] = np.array(x)
    assert seen.keys() == whole.keys() and all(np.array_equal(seen[k], whole[k]) for k in whole)


def test_webdataset_tar_members(videos: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    shard = tmp_path / "videos-000.tar"
    names = ["h264_bframes.mp4", "h264.mkv", "moov_at_end.mp4"]
    with tarfile.open(shard, "w") as tar:
        for i, name in enumerate(names):
            # The container is probed from the bytes, whatever the member's suffix.
            tar.add(videos[name][0], arcname=f"s{i:03d}.mp4")
            meta = tmp_path / f"s{i}.json"
            meta.write_text(json.dumps({"name": name}))
            tar.add(meta, arcname=f"s{i:03d}.json")
    ds = dataio.tar_records(str(shard))
    pipe = dataio.pipeline(dataio.slot("mp4").decode_video(num_frames=3, clip="start", stride=4), dataio.batch(1))
    with pipe.bind(ds).run("numpy") as loader:
        got = {b.keys[0]: numbers(np.array(b["mp4"][0])) for b in loader}
    assert got == {f"s{i:03d}": [0, 4, 8] for i in range(3)}, got


@pytest.mark.parametrize(
    "content, what",
    [(b"", "empty"), (b"\x00\x00\x00\x18ftypmp42" + b"\x07" * 300, "truncated or unfinished mp4: it has no moov atom"), (bytes(range(256)) * 40, "")],
)
def test_bad_files_are_typed_errors_and_skip_goes_on(videos: dict[str, tuple[Path, int]], tmp_path: Path,
                                                     content: bytes, what: str) -> None:
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(content)
    recs = records(videos, ["h264_bframes.mp4", "h264.mkv"]) + [{"key": "bad", "video": str(bad)}]
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=2), dataio.batch(1))
    with pytest.raises(RowError) as e:
        run(pipe, recs)
    assert e.value.key == "bad" and e.value.slot == "video" and e.value.op == "decode_video", e.value
    assert e.value.uri == str(bad) and what in str(e.value), e.value
    got = run(pipe, recs, on_failure="skip")
    assert set(got) == {"h264_bframes.mp4", "h264.mkv"}


def test_truncated_audio_only_and_oversized_inputs(videos: dict[str, tuple[Path, int]], audios: dict[str, Path],
                                                   tmp_path: Path) -> None:
    src = videos["long_gop.mp4"][0].read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(src[: len(src) * 2 // 3])  # faststart: the moov is whole, the samples are not
    for call in (lambda: dataio.read_video(str(cut), start_frame=280, num_frames=4),
                 lambda: dataio.read_video(str(cut), num_frames=4), lambda: dataio.video_info(str(cut))):
        with pytest.raises(DecodeError) as e:
            call()
        assert f"{cut}: truncated: the file has {cut.stat().st_size} bytes" in str(e.value), e.value
    # Cut before its moov (written last without faststart): named as such, with the file.
    slow = tmp_path / "slow.mp4"
    subprocess.run([shutil.which("ffmpeg") or "ffmpeg", "-v", "error", "-y", "-i", str(videos["long_gop.mp4"][0]),
                    "-c", "copy", str(slow)], check=True)
    slow.write_bytes(slow.read_bytes()[: slow.stat().st_size // 2])
    with pytest.raises(DecodeError, match=f"{slow}: truncated or unfinished mp4: it has no moov atom"):
        dataio.video_info(str(slow))
    with pytest.raises(DecodeError, match="no video stream.*only audio"):
        dataio.read_video(str(audios["tone.flac"]), num_frames=2)
    recs = [{"key": "a", "video": str(videos["h264_bframes.mp4"][0])}]
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=2, max_pixels=100), dataio.batch(1))
    with pytest.raises(dataio.errors.DataioError, match="max_pixels=100"):
        run(pipe, recs)
    with pytest.raises(dataio.errors.PlanError, match="num_frames"):
        dataio.pipeline(dataio.slot("video").decode_video(num_frames="many"), dataio.batch(1))


def test_memory_stays_flat_over_many_clips(videos: dict[str, tuple[Path, int]]) -> None:
    recs = records(videos, MP4S) * 40
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=4, stride=2), dataio.batch(8))

    def epoch(seed: int) -> int:
        n = 0
        with pipe.bind(recs).run("numpy", seed=seed) as loader:
            for b in loader:
                n += len(b.keys)
        return n

    for s in range(3):
        epoch(s)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    total = sum(epoch(10 + s) for s in range(6))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert total == 6 * len(recs)
    # 1,440 clips more (each opening a demuxer and a decoder): no leak.
    assert grown_kib < 32 * 1024, grown_kib


def test_a_plan_naming_the_op_without_the_plugin_names_the_package() -> None:
    from dataio.transforms import plugin_package_hint

    hint = plugin_package_hint("decode_video")
    assert "dataio-video" in hint and "pip install" in hint
    assert plugin_package_hint("decode_pgm") == ""


def test_per_record_start_from_a_field(videos: dict[str, tuple[Path, int]]) -> None:
    path = str(videos["long_gop.mp4"][0])
    recs = [{"key": "a", "video": path, "start": 7}, {"key": "b", "video": path, "start": 251},
            {"key": "c", "video": path, "start": 120}]
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=3, stride=2, start_frame=dataio.col("start")),
                           dataio.batch(3))
    got = {k: numbers(v) for k, v in run(pipe, recs).items()}
    assert got == {"a": [7, 9, 11], "b": [251, 253, 255], "c": [120, 122, 124]}
    times = [{"key": "t", "video": path, "at": 2.0}]
    pipe = dataio.pipeline(dataio.slot("video").decode_video(num_frames=2, start_time=dataio.col("at")), dataio.batch(1))
    assert numbers(run(pipe, times)["t"]) == [50, 51]
    with pytest.raises(RowError, match=r"no field 'start'|no field \"start\""):
        run(dataio.pipeline(dataio.slot("video").decode_video(num_frames=2, start_frame=dataio.col("start")),
                            dataio.batch(1)), [{"key": "x", "video": path}])


def test_audio_true_adds_the_clips_audio(videos: dict[str, tuple[Path, int]]) -> None:
    from media import tone

    path, n = videos["with_audio.mp4"]  # 25 fps, a 48 kHz stereo tone
    recs = [{"key": f"r{i}", "video": str(path)} for i in range(5)]
    pipe = dataio.pipeline(
        dataio.slot("video").decode_video(num_frames=5, stride=2, audio={"sample_rate": 16000, "mono": False}),
        dataio.batch(5),
    )
    assert [s.name for s in pipe.slots] == ["video", "video_audio"]
    with pipe.bind(recs).run("numpy", seed=2) as loader:
        b = next(iter(loader))
    # 10 frames at 25 fps: 0.4 s at 16 kHz, for every clip.
    assert b["video_audio"].shape == (5, 2, 6400) and b["video_audio"].dtype == np.float32
    starts = set()
    for clip, sound in zip(b["video"], b["video_audio"]):
        first = numbers(np.array(clip))[0]
        starts.add(first)
        t = first / 25 + np.arange(6400) / 16000
        err = np.abs(sound[0] - tone(t, 0))
        assert err[400:-400].mean() < 0.05, (first, err.mean())  # the window is the clip's time
    assert len(starts) > 1, "random clips, each with its own audio"
    with pytest.raises(dataio.errors.PlanError, match="audio= takes sample_rate, mono"):
        dataio.pipeline(dataio.slot("video").decode_video(audio={"rate": 1}), dataio.batch(1))


def test_a_new_process_finds_the_index_kept_on_disk(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from media import write_video

    video = write_video(tmp_path / "kept.mkv", 120, gop=30, noise=True)
    script = (
        "import dataio, sys\n"
        "p = dataio.pipeline(dataio.slot('v').decode_video(num_frames=2, start_frame=100), dataio.batch(1))\n"
        "with p.bind([{'v': sys.argv[1]}]).run('numpy') as l:\n"
        "    b = next(iter(l)); s = l.stats()\n"
        "print(s['bytes_read'], b['v'].shape)\n"
    )
    env = dict(os.environ, DATAIO_VIDEO_INDEX_DIR=str(tmp_path / "idx"))

    def bytes_read() -> int:
        r = subprocess.run([sys.executable, "-c", script, str(video)], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[0])

    size = video.stat().st_size
    first = bytes_read()
    # An mkv's index is a demux pass over the whole file: the first process reads it all.
    assert first >= size, (first, size)
    assert [p.suffix for p in (tmp_path / "idx").iterdir()] == [".vidx"]
    assert (tmp_path / "idx").stat().st_mode & 0o777 == 0o700
    # The next process reads only the clip's GOP.
    second = bytes_read()
    assert second < 0.6 * size, (second, size)
    # A changed file (new mtime) is indexed anew, never served the old index.
    os.utime(video, (video.stat().st_atime, video.stat().st_mtime + 10))
    assert bytes_read() >= size


@pytest.mark.parametrize("width", [322, 500, 854, 642])
def test_every_column_of_a_width_not_a_multiple_of_8_is_decoded(tmp_path: Path, width: int) -> None:
    """swscale's SIMD RGB converters work in blocks of 8 pixels; written
    straight into rows of exactly 3 * width bytes they left the last
    width % 8 columns unwritten (whatever the pooled buffer held: in a
    resumed run another clip's pixels, or uninitialised memory). Every
    pixel must be the frame's, against PyAV's conversion, across clips
    that reuse the same pooled buffers."""
    from media import write_video

    path = write_video(tmp_path / f"w{width}.mp4", 12, width=width, height=90, gop=4, bframes=0, noise=True)
    ref = pyav_frames(path)
    pipe = dataio.pipeline(dataio.slot("x").decode_video(num_frames=4, clip="random"), dataio.batch(1))
    with pipe.bind([{"x": str(path)}] * 6).run("numpy", seed=1) as loader:
        for batch in loader:
            clip = np.asarray(batch["x"][0])
            for frame in clip:
                want = ref[frame_number(frame)]
                diff = np.abs(frame.astype(int) - want.astype(int))
                assert diff.max() <= 2, f"columns {sorted(set(np.nonzero(diff > 2)[1].tolist()))[:8]} differ"


RESUME_SCRIPT = """
import json, sys, zlib
import numpy as np
import dataio
paths, state_file = json.loads(sys.argv[1]), sys.argv[2]
pipe = dataio.pipeline(
    dataio.slot("x").decode_video(num_frames=8, clip="random").resize(h=56, w=56).normalize("imagenet"),
    dataio.slot("label").decode_bytes(),
    dataio.batch(3),
)
rows = [{"x": p, "label": str(i % 3).encode()} for i, p in enumerate(paths)]
out = []
with pipe.bind(rows).run("numpy", seed=7, on_failure="skip") as loader:
    if state_file != "-":
        loader.load_state_dict(json.load(open(state_file)))
    for _ in range(2 if state_file == "-" else 3):
        out.append([(list(b.keys), zlib.crc32(np.ascontiguousarray(b["x"]).tobytes())) for b in loader])
print(json.dumps(out))
"""


def test_a_resumed_video_pipeline_runs_exactly_in_fresh_processes(tmp_path: Path) -> None:
    """Issue 43's report: a video pipeline resumed mid-epoch in a new process
    aborted with heap corruption in most runs. 11 clips of different sizes
    (widths not multiples of 8 among them); the state after two batches of
    epoch 0; 20 fresh processes with one CPU thread and 20 with the default
    each resume and run two more epochs: all exit 0 with the batches of the
    uninterrupted run, pixel for pixel (a CRC of every batch)."""
    import json
    import os
    import subprocess
    import sys

    from media import write_video

    sizes = [(128, 96), (322, 182), (160, 90), (500, 280), (96, 64), (240, 176), (170, 96), (208, 128), (112, 80), (426, 240), (128, 128)]
    paths = [str(write_video(tmp_path / f"c{i}.mp4", 20 + 3 * i, width=w, height=h, gop=6, bframes=2)) for i, (w, h) in enumerate(sizes)]
    script = tmp_path / "resume.py"
    script.write_text(RESUME_SCRIPT)
    env = {**os.environ, "DATAIO_CACHE_DIR": str(tmp_path / "cache")}

    def run(state: str, threads: str | None) -> Any:
        e = dict(env)
        if threads is not None:
            e["DATAIO_CPU_THREADS"] = threads
        p = subprocess.run([sys.executable, str(script), json.dumps(paths), state], capture_output=True, text=True, env=e, timeout=120)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout)

    full = run("-", None)  # epochs 0 and 1, uninterrupted (and indexes kept on disk)
    pipe_state = tmp_path / "state.json"
    save = RESUME_SCRIPT.split("out = []")[0] + (
        "with pipe.bind(rows).run('numpy', seed=7, on_failure='skip') as loader:\n"
        "    it = iter(loader); next(it); next(it)\n"
        f"    json.dump(loader.state_dict(), open({str(pipe_state)!r}, 'w'))\n"
    )
    saver = tmp_path / "save.py"
    saver.write_text(save)
    p = subprocess.run([sys.executable, str(saver), json.dumps(paths), "-"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    for threads in ("1", None):
        for _ in range(20):
            resumed = run(str(pipe_state), threads)
            # The rest of epoch 0, then epoch 1 whole, each as the uninterrupted run had them.
            assert resumed[0] == full[0][2:] and resumed[1] == full[1]
            assert len(resumed[2]) == len(full[1])


def test_an_image_op_after_a_decoder_declaring_another_output_is_refused_when_built() -> None:
    # decode_audio declares float32 [C, N]: resize cannot take it, and the plan says so before any read.
    with pytest.raises(dataio.errors.PlanError, match=r"op resize: needs a uint8 image .* decode_audio before it declares float32 with 2"):
        dataio.pipeline(dataio.slot("a").decode_audio(duration=1.0).resize(4, 4), dataio.batch(2))
    # decode_video declares uint8 [T, H, W, 3]: the image ops take it.
    dataio.pipeline(dataio.slot("v").decode_video(4).resize_short(8).center_crop(8, 8), dataio.batch(2))
