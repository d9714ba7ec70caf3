"""Test media written by FFmpeg itself (PyAV's bundled libraries): every
video frame carries its own number as blocks, so a test reads which frame a
decoder returned instead of assuming it."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

BLOCK = 16
BITS = 12  # frame numbers up to 4095: two rows of six blocks


def frame_image(i: int, width: int = 128, height: int = 96, noise: bool = False) -> np.ndarray:
    """RGB frame number ``i``: bit b of i is the block (b // 6, b % 6),
    white for 1, black for 0, on a mid-grey background with a gradient
    (with ``noise``, random pixels below the blocks: a file that compresses
    badly, i.e. a large one)."""
    img = np.full((height, width, 3), 96, np.uint8)
    img[:, :, 2] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    if noise:
        rng = np.random.default_rng(i)
        img[2 * BLOCK + 8:] = rng.integers(0, 256, img[2 * BLOCK + 8:].shape, dtype=np.uint8)
    for b in range(BITS):
        r, c = divmod(b, 6)
        img[r * BLOCK:(r + 1) * BLOCK, c * BLOCK:(c + 1) * BLOCK] = 255 if (i >> b) & 1 else 0
    return img


def frame_number(img: np.ndarray) -> int:
    """The number :func:`frame_image` drew into ``img`` (``[H, W, 3]`` RGB)."""
    n = 0
    for b in range(BITS):
        r, c = divmod(b, 6)
        block = img[r * BLOCK + 4:(r + 1) * BLOCK - 4, c * BLOCK + 4:(c + 1) * BLOCK - 4]
        if block.mean() > 128:
            n |= 1 << b
    return n


def write_video(path: Path, frames: int, *, codec: str = "libx264", fps: int = 25, gop: int = 12,
                bframes: int = 2, faststart: bool = True, pts: list[int] | None = None,
                width: int = 128, height: int = 96, options: dict[str, str] | None = None,
                audio: bool = False, noise: bool = False) -> Path:
    """A video of ``frames`` numbered frames. ``pts`` gives each frame's
    timestamp in 1/1000 s (variable frame rate); the container follows the
    suffix (mp4 with the moov atom first unless ``faststart=False``)."""
    opts = {"g": str(gop), "bf": str(bframes)} if codec in ("libx264", "libx265", "mpeg4") else {"g": str(gop)}
    if codec == "libx264":
        opts["crf"] = "16"
    if codec == "libx265":
        opts["x265-params"] = f"keyint={gop}:min-keyint={gop}:bframes={bframes}:log-level=none"
    opts.update(options or {})
    container_opts = {"movflags": "faststart"} if faststart and path.suffix in (".mp4", ".mov") else {}
    with av.open(str(path), "w", options=container_opts) as out:
        stream = out.add_stream(codec, rate=fps, options=opts)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        if pts is not None:
            stream.codec_context.time_base = Fraction(1, 1000)
            stream.time_base = Fraction(1, 1000)
        astream = None
        if audio:
            astream = out.add_stream("aac", rate=48000)
            astream.layout = "stereo"
        for i in range(frames):
            f = av.VideoFrame.from_ndarray(frame_image(i, width, height, noise), format="rgb24")
            if pts is not None:
                f.pts = pts[i]
                f.time_base = Fraction(1, 1000)
            for p in stream.encode(f):
                out.mux(p)
        for p in stream.encode():
            out.mux(p)
        if astream is not None:
            write_tone(out, astream, frames / fps)
    return path


def tone(t: np.ndarray, channel: int) -> np.ndarray:
    """The test signal of ``channel`` at times ``t``: a sine whose frequency
    differs per channel."""
    return 0.5 * np.sin(2 * np.pi * (220.0 * (channel + 1)) * t)


def write_tone(out: av.container.OutputContainer, stream: av.audio.AudioStream, seconds: float) -> None:
    rate = stream.codec_context.sample_rate
    channels = stream.codec_context.layout.nb_channels
    fmt = stream.codec_context.format.name
    n = int(seconds * rate)
    t = np.arange(n) / rate
    data = np.stack([tone(t, c) for c in range(channels)]).astype(np.float32)
    chunk = 1024
    for s in range(0, n, chunk):
        block = data[:, s:s + chunk]
        base = fmt.rstrip("p")
        if base == "s16":
            block = (block * 32767).astype(np.int16)
        elif base == "s32":
            block = (block * 2147483647).astype(np.int32)
        elif base == "dbl":
            block = block.astype(np.float64)
        if not fmt.endswith("p"):
            block = block.T.reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(block), format=fmt, layout=stream.codec_context.layout.name)
        frame.sample_rate = rate
        frame.pts = s
        for p in stream.encode(frame):
            out.mux(p)
    for p in stream.encode():
        out.mux(p)


def write_audio(path: Path, seconds: float, *, codec: str, rate: int = 48000, channels: int = 2) -> Path:
    """``seconds`` of :func:`tone` per channel, encoded with ``codec`` into the container of ``path``'s suffix."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = "stereo" if channels == 2 else "mono"
        write_tone(out, stream, seconds)
    return path
