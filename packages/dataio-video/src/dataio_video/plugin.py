"""Entry-point module of dataio-video: its native ops, the ``video``
namespace (``dataio.video_info`` / ``read_video`` / ``read_audio``) and its
row of the capability report."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from dataio.hookspecs import CapabilityRegistrar, NamespaceRegistrar, OpRegistrar, hookimpl

from . import _native

VIDEO_PARAMS: dict[str, Any] = {
    "num_frames": int, "stride": int, "fps": float, "clip": str, "start_frame": int, "start_time": float,
    "pad": str, "audio": bool, "max_pixels": int, "max_frames": int,
}
AUDIO_PARAMS: dict[str, Any] = {
    "sample_rate": int, "mono": bool, "duration": float, "offset": (float, str), "max_samples": int,
}


@hookimpl
def dataio_register_ops(register: OpRegistrar) -> None:
    register("decode_video", _native.op("decode_video"), kind="decode", params=VIDEO_PARAMS,
             description="A frame-exact clip of num_frames frames (every stride-th, or resampled to fps), "
                         "uint8 [T, H, W, 3]; clip='random'|'start'|'center' or start_frame/start_time; "
                         "read by range, decoded from the keyframe before the clip.")
    register("decode_audio", _native.op("decode_audio"), kind="decode", params=AUDIO_PARAMS,
             description="duration seconds of the first audio stream from offset (seconds or 'random'), "
                         "float32 [C, N], resampled to sample_rate, downmixed when mono.")
    register("video_info", _native.op("video_info"), kind="decode",
             description="What a media file holds (the dataio.video_info verb), as UTF-8 JSON bytes.")


def api() -> ModuleType:
    """The object behind ``dataio.video``'s verbs: this package."""
    return sys.modules[__package__]


@hookimpl
def dataio_register_namespaces(register: NamespaceRegistrar) -> None:
    register("video", api, description="video and audio on FFmpeg")


def report() -> Mapping[str, Any]:
    versions = dict(_native.ffmpeg_versions())
    return {"status": "ok", "detail": "FFmpeg " + ", ".join(f"{k} {v}" for k, v in versions.items()), "schemes": []}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-video", report)
