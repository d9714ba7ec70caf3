"""dataio-video: video and audio for dataio, decoded natively by FFmpeg's
libraries (libavformat, libavcodec, libswscale, libswresample).

Registers the ops ``decode_video``, ``decode_audio`` and ``video_info``
(native, through dataio's op ABI: they run on the engine's pool without the
GIL and read their input by range) and the ``video`` namespace behind
``dataio.video_info``, ``dataio.read_video`` and ``dataio.read_audio``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dataio.plugins import call_native_decoder

from . import _native
from ._native import ffmpeg_versions as _ffmpeg_versions

__all__ = ["ffmpeg_versions", "read_audio", "read_video", "video_info"]


def _call(op: str, uri: str, params: dict[str, Any]) -> np.ndarray:
    result: np.ndarray = call_native_decoder(op, uri, params)
    return result


def video_info(uri: str) -> dict[str, Any]:
    """See :func:`dataio.video_info`."""
    info: dict[str, Any] = json.loads(_call(_native.VIDEO_INFO, uri, {}).tobytes())
    return info


def read_video(uri: str, start_frame: int = 0, num_frames: int | None = None, stride: int = 1) -> np.ndarray:
    """See :func:`dataio.read_video`."""
    if num_frames is None:
        frames = int(video_info(uri).get("frames", 0))
        if start_frame >= frames:
            raise ValueError(f"{uri}: start_frame={start_frame} is past the last frame ({frames} frames)")
        num_frames = (frames - 1 - start_frame) // stride + 1
    params = {"start_frame": start_frame, "num_frames": num_frames, "stride": stride, "pad": "error",
              "max_frames": max(num_frames, 1)}
    return _call(_native.DECODE_VIDEO, uri, params)


def read_audio(uri: str, sample_rate: int | None = None, mono: bool = False, offset: float = 0.0,
               duration: float | None = None) -> np.ndarray:
    """See :func:`dataio.read_audio`."""
    params = {"sample_rate": sample_rate, "mono": mono, "offset": offset, "duration": duration}
    return _call(_native.DECODE_AUDIO, uri, params)


def ffmpeg_versions() -> dict[str, str]:
    """The FFmpeg libraries this plugin runs on."""
    return dict(_ffmpeg_versions())
