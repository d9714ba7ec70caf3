"""Video and audio: dataio-video against PyAV, torchcodec and decord, side by side, in one run.

    python benchmarks/video.py [--quick] [--res 720,1080] [--files 4] [--files-1080 2] [--seconds 20]
                               [--clips 24] [--windows 256] [--rounds 1]
                               [--only dataio,pyav,torchcodec,torchcodec-approx,decord,soundfile]
                               [--no-resize] [--no-audio] [--no-s3] [--json PATH] [--data-dir DIR]

About 5.5 minutes on 2 cores (70 s of it making the input); ``--quick``
(2 files of 12 s at 720p, 8 clips, 64 audio windows, no resize workload)
is a smoke test of about 2 minutes, not a measurement.

Makes its own input in a temp folder (or ``--data-dir``, reused) with the ffmpeg CLI:
``--files`` 720p and ``--files-1080`` 1080p H.264 files (``--seconds`` long, 25 fps, libx264
``veryfast`` CRF 23, one keyframe every 250 frames, 2 B-frames, closed GOPs,
mp4 with the moov atom first), a moving test pattern under temporal noise
(about 3 Mbit/s at 720p, 7 at 1080p, like camera footage), each frame
carrying its own number as 12 black/white blocks of 96x96 pixels along the
top: every clip any tool returns is read back and checked frame by frame
(right frames, in order), at full size and after a resize. Audio: flac and
mp3 files (44.1 kHz stereo, a tone per channel under noise).

Workloads (each tool in its own child process, with the 2 cores of this
machine or whatever ``os.sched_getaffinity`` gives; library imports and
warm-up clips untimed: three batches, so that every tool is in its steady
state when the clock starts: DataLoader workers started and prefetching,
dataio's buffer pool holding its batches):

* **clips** — random 16-frame clips, stride 2 (a 31-frame span), full-size
  RGB uint8 ``[16, H, W, 3]``, batches of 4; ``--clips`` at 720p, as many
  fewer at 1080p as it has more pixels. ``dataio``:
  ``slot("mp4").decode_video(num_frames=16, stride=2, clip="random")``,
  ``batch(4, prefetch=2)``, ``run("torch")`` (the CPU pool has the cores).
  The peers get the **same clips** (file and first frame) dataio drew,
  read from the frame numbers dataio returned, each in a torch DataLoader
  with ``num_workers`` = cores, ``batch_size=4``, ``prefetch_factor=2``,
  persistent workers, the file opened per clip: ``pyav`` (``av.open``,
  ``seek`` to the keyframe before the clip's first frame, decode forward,
  ``to_ndarray("rgb24")`` of the 16 frames wanted; one decoder thread per
  worker); ``torchcodec`` (``VideoDecoder(seek_mode="exact",
  num_ffmpeg_threads=1, dimension_order="NHWC").get_frames_at(indices)``;
  exact mode scans the whole file at every open); ``torchcodec-approx``
  (``seek_mode="approximate"``: no scan, frame positions from the header's
  frame rate); ``decord`` (``VideoReader(num_threads=1).get_batch(indices)``).
* **resize** (each resolution) — the same clips resized to 224x224:
  dataio ``.resize(h=224, w=224)`` on the clip; PyAV ``frame.reformat(224,
  224, "rgb24", BILINEAR)`` (swscale); torchcodec exact then
  ``torch.nn.functional.interpolate(bilinear, antialias=True)`` on the
  uint8 clip in the worker; decord ``VideoReader(width=224, height=224)``.
* **audio** — random 1-second windows at 16 kHz mono of flac and mp3
  files, batches of 32: dataio ``decode_audio(sample_rate=16000, mono=True,
  duration=1.0, offset="random")``; the peers (own uniform offsets) in a
  DataLoader as above: ``soundfile`` (seek, read 1 s at 44.1 kHz, mean of
  the channels, ``torchaudio.transforms.Resample``, built once per worker);
  ``torchcodec`` (``AudioDecoder(sample_rate=16000,
  num_channels=1).get_samples_played_in_range``); ``pyav`` (seek, decode,
  ``AudioResampler("flt", "mono", 16000)``). Before timing, one window at a
  fixed offset from each tool is compared with dataio's (lag by
  cross-correlation, difference after aligning).
* **s3** — the 720p clip workload through dataio over ``s3://``, served by
  nginx on 127.0.0.1 (``dataio_bench.nginx``, as ``benchmarks/s3_reads.py``
  does): bytes and GETs the server sent per clip against the file size,
  first pass (per-file index from the moov) and warm.

Reported: clips/s (median over ``--rounds``; the tools run in turns in
each round), ``× dataio`` (a tool's clips/s over dataio's in the same
round, median over rounds; below 1 is slower), ``cpu s/clip`` (CPU time of
the tool's own processes: dataio's process, or the DataLoader's main
process and workers) and its ratio to dataio's in the same round, bytes
each tool's processes read per clip (``rchar`` of /proc/PID/io around each
decode; dataio also ``loader.stats()["bytes_read"]``) against the mean file
size, and the frame check. Before timing, dataio's index of each resolution's
first file is compared with PyAV's packet key flags; if dataio misses
keyframes, a ``dataio (.mkv remux)`` row runs on the same streams in
Matroska. A tool that is not installed gets a row saying so. Needs the
``ffmpeg`` CLI, ``nginx`` for the s3 workload, and the peers of the
``bench`` group of packages/dataio-video/pyproject.toml (``uv pip install
--group packages/dataio-video/pyproject.toml:bench``; torchcodec 0.8 is the
release for torch 2.9).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

FPS = 25
GOP = 250
NUM_FRAMES = 16
STRIDE = 2
SPAN = (NUM_FRAMES - 1) * STRIDE + 1
BLOCK = 96  # frame-number blocks, pixels
BITS = 12
BATCH = 4
# Untimed clips before each clips cell: prefetch (2) + 1 batches.
WARM_CLIPS = 3 * BATCH
AUDIO_BATCH = 32
AUDIO_RATE = 16000
RESIZE = 224
BUCKET = "bench"
ACCESS_KEY = "AKIADATAIOBENCH00001"
SECRET_KEY = "dataio-bench-secret-not-a-real-one-000000"
REGION = "us-east-1"
RESOLUTIONS = {720: (1280, 720), 1080: (1920, 1080)}
VIDEO_TOOLS = ("dataio", "pyav", "torchcodec", "torchcodec-approx", "decord")
RESIZE_TOOLS = ("dataio", "pyav", "torchcodec", "decord")
AUDIO_TOOLS = ("dataio", "soundfile", "torchcodec", "pyav")


# -- input ----------------------------------------------------------------------


def run_ffmpeg(args: list[str]) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def make_video(path: Path, width: int, height: int, seconds: float, seed: int) -> None:
    """A long-GOP H.264 mp4: test pattern + temporal noise, the frame number in blocks on top."""
    bits = f"lum='if(mod(floor(N/pow(2,floor(X/{BLOCK}))),2),235,16)':cb=128:cr=128"
    graph = (
        f"testsrc2=s={width}x{height}:r={FPS}:d={seconds},noise=alls=12:allf=t+u:all_seed={seed}[bg];"
        f"color=c=black:s={BLOCK * BITS}x{BLOCK}:r={FPS}:d={seconds},format=yuv420p,geq={bits}[bits];"
        "[bg][bits]overlay=0:0:shortest=1,format=yuv420p[v]"
    )
    run_ffmpeg(["-filter_complex", graph, "-map", "[v]", "-c:v", "libx264", "-preset", "veryfast", "-crf", "23",
                "-g", str(GOP), "-keyint_min", str(GOP), "-sc_threshold", "0", "-bf", "2",
                "-movflags", "+faststart", str(path)])


def make_audio(path: Path, seconds: float, seed: int) -> None:
    """44.1 kHz stereo: a tone per channel under white noise; flac or mp3 by the suffix."""
    f0 = 220 + 20 * seed
    expr = (f"0.3*sin(2*PI*{f0}*t)+0.1*(random({seed})*2-1)|"
            f"0.3*sin(2*PI*{f0 * 1.5}*t)+0.1*(random({seed + 100})*2-1)")
    codec = ["-c:a", "flac"] if path.suffix == ".flac" else ["-c:a", "libmp3lame", "-b:a", "192k"]
    run_ffmpeg(["-f", "lavfi", "-i", f"aevalsrc='{expr}':s=44100:d={seconds}", *codec, str(path)])


def frame_numbers(clip: np.ndarray, width: int, height: int) -> list[int]:
    """The numbers drawn into each frame of ``clip`` ([T, H, W, 3], possibly
    resized from ``width`` x ``height``)."""
    t, h, w, _ = clip.shape
    sx, sy = w / width, h / height
    y0 = int(BLOCK * 0.3 * sy)
    y1 = max(int(BLOCK * 0.7 * sy), y0 + 1)
    band = clip[:, y0:y1, :, 1].astype(np.float32)
    nums = np.zeros(t, dtype=np.int64)
    for b in range(BITS):
        x0 = int((BLOCK * b + BLOCK * 0.3) * sx)
        x1 = max(int((BLOCK * b + BLOCK * 0.7) * sx), x0 + 1)
        nums |= (band[:, :, x0:x1].mean(axis=(1, 2)) > 128).astype(np.int64) << b
    return [int(n) for n in nums]


# -- measuring helpers (run in the cells) -------------------------------------


def rchar() -> int:
    """Bytes this process has read through read/pread syscalls so far."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def machine_busy_seconds() -> float:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu(workers: list[int]) -> float:
    """CPU seconds of this process (all its threads) and of the DataLoader workers ``workers``."""
    return time.process_time() + sum(proc_cpu(p) for p in workers)


def worker_pids(dl: Any) -> list[int]:
    it = getattr(dl, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", [])]


def module_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# -- the peers' datasets (DataLoader workers) ---------------------------------


class ClipDataset:
    """Item i: clip ``work[i]`` = (path, first frame) decoded by ``tool``;
    returns (clip tensor [16, H, W, 3] uint8, bytes this worker read for it)."""

    def __init__(self, tool: str, work: list[tuple[str, int]], resize: int | None) -> None:
        self.tool, self.work, self.resize = tool, work, resize

    def __len__(self) -> int:
        return len(self.work)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        import torch

        path, start = self.work[i]
        indices = [start + STRIDE * k for k in range(NUM_FRAMES)]
        before = rchar()
        if self.tool == "pyav":
            clip = torch.from_numpy(pyav_clip(path, indices, self.resize))
        elif self.tool.startswith("torchcodec"):
            from torchcodec.decoders import VideoDecoder

            mode = "approximate" if self.tool == "torchcodec-approx" else "exact"
            dec = VideoDecoder(path, seek_mode=mode, num_ffmpeg_threads=1, dimension_order="NHWC")
            clip = dec.get_frames_at(indices=indices).data
            if self.resize:
                x = torch.nn.functional.interpolate(clip.permute(0, 3, 1, 2), size=(self.resize, self.resize),
                                                    mode="bilinear", antialias=True)
                clip = x.permute(0, 2, 3, 1).contiguous()
        elif self.tool == "decord":
            import decord

            kw = {"width": self.resize, "height": self.resize} if self.resize else {}
            vr = decord.VideoReader(path, num_threads=1, **kw)
            clip = torch.from_numpy(vr.get_batch(indices).asnumpy())
        else:
            raise ValueError(self.tool)
        return clip, rchar() - before


def pyav_clip(path: str, indices: list[int], resize: int | None) -> np.ndarray:
    """Seek to the keyframe at or before the first frame wanted, decode
    forward, convert the frames wanted (constant frame rate: frame k is at
    start + k / fps)."""
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        tb = stream.time_base
        step = 1 / (float(stream.average_rate) * tb)
        t0 = stream.start_time or 0
        wanted = {t0 + round(i * step): slot for slot, i in enumerate(indices)}
        last = max(wanted)
        out: list[np.ndarray | None] = [None] * len(indices)
        container.seek(min(wanted), stream=stream, backward=True, any_frame=False)
        for frame in container.decode(stream):
            slot = wanted.get(frame.pts)
            if slot is not None:
                if resize:
                    frame = frame.reformat(width=resize, height=resize, format="rgb24", interpolation="BILINEAR")
                    out[slot] = frame.to_ndarray()
                else:
                    out[slot] = frame.to_ndarray(format="rgb24")
            if frame.pts is not None and frame.pts >= last:
                break
    missing = [indices[s] for s, a in enumerate(out) if a is None]
    if missing:
        raise RuntimeError(f"{path}: PyAV did not return frames {missing}")
    return np.stack(out)  # type: ignore[arg-type]


class AudioDataset:
    """Item i: a 1-second window of ``work[i]`` = (path, offset s) at 16 kHz mono, float32 [1, 16000]."""

    def __init__(self, tool: str, work: list[tuple[str, float]]) -> None:
        self.tool, self.work = tool, work
        self._resamplers: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.work)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        import torch

        path, offset = self.work[i]
        before = rchar()
        x = torch.from_numpy(audio_window(self.tool, path, offset, self._resamplers))
        return x, rchar() - before


def fit(x: np.ndarray, n: int) -> np.ndarray:
    """[1, m] -> [1, n]: trimmed or zero-padded."""
    if x.shape[1] >= n:
        return np.ascontiguousarray(x[:, :n])
    return np.pad(x, ((0, 0), (0, n - x.shape[1])))


def audio_window(tool: str, path: str, offset: float, cache: dict[int, Any]) -> np.ndarray:
    n = AUDIO_RATE
    if tool == "soundfile":
        import soundfile as sf
        import torch
        import torchaudio

        with sf.SoundFile(path) as f:
            sr = f.samplerate
            f.seek(int(round(offset * sr)))
            x = f.read(sr, dtype="float32", always_2d=True)
        mono = torch.from_numpy(x.mean(axis=1))[None]
        if sr not in cache:
            cache[sr] = torchaudio.transforms.Resample(sr, AUDIO_RATE)
        return fit(cache[sr](mono).numpy(), n)
    if tool == "torchcodec":
        from torchcodec.decoders import AudioDecoder

        dec = AudioDecoder(path, sample_rate=AUDIO_RATE, num_channels=1)
        return fit(dec.get_samples_played_in_range(offset, offset + 1.0).data.numpy(), n)
    if tool == "pyav":
        import av

        with av.open(path) as container:
            stream = container.streams.audio[0]
            container.seek(int(offset / stream.time_base), stream=stream, backward=True, any_frame=False)
            resampler = av.AudioResampler(format="flt", layout="mono", rate=AUDIO_RATE)
            chunks: list[np.ndarray] = []
            first: float | None = None
            have = 0
            skip = 0
            for frame in container.decode(stream):
                if first is None:
                    first = float(frame.pts * stream.time_base) if frame.pts is not None else offset
                    skip = max(0, round((offset - first) * AUDIO_RATE))
                for out in resampler.resample(frame):
                    a = out.to_ndarray().reshape(1, -1)
                    chunks.append(a)
                    have += a.shape[1]
                if have >= skip + n:
                    break
        x = np.concatenate(chunks, axis=1) if chunks else np.zeros((1, 0), np.float32)
        return fit(x[:, skip:], n)
    if tool == "dataio":
        import dataio

        return dataio.read_audio(path, sample_rate=AUDIO_RATE, mono=True, offset=offset, duration=1.0)
    raise ValueError(tool)


# -- cells ----------------------------------------------------------------------


def cell_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    kind = spec["kind"]
    out: dict[str, Any]
    if kind in ("clips", "resize") and spec["tool"] == "dataio":
        out = cell_dataio_clips(spec)
    elif kind in ("clips", "resize"):
        out = cell_peer_clips(spec)
    elif kind == "audio":
        out = cell_audio(spec)
    elif kind == "s3":
        out = cell_s3(spec)
    else:
        raise ValueError(kind)
    Path(spec["out"]).write_text(json.dumps(out))


def check_clip(clip: np.ndarray, spec: dict[str, Any], start: int | None) -> tuple[int, bool]:
    """The clip's first frame and whether all 16 are the right ones."""
    nums = frame_numbers(clip, spec["width"], spec["height"])
    first = nums[0] if start is None else start
    ok = nums == [first + STRIDE * k for k in range(NUM_FRAMES)] and 0 <= first <= spec["frames"] - SPAN
    return nums[0], ok


def cell_dataio_clips(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401  (the torch output; imported before timing)

    import dataio

    files = spec["files"]
    slot = dataio.slot("mp4").decode_video(num_frames=NUM_FRAMES, stride=STRIDE, clip="random")
    if spec["resize"]:
        slot = slot.resize(h=spec["resize"], w=spec["resize"])
    pipe = dataio.pipeline(slot, dataio.batch(BATCH, prefetch=2))
    warm = [{"mp4": files[i % len(files)]} for i in range(WARM_CLIPS)]
    with pipe.bind(warm).run("torch", seed=spec["seed"] + 1000) as loader:
        for _ in loader:
            pass
    records = [{"mp4": files[i % len(files)]} for i in range(spec["clips"])]
    clips: list[tuple[int, int] | None] = [None] * len(records)
    bad = 0
    r0, c0, m0, t0 = rchar(), own_cpu([]), machine_busy_seconds(), time.perf_counter()
    with pipe.bind(records).run("torch", seed=spec["seed"]) as loader:
        for batch in loader:
            data = batch["mp4"].numpy()
            for row, idx in enumerate(batch.indices):
                first, ok = check_clip(data[row], spec, None)
                bad += not ok
                clips[idx] = (idx % len(files), first)
        dt = time.perf_counter() - t0
        stats = loader.stats()
    cpu, busy, read = own_cpu([]) - c0, machine_busy_seconds() - m0, rchar() - r0
    check = ""
    if spec["resize"]:
        check = resize_check(spec, pipe)
    return {"seconds": dt, "clips": len(records), "bad": bad, "work": clips, "cpu": cpu, "busy": busy, "rchar": read,
            "bytes_read": stats["bytes_read"], "decode_seconds": stats["decode_seconds"], "check": check}


def resize_check(spec: dict[str, Any], pipe: Any) -> str:
    """dataio's resized clip against torch's antialiased bilinear resize of
    dataio's full-size clip of the same frames (one clip, untimed)."""
    import torch

    import dataio

    f = spec["files"][0]
    full = dataio.read_video(f, start_frame=0, num_frames=NUM_FRAMES, stride=STRIDE)
    p = dataio.pipeline(dataio.slot("mp4").decode_video(num_frames=NUM_FRAMES, stride=STRIDE, clip="start")
                        .resize(h=spec["resize"], w=spec["resize"]), dataio.batch(1))
    with p.bind([{"mp4": f}]).run("numpy") as loader:
        got = next(iter(loader))["mp4"][0].astype(np.float32)
    ref = torch.nn.functional.interpolate(torch.from_numpy(full).permute(0, 3, 1, 2).float(),
                                          size=(spec["resize"], spec["resize"]), mode="bilinear", antialias=True)
    ref_np = ref.permute(0, 2, 3, 1).numpy()
    d = np.abs(got - ref_np)
    return f"vs torch bilinear antialias: mean |Δ| {d.mean():.2f}, max {d.max():.0f} (0-255)"


def dataloader(dataset: Any, workers: int, batch: int) -> Any:
    import torch

    class Indices(torch.utils.data.Sampler):  # the main process's list, changed between epochs
        def __init__(self) -> None:
            self.indices: list[int] = []

        def __iter__(self) -> Any:
            return iter(list(self.indices))

        def __len__(self) -> int:
            return len(self.indices)

    sampler = Indices()
    dl = torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=sampler, num_workers=workers,
                                     prefetch_factor=2, persistent_workers=True)
    return dl, sampler


def cell_peer_clips(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401

    tool = spec["tool"]
    files = spec["files"]
    work = [(files[f], s) for f, s in spec["work"]]
    warm = [(files[i % len(files)], 0) for i in range(WARM_CLIPS)]
    ds = ClipDataset(tool, warm + work, spec["resize"] or None)
    dl, sampler = dataloader(ds, spec["workers"], BATCH)
    sampler.indices = list(range(len(warm)))
    for _ in dl:
        pass
    sampler.indices = list(range(len(warm), len(warm) + len(work)))
    bad, read = 0, 0
    pids = worker_pids(dl)
    c0, m0, t0 = own_cpu(pids), machine_busy_seconds(), time.perf_counter()
    i = 0
    for clips, nread in dl:
        data = clips.numpy()
        for row in range(data.shape[0]):
            _, ok = check_clip(data[row], spec, work[i][1])
            bad += not ok
            i += 1
        read += int(nread.sum())
    dt = time.perf_counter() - t0
    cpu, busy = own_cpu(pids) - c0, machine_busy_seconds() - m0
    return {"seconds": dt, "clips": len(work), "bad": bad, "cpu": cpu, "busy": busy, "rchar": read}


def cell_audio(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401

    tool, files = spec["tool"], spec["files"]
    n = spec["windows"]
    if tool == "dataio":
        import dataio

        pipe = dataio.pipeline(dataio.slot("audio").decode_audio(sample_rate=AUDIO_RATE, mono=True, duration=1.0,
                                                                 offset="random"),
                               dataio.batch(AUDIO_BATCH, prefetch=2))
        with pipe.bind([{"audio": f} for f in files]).run("torch", seed=spec["seed"] + 1000) as loader:
            for _ in loader:
                pass
        records = [{"audio": files[i % len(files)]} for i in range(n)]
        bad = 0
        r0, c0, m0, t0 = rchar(), own_cpu([]), machine_busy_seconds(), time.perf_counter()
        with pipe.bind(records).run("torch", seed=spec["seed"]) as loader:
            for batch in loader:
                x = batch["audio"]
                bad += sum(1 for row in x if tuple(row.shape) != (1, AUDIO_RATE) or not bool(row.abs().max() > 0.05))
            dt = time.perf_counter() - t0
            stats = loader.stats()
        return {"seconds": dt, "windows": n, "bad": bad, "cpu": own_cpu([]) - c0, "busy": machine_busy_seconds() - m0,
                "rchar": rchar() - r0, "bytes_read": stats["bytes_read"]}
    rng = random.Random(spec["seed"])
    work = [(files[i % len(files)], rng.uniform(0, spec["durations"][i % len(files)] - 1.0)) for i in range(n)]
    warm = [(f, 1.0) for f in files]
    ds = AudioDataset(tool, warm + work)
    dl, sampler = dataloader(ds, spec["workers"], AUDIO_BATCH)
    sampler.indices = list(range(len(warm)))
    for _ in dl:
        pass
    sampler.indices = list(range(len(warm), len(warm) + n))
    bad, read = 0, 0
    pids = worker_pids(dl)
    c0, m0, t0 = own_cpu(pids), machine_busy_seconds(), time.perf_counter()
    for x, nread in dl:
        bad += sum(1 for row in x if tuple(row.shape) != (1, AUDIO_RATE) or not bool(row.abs().max() > 0.05))
        read += int(nread.sum())
    return {"seconds": time.perf_counter() - t0, "windows": n, "bad": bad, "cpu": own_cpu(pids) - c0,
            "busy": machine_busy_seconds() - m0, "rchar": read}


def cell_s3(spec: dict[str, Any]) -> dict[str, Any]:
    import torch  # noqa: F401

    import dataio
    import dataio_s3

    dataio.configure_endpoint("s3", spec["endpoint"])
    dataio.configure_credentials("s3", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, region=REGION)
    dataio_s3.configure("s3", max_retries=2)
    uris = spec["uris"]
    pipe = dataio.pipeline(dataio.slot("mp4").decode_video(num_frames=NUM_FRAMES, stride=STRIDE, clip="random"),
                           dataio.batch(BATCH, prefetch=2))
    out: dict[str, Any] = {}
    for phase, records, seed in (("first", [{"mp4": u} for u in uris], spec["seed"] + 1000),
                                 ("warm", [{"mp4": uris[i % len(uris)]} for i in range(spec["clips"])], spec["seed"])):
        bad = 0
        t0 = time.perf_counter()
        with pipe.bind(records).run("torch", seed=seed, concurrency=16) as loader:
            for batch in loader:
                data = batch["mp4"].numpy()
                for row in range(data.shape[0]):
                    bad += not check_clip(data[row], spec, None)[1]
            stats = loader.stats()
        out[phase] = {"seconds": time.perf_counter() - t0, "clips": len(records), "bad": bad,
                      "bytes_read": stats["bytes_read"], "log_mark": log_size(spec["access_log"])}
    return out


def log_size(path: str) -> int:
    time.sleep(0.3)  # nginx flushes its log buffer every 100 ms
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


# -- the parent: runs the cells, reports --------------------------------------


def availability(tools: set[str]) -> dict[str, str | None]:
    """Why each tool cannot run here (its modules imported in one child process), or None."""
    mods = {"dataio": ["dataio", "dataio_video"], "pyav": ["av"], "torchcodec": ["torchcodec.decoders"],
            "torchcodec-approx": ["torchcodec.decoders"], "decord": ["decord"],
            "soundfile": ["soundfile", "torchaudio"]}
    names = sorted({m for t in tools for m in mods[t]})
    code = ("import importlib, json, sys\nout = {}\nfor m in sys.argv[1:]:\n    try:\n"
            "        importlib.import_module(m); out[m] = None\n    except Exception as e:\n"
            "        out[m] = f'{type(e).__name__}: {e}'.splitlines()[0][:300]\nprint(json.dumps(out))")
    probe = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True)
    try:
        why = json.loads(probe.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        why = {m: f"the import probe failed: {probe.stderr.strip()[-300:]}" for m in names}
    out: dict[str, str | None] = {}
    for t in tools:
        errs = [f"{m} does not import here ({why[m]})" for m in mods[t] if why.get(m)]
        out[t] = "; ".join(errs) or None
    return out


def run_cell(spec: dict[str, Any], tmp: Path, timeout: float) -> dict[str, Any]:
    name = f"{spec['kind']}-{spec.get('res', '')}-{spec['tool']}".replace("/", "_")
    spec = {**spec, "out": str(tmp / f"{name}.json")}
    path = tmp / f"{name}.spec.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "DATAIO_CPU_THREADS": str(spec.get("workers", 2)), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, __file__, "--cell", str(path)], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-6:])
        return {"failed": f"exit {p.returncode}: {tail}"}
    res = json.loads(Path(spec["out"]).read_text())
    res["cell_seconds"] = wall
    noise = [ln for ln in p.stderr.splitlines() if ln.strip()]
    if noise:
        res["stderr"] = noise[:3] + ([f"... {len(noise)} lines"] if len(noise) > 3 else [])
    return res


def keyframes_seen(path: str) -> tuple[list[int], list[int]]:
    """(keyframes in dataio's index, keyframes by PyAV's packet flags) in presentation order."""
    import av

    import dataio

    mine = list(dataio.video_info(path)["keyframes"])
    with av.open(path) as c:
        pkts = [(p.pts, p.is_keyframe) for p in c.demux(video=0) if p.pts is not None]
    pkts.sort()
    return mine, [i for i, (_, k) in enumerate(pkts) if k]


def fmt_rate(x: float) -> str:
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def summarize(res: list[dict[str, Any]], unit: str) -> dict[str, Any]:
    """A tool's rounds: median rate and CPU per item, the rest from the median round."""
    ok = [r for r in res if "failed" not in r]
    if not ok:
        return {"failed": res[0]["failed"]}
    n = ok[0][unit]
    rates = [r[unit] / r["seconds"] if "failed" not in r else None for r in res]
    cpus = [r["cpu"] / r[unit] if "failed" not in r else None for r in res]
    good = [x for x in rates if x is not None]
    med = statistics.median(good)
    best = ok[good.index(min(good, key=lambda x: abs(x - med)))]
    bad = sum(r["bad"] for r in ok)
    out = {"rate": med, "rounds": rates, "cpu_rounds": cpus, "cpu_per": statistics.median(c for c in cpus if c),
           "busy_per": statistics.median(r["busy"] / r[unit] for r in ok), "read_per": best["rchar"] / n,
           "check": "ok" if bad == 0 else f"WRONG FRAMES in {bad} of {n * len(ok)}", "raw": ok}
    if "bytes_read" in best:
        out["stats_read_per"] = best["bytes_read"] / n
        out["check"] += f"; loader.stats bytes_read {best['bytes_read'] / n / 1e6:.2f} MB/{unit[:-1]}"
    if best.get("check"):
        out["check"] += f"; {best['check']}"
    if best.get("stderr"):
        out["stderr"] = best["stderr"]
    return out


def paired(rows: dict[str, dict[str, Any]], tool: str, key: str) -> float | None:
    """Median over rounds of (tool's figure / dataio's figure in the same round)."""
    mine, head = rows.get(tool, {}).get(key), rows.get("dataio", {}).get(key)
    if not mine or not head:
        return None
    ratios = [m / h for m, h in zip(mine, head) if m and h]
    return statistics.median(ratios) if ratios else None


def video_table(title: str, rows: dict[str, dict[str, Any]], size: float, unit: str = "clips") -> list[str]:
    one = unit[:-1]
    lines = [f"\n{title}",
             f"  {'tool':<22} {unit + '/s':>9} {'× dataio':>9} {'cpu s/' + one:>11} {'cpu × dataio':>12} "
             f"{'read/' + one:>12} {'× file':>7}  check"]
    for name, r in rows.items():
        if "skipped" in r or "failed" in r:
            lines.append(f"  {name:<22} {'UNAVAILABLE: ' + r['skipped'] if 'skipped' in r else 'FAILED: ' + r['failed']}")
            continue
        x = paired(rows, name, "rounds")
        c = paired(rows, name, "cpu_rounds")
        lines.append(f"  {name:<22} {fmt_rate(r['rate']):>9} {x if x is not None else float('nan'):9.2f} "
                     f"{r['cpu_per']:11.3f} {c if c is not None else float('nan'):12.2f} "
                     f"{r['read_per'] / 1e6:9.2f} MB {r['read_per'] / size:7.2f}  {r['check']}")
    for name in rows:
        x, c = paired(rows, name, "rounds"), paired(rows, name, "cpu_rounds")
        if not name.startswith("dataio") and x and c:
            lines.append(f"  dataio / {name}: {1 / x:.2f}x the {unit}/s, {c:.2f}x less CPU per {one}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="2 files x 10 s, 720p only, few clips: a smoke test")
    ap.add_argument("--res", default="720,1080", help="resolutions, of 720,1080")
    ap.add_argument("--files", type=int, default=4, help="720p files (and audio files per format)")
    ap.add_argument("--files-1080", type=int, default=2, help="1080p files (each takes ~13 s to encode here)")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each video")
    ap.add_argument("--clips", type=int, default=24, help="timed clips at 720p (1080p: scaled by the pixels)")
    ap.add_argument("--audio-seconds", type=float, default=60.0)
    ap.add_argument("--windows", type=int, default=256, help="timed audio windows per format")
    ap.add_argument("--only", help="comma-separated tools (default: all)")
    ap.add_argument("--no-resize", action="store_true")
    ap.add_argument("--no-audio", action="store_true")
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of every cell, in turns; medians reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cell-timeout", type=float, default=300)
    ap.add_argument("--data-dir", help="keep the media here (made once, reused); default a temp folder, removed")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    if args.cell:
        cell_main(args.cell)
        return
    if args.quick:
        args.files, args.seconds, args.clips, args.res, args.no_resize = 2, 12.0, 8, "720", True
        args.audio_seconds, args.windows = 20.0, 64
    if shutil.which("ffmpeg") is None:
        sys.exit("the ffmpeg CLI is needed to make the input (apt-get install -y ffmpeg)")
    started = time.perf_counter()
    only = {t.strip() for t in args.only.split(",")} if args.only else None
    cores = len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    if load > cores / 4:
        print(f"WARNING: load average {load:.2f} on {cores} cores: the machine is busy, the figures are NOISY")
    root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="dataio-video-bench-"))
    media = root / BUCKET
    media.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="dataio-video-cells-"))
    versions = {m: module_version(m) for m in ("dataio", "dataio-video", "av", "torch", "torchcodec", "decord",
                                                "soundfile", "torchaudio")}
    print(f"host: {platform.machine()}, {cores} usable cores, load {load:.2f}; python {platform.python_version()}; "
          + ", ".join(f"{k} {v}" for k, v in versions.items() if v), flush=True)
    results: dict[str, Any] = {"host": {"cores": cores, "load_at_start": load}, "versions": versions,
                               "args": vars(args)}
    try:
        # input
        t = time.perf_counter()
        resolutions = [int(r) for r in args.res.split(",") if r.strip()]
        videos: dict[int, list[str]] = {}
        for res in resolutions:
            w, h = RESOLUTIONS[res]
            videos[res] = []
            for i in range(args.files if res == 720 else args.files_1080):
                p = media / f"v{res}p_{i}_{int(args.seconds)}s.mp4"
                if not p.exists():
                    make_video(p, w, h, args.seconds, seed=i + 1)
                videos[res].append(str(p))
        audios: dict[str, list[str]] = {}
        if not args.no_audio:
            for ext in ("flac", "mp3"):
                audios[ext] = []
                for i in range(args.files):
                    p = media / f"a_{i}_{int(args.audio_seconds)}s.{ext}"
                    if not p.exists():
                        make_audio(p, args.audio_seconds, seed=i)
                    audios[ext].append(str(p))
        frames = int(round(args.seconds * FPS))
        gen = time.perf_counter() - t
        print(f"input: {sum(len(v) for v in videos.values())} videos, {sum(len(v) for v in audios.values())} audio "
              f"files under {media} ({gen:.1f} s to make)", flush=True)
        for res, files in videos.items():
            sizes = [os.path.getsize(f) for f in files]
            print(f"  {res}p: {len(files)} x {args.seconds:g} s, {frames} frames, keyframe every {GOP}, "
                  f"{statistics.mean(sizes) / 1e6:.1f} MB each ({statistics.mean(sizes) * 8 / args.seconds / 1e6:.1f} "
                  f"Mbit/s)")
        results["input_seconds"] = gen

        # is dataio's index right about the keyframes?
        index_notes: dict[int, str] = {}
        mkv: dict[int, list[str]] = {}
        for res, files in videos.items():
            mine, truth = keyframes_seen(files[0])
            note = f"keyframes in dataio's index {mine}, in the packets (PyAV) {truth}"
            print(f"  {res}p {Path(files[0]).name}: {note}")
            if mine != truth:
                index_notes[res] = note
                mkv[res] = []
                for f in files:  # the same streams in Matroska: the index then reads real packet flags
                    q = Path(f).with_suffix(".mkv")
                    if not q.exists():
                        run_ffmpeg(["-i", f, "-c", "copy", str(q)])
                    mkv[res].append(str(q))
                print(f"  {res}p: dataio's mp4 index misses keyframes: adding a 'dataio (.mkv remux)' row, the same "
                      "streams remuxed to Matroska")
        results["index_keyframes"] = index_notes

        def want(tool: str) -> bool:
            return only is None or tool in only

        unavailable = availability({t for t in {*VIDEO_TOOLS, *(AUDIO_TOOLS if not args.no_audio else ())}
                                    if want(t)})
        report: list[str] = []

        # video workloads
        workloads: list[tuple[str, int, int]] = [("clips", r, 0) for r in resolutions]
        if not args.no_resize:
            workloads += [("resize", r, RESIZE) for r in resolutions]
        for kind, res, resize in workloads:
            w, h = RESOLUTIONS[res]
            files = videos[res]
            n = args.clips if res == 720 else max(BATCH, int(args.clips * (1280 * 720) / (w * h)) // BATCH * BATCH)
            base = {"kind": kind, "res": res, "files": files, "width": w, "height": h, "frames": frames,
                    "clips": n, "seed": args.seed, "workers": cores, "resize": resize}
            title = (f"{kind} {res}p: random {NUM_FRAMES}-frame clips, stride {STRIDE}"
                     + (f", resized to {resize}x{resize}" if resize else ", full size RGB")
                     + f"; {n} clips over {len(files)} files, batches of {BATCH}, {cores} cores")
            print(f"\n{title}", flush=True)
            tools = [t for t in (RESIZE_TOOLS if resize else VIDEO_TOOLS) if want(t)]
            extra = [("dataio (.mkv remux)", mkv[res])] if res in mkv and want("dataio") else []
            per: dict[str, list[dict[str, Any]]] = {}
            work: list[list[int]] | None = None
            for rnd in range(args.rounds):
                for tool in [*tools, *(e[0] for e in extra)]:
                    key = tool
                    real = "dataio" if tool.startswith("dataio") else tool
                    if unavailable.get(real):
                        continue
                    spec = {**base, "tool": real}
                    if tool != real:
                        spec["files"] = dict(extra)[tool]
                    if real != "dataio":
                        if work is None:
                            rng = random.Random(args.seed)
                            work = [[i % len(files), rng.randrange(0, frames - SPAN + 1)] for i in range(n)]
                        spec["work"] = work
                    res_cell = run_cell(spec, tmp, args.cell_timeout)
                    if tool == "dataio" and "work" in res_cell and work is None:
                        work = res_cell["work"]  # the peers decode the very clips dataio drew
                    per.setdefault(key, []).append(res_cell)
                    msg = res_cell.get("failed") or (f"{res_cell['clips'] / res_cell['seconds']:.2f} clips/s"
                                                     f", frames {'ok' if not res_cell['bad'] else 'WRONG'}")
                    print(f"  [round {rnd + 1}] {key:<22} {msg} ({res_cell.get('cell_seconds', 0):.0f} s in all)",
                          flush=True)
            rows: dict[str, dict[str, Any]] = {}
            for tool in [*tools, *(e[0] for e in extra)]:
                real = "dataio" if tool.startswith("dataio") else tool
                if unavailable.get(real):
                    rows[tool] = {"skipped": unavailable[real]}
                elif tool in per:
                    rows[tool] = summarize(per[tool], "clips")
            size = statistics.mean(os.path.getsize(f) for f in files)
            lines = video_table(title + f" (mean file {size / 1e6:.1f} MB)", rows, size)
            if work is not None:
                dist = [s % GOP for _, s in work]
                lines.append(f"  frames decoded before a clip's first frame (from the keyframe before it): "
                             f"mean {statistics.mean(dist):.0f}, the clip spans {SPAN}")
            if res in index_notes:
                lines.append(f"  NOTE: {index_notes[res]}")
            for tool, r in rows.items():
                if r.get("stderr"):
                    lines.append(f"  stderr of {tool}: {' | '.join(r['stderr'])}")
            print("\n".join(lines), flush=True)
            report += lines
            results[f"{kind}_{res}p"] = {"title": title, "file_mb": size / 1e6,
                                         "rows": {k: {kk: vv for kk, vv in v.items() if kk != "raw"}
                                                  for k, v in rows.items()}, "work": work}

        # audio
        if not args.no_audio:
            for ext, files in audios.items():
                durations = [args.audio_seconds] * len(files)
                title = (f"audio {ext}: random 1 s windows at {AUDIO_RATE} Hz mono of 44.1 kHz stereo "
                         f"({args.windows} windows over {len(files)} files, batches of {AUDIO_BATCH}, {cores} cores)")
                print(f"\n{title}", flush=True)
                checks = audio_checks(files[0], [t for t in AUDIO_TOOLS if want(t) and not unavailable.get(t)])
                per = {}
                for rnd in range(args.rounds):
                    for tool in AUDIO_TOOLS:
                        if not want(tool) or unavailable.get(tool):
                            continue
                        spec = {"kind": "audio", "res": ext, "tool": tool, "files": files, "windows": args.windows,
                                "durations": durations, "seed": args.seed, "workers": cores}
                        r = run_cell(spec, tmp, args.cell_timeout)
                        per.setdefault(tool, []).append(r)
                        msg = r.get("failed") or f"{r['windows'] / r['seconds']:.0f} windows/s"
                        print(f"  [round {rnd + 1}] {tool:<22} {msg} ({r.get('cell_seconds', 0):.0f} s in all)",
                              flush=True)
                rows = {}
                for tool in AUDIO_TOOLS:
                    if not want(tool):
                        continue
                    if unavailable.get(tool):
                        rows[tool] = {"skipped": unavailable[tool]}
                    elif tool in per:
                        rows[tool] = summarize(per[tool], "windows")
                        rows[tool]["check"] += "; " + checks.get(tool, "")
                size = statistics.mean(os.path.getsize(f) for f in files)
                lines = video_table(title + f" (mean file {size / 1e6:.2f} MB)", rows, size, unit="windows")
                print("\n".join(lines), flush=True)
                report += lines
                results[f"audio_{ext}"] = {"title": title, "rows": {k: {kk: vv for kk, vv in v.items() if kk != "raw"}
                                                                    for k, v in rows.items()}}

        # s3
        if not args.no_s3 and want("dataio") and 720 in videos:
            lines = s3_workload(root, videos[720], frames, args, tmp)
            print("\n".join(lines), flush=True)
            report += lines
            results["s3"] = lines
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not args.data_dir:
            shutil.rmtree(root, ignore_errors=True)
    total = time.perf_counter() - started
    print(f"\n== summary ({total:.0f} s in all, load average {os.getloadavg()[0]:.2f} at the end) ==")
    print("\n".join(report))
    results["seconds"] = total
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


def audio_checks(path: str, tools: list[str]) -> dict[str, str]:
    """One window at a fixed offset from each tool against dataio's, below
    2 kHz (resamplers differ near the band edge): the lag (cross-correlation),
    the level (dataio's over the tool's) and what differs once aligned and scaled."""
    out: dict[str, str] = {}
    offset = 10.0

    def low(x: np.ndarray) -> np.ndarray:
        spec = np.fft.rfft(x)
        spec[int(2000 / AUDIO_RATE * len(x)):] = 0
        return np.fft.irfft(spec, len(x))

    try:
        ref = low(audio_window("dataio", path, offset, {})[0].astype(np.float64))
    except Exception as e:  # noqa: BLE001  (reported, not raised)
        return {"dataio": f"read_audio failed: {type(e).__name__}: {e}"}
    for tool in tools:
        if tool == "dataio":
            continue
        try:
            x = low(audio_window(tool, path, offset, {})[0].astype(np.float64))
        except Exception as e:  # noqa: BLE001
            out[tool] = f"check failed: {type(e).__name__}: {e}"
            continue
        n = len(ref)
        corr = np.fft.irfft(np.fft.rfft(ref, 2 * n) * np.conj(np.fft.rfft(x, 2 * n)))
        lag = int(np.argmax(corr))
        lag = lag - 2 * n if lag > n else lag  # ref[i] ~ x[i - lag]
        a, b = (ref[lag:], x[: n - lag]) if lag >= 0 else (ref[: n + lag], x[-lag:])
        a, b = a[200:-200], b[200:-200]  # the window's edges
        gain = float(a @ b / (b @ b))
        resid = float(np.sqrt(np.mean((a - gain * b) ** 2) / np.mean(a**2)))
        out[tool] = (f"vs dataio at {offset:g} s: lag {lag} samples ({1000 * lag / AUDIO_RATE:+.1f} ms), "
                     f"level x{gain:.3f}, rel. residual {resid:.4f}")
    return out


def s3_workload(root: Path, files: list[str], frames: int, args: argparse.Namespace, tmp: Path) -> list[str]:
    title = "s3 720p: the clip workload through dataio over s3:// (nginx on 127.0.0.1)"
    print(f"\n{title}", flush=True)
    try:
        import dataio_s3  # noqa: F401
        from dataio_bench.nginx import Nginx, NginxUnavailable
    except ImportError as e:
        return [f"\n{title}", f"  UNAVAILABLE: {e}"]
    try:
        server = Nginx(root, 2, True)
    except NginxUnavailable as e:
        return [f"\n{title}", f"  UNAVAILABLE: {e}"]
    try:
        uris = [f"s3://{BUCKET}/{Path(f).name}" for f in files]
        w, h = RESOLUTIONS[720]
        spec = {"kind": "s3", "tool": "dataio", "res": 720, "uris": uris, "endpoint": server.endpoint,
                "clips": args.clips, "seed": args.seed, "width": w, "height": h, "frames": frames,
                "access_log": str(server.access_path), "workers": 2}
        r = run_cell(spec, tmp, args.cell_timeout)
        if "failed" in r:
            return [f"\n{title}", f"  FAILED: {r['failed']}"]
        log = Path(str(server.access_path)).read_bytes()
        size = statistics.mean(os.path.getsize(f) for f in files)
        lines = [f"\n{title} (mean file {size / 1e6:.1f} MB)",
                 f"  {'phase':<40} {'clips':>5} {'clips/s':>8} {'GETs/clip':>9} {'HEADs/clip':>10} "
                 f"{'MB/clip':>8} {'× file':>7}  check"]
        start = 0
        for phase, what in (("first", "first pass: 1 clip per file (index built)"),
                            ("warm", "warm: index cached")):
            p = r[phase]
            chunk = log[start:p["log_mark"]]
            start = p["log_mark"]
            gets = heads = sent = 0
            for line in chunk.decode(errors="replace").splitlines():
                parts = line.split('"')
                if len(parts) < 3:
                    continue
                method = parts[1].split(" ", 1)[0]
                fields = parts[2].split()
                if method == "GET":
                    gets += 1
                elif method == "HEAD":
                    heads += 1
                sent += int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
            c = p["clips"]
            lines.append(f"  {what:<40} {c:>5} {c / p['seconds']:8.2f} {gets / c:9.2f} {heads / c:10.2f} "
                         f"{sent / c / 1e6:8.2f} {sent / c / size:7.2f}  "
                         f"{'ok' if not p['bad'] else 'WRONG FRAMES'}; loader.stats bytes_read "
                         f"{p['bytes_read'] / c / 1e6:.2f} MB/clip")
        return lines
    finally:
        server.stop()


if __name__ == "__main__":
    main()
