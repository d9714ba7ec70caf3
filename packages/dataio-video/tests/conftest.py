"""Media for the tests, written once per session by FFmpeg (PyAV's build,
and the Debian ffmpeg CLI for what PyAV's does not write)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from media import write_audio, write_video


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


# name -> (frames, how it is written)
VIDEOS = {
    # H.264 with B-frames, the moov atom first (faststart) and an edit list
    "h264_bframes.mp4": (60, dict(gop=12, bframes=3)),
    # the moov atom at the end of the file
    "moov_at_end.mp4": (50, dict(gop=10, bframes=2, faststart=False)),
    # one keyframe every 250 frames, B-frames, open GOPs
    "long_gop.mp4": (300, dict(gop=250, bframes=3, options={"x264-params": "open-gop=1"})),
    # variable frame rate: irregular timestamps (ms)
    "vfr.mp4": (40, dict(gop=10, bframes=2, pts=[i * 40 + (i % 3) * 13 + (i // 10) * 100 for i in range(40)])),
    "h264.mkv": (45, dict(gop=15, bframes=2)),
    "vp9.webm": (30, dict(codec="libvpx-vp9", gop=10)),
    "hevc.mp4": (30, dict(codec="libx265", gop=10, bframes=2)),
    "mpeg4.avi": (30, dict(codec="mpeg4", gop=10, bframes=0)),
    "with_audio.mp4": (50, dict(gop=10, bframes=2, audio=True)),
}


@pytest.fixture(scope="session")
def videos(media_dir: Path) -> dict[str, tuple[Path, int]]:
    out = {}
    for name, (frames, kw) in VIDEOS.items():
        out[name] = (write_video(media_dir / name, frames, **kw), frames)  # type: ignore[arg-type]
    # AV1 through the Debian ffmpeg CLI (libaom), decoded by libdav1d or libaom.
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg, "the tests need the ffmpeg CLI (nox installs Debian's ffmpeg)"
    av1 = media_dir / "av1.mkv"
    frames_dir = media_dir / "av1_src.mp4"
    write_video(frames_dir, 20, codec="libx264", gop=5, bframes=0)
    subprocess.run([ffmpeg, "-v", "error", "-y", "-i", str(frames_dir), "-c:v", "libaom-av1", "-cpu-used", "8",
                    "-crf", "20", "-g", "5", str(av1)], check=True)
    out["av1.mkv"] = (av1, 20)
    return out


AUDIO = {
    "tone.wav": "pcm_s16le",
    "tone.flac": "flac",
    "tone.mp3": "libmp3lame",
    "tone.m4a": "aac",
    "tone.ogg": "libvorbis",
    "tone.opus": "libopus",
}


@pytest.fixture(scope="session")
def audios(media_dir: Path) -> dict[str, Path]:
    out = {}
    for name, codec in AUDIO.items():
        rate = 48000 if codec == "libopus" else 44100
        if codec == "libvorbis":  # not in PyAV's build: Debian's ffmpeg from the wav
            out[name] = media_dir / name
            subprocess.run([shutil.which("ffmpeg") or "ffmpeg", "-v", "error", "-y", "-i", str(out["tone.wav"]),
                            "-c:a", "libvorbis", str(out[name])], check=True)
            continue
        out[name] = write_audio(media_dir / name, 3.0, codec=codec, rate=rate)
    return out
