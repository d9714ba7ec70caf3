"""Memory over a long run: RSS of one process decoding 100,000 video clips
and 100,000 audio windows with dataio-video.

    python benchmarks/video_soak.py [--clips 100000] [--windows 100000] [--files 64]

Leaks in a decoder path grow with the number of clips (a demuxer, a codec
context, frames and an index per call), not with their pixels, so the input
is small and the count is the issue's: ``--files`` H.264 mp4 files (160x120,
12 s at 25 fps, a keyframe every 50 frames, 2 B-frames) written with PyAV,
and as many flac/mp3 files (8 s, 44.1 kHz stereo). The loader draws random
16-frame clips (stride 2, resized to 112x112, normalized) and random
1-second windows (16 kHz mono) over many epochs, a new seed each epoch, so
every clip is a fresh draw; the in-memory index cache and the tokenless
frame pools reach their steady size in the first epochs.

Prints RSS (from /proc/self/status, between epochs with the loader closed)
every ``--every`` clips and, at the end, over the checkpoints past warm-up
(10% of the run): first and last RSS, their range, and the least-squares
slope in MiB per 1,000 clips. Memory flat means a slope of about zero.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "dataio-video" / "tests"))


def rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def soak(pipe: object, recs: list[dict[str, str]], total: int, every: int, slot: str) -> list[tuple[int, float]]:
    """Runs epochs (a new seed each) until ``total`` samples; RSS is taken
    between epochs, with the loader closed, so batches in flight do not blur
    it."""
    import dataio

    assert isinstance(pipe, dataio.Pipeline)
    points: list[tuple[int, float]] = []
    done, epoch, next_mark = 0, 0, 0
    t0 = time.perf_counter()
    while done < total:
        with pipe.bind(recs).run("numpy", seed=1000 + epoch) as loader:
            for b in loader:
                assert b[slot].shape[0] == len(b.keys)
                done += len(b.keys)
        epoch += 1
        if done >= next_mark or done >= total:
            points.append((done, rss_mib()))
            print(f"  {slot}: {done:7,d} done  RSS {points[-1][1]:7.1f} MiB  "
                  f"({done / (time.perf_counter() - t0):6.0f}/s)", flush=True)
            next_mark += every
    return points


def report(name: str, points: list[tuple[int, float]], total: int) -> None:
    after = [p for p in points if p[0] >= total // 10]
    warm, end = after[0], after[-1]
    n = len(after)
    mx = sum(p[0] for p in after) / n
    my = sum(p[1] for p in after) / n
    slope = sum((p[0] - mx) * (p[1] - my) for p in after) / max(1e-9, sum((p[0] - mx) ** 2 for p in after))
    print(f"{name}: RSS {warm[1]:.1f} MiB after {warm[0]:,} (warm), {end[1]:.1f} MiB after {end[0]:,}, "
          f"range {min(p[1] for p in after):.1f}-{max(p[1] for p in after):.1f} MiB; "
          f"least-squares slope {slope * 1000:+.3f} MiB per 1,000 {name} "
          f"({slope * 1000 * 100:+.1f} MiB per 100,000)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=100_000)
    ap.add_argument("--windows", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--every", type=int, default=5_000)
    args = ap.parse_args()

    from media import write_audio, write_video

    import dataio

    tmp = Path(tempfile.mkdtemp(prefix="dataio-soak-"))
    t = time.perf_counter()
    videos = [write_video(tmp / f"v{i:03d}.mp4", 300, gop=50, bframes=2, width=160, height=120)
              for i in range(args.files)]
    audios = [write_audio(tmp / f"a{i:03d}.{'flac' if i % 2 else 'mp3'}", 8.0,
                          codec="flac" if i % 2 else "libmp3lame", rate=44100) for i in range(args.files)]
    print(f"input: {len(videos)} videos, {len(audios)} audio files in {time.perf_counter() - t:.0f} s; "
          f"RSS at start {rss_mib():.1f} MiB", flush=True)

    video = dataio.pipeline(
        dataio.slot("v").decode_video(num_frames=16, stride=2, clip="random").resize(h=112, w=112).normalize(),
        dataio.batch(32),
    )
    audio = dataio.pipeline(
        dataio.slot("a").decode_audio(sample_rate=16000, mono=True, duration=1.0, offset="random"),
        dataio.batch(64),
    )
    if args.clips:
        report("clips", soak(video, [{"key": p.name, "v": str(p)} for p in videos], args.clips, args.every, "v"),
               args.clips)
    if args.windows:
        report("windows", soak(audio, [{"key": p.name, "a": str(p)} for p in audios], args.windows, args.every,
                               "a"), args.windows)


if __name__ == "__main__":
    main()
