"""Entry-point module of dataio-video: its native ops, the ``video``
namespace (``dataio.video_info`` / ``read_video`` / ``read_audio``) and its
row of the capability report."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import dataio.batch_transforms
import dataio.errors
from dataio.hookspecs import CapabilityRegistrar, NamespaceRegistrar, OpRegistrar, hookimpl

from . import _native

VIDEO_PARAMS: dict[str, Any] = {
    "num_frames": int, "stride": int, "fps": float, "clip": str, "start_frame": int, "start_time": float,
    "pad": str, "audio": (bool, dict), "max_pixels": int, "max_frames": int, "pair": str,
}
AUDIO_PARAMS: dict[str, Any] = {
    "sample_rate": int, "mono": bool, "duration": float, "offset": (float, str), "max_samples": int,
    # False (what a pipeline sets with duration=): a window the audio ends
    # inside is cut there, and pad_to_longest pads it, into <slot>_lengths.
    "pad": bool,
    # The clip of a paired decode_video slot (what audio=True sets up).
    "video_clip": dict, "clip_start_frame": int, "clip_start_time": float, "pair": str,
}
#: The parameters of decode_video that say which frames a clip holds.
CLIP_PARAMS = ("num_frames", "stride", "fps", "clip", "pad")


def video_companions(slot: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    """``decode_video(audio=True)`` (or ``audio={"sample_rate": 16000,
    "mono": True}``) adds the slot ``<slot>_audio``: a ``decode_audio`` of
    the same field over the clip's time span. Both draw the clip from the
    same keyed stream (``pair``), so the window is the clip's, record by
    record, on any worker and after a resume."""
    audio = params.pop("audio", False)
    if not audio:
        return params, []
    options = dict(audio) if isinstance(audio, dict) else {}
    unknown = set(options) - {"sample_rate", "mono", "max_samples"}
    if unknown:
        raise dataio.errors.PlanError(
            f"op decode_video: audio= takes sample_rate, mono and max_samples, not {', '.join(sorted(unknown))}"
        )
    params["pair"] = slot
    clip = {k: params[k] for k in CLIP_PARAMS if k in params}
    audio_params: dict[str, Any] = {**options, "video_clip": clip, "pair": slot}
    for key in ("start_frame", "start_time"):
        if key in params:
            audio_params[f"clip_{key}"] = params[key]
    return params, [(f"{slot}_audio", "decode_audio", audio_params)]


def audio_companions(slot: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """``decode_audio(duration=d)`` in a pipeline: a window the audio ends
    inside (a 0.6 s file, or an offset near the end) is cut where the audio
    ends, and the batch is padded with zeros to ``d`` seconds at
    ``sample_rate`` (to the batch's longest window when the file's own rate
    is kept), with ``<slot>_lengths`` (int64) holding each row's samples."""
    duration = params.get("duration")
    if duration is None or "pair" in params or "pad" in params:
        return params, []
    params["pad"] = False
    rate = params.get("sample_rate")
    length = math.floor(float(duration) * int(rate) + 0.5) if rate else None
    return params, [dataio.batch_transforms.pad_to_longest(slot, length=length, axis=-1)]


@hookimpl
def dataio_register_ops(register: OpRegistrar) -> None:
    register("decode_video", _native.op("decode_video"), kind="decode", params=VIDEO_PARAMS,
             description="A frame-exact clip of num_frames frames (every stride-th, or resampled to fps), "
                         "uint8 [T, H, W, 3]; clip='random'|'start'|'center' or start_frame/start_time; "
                         "read by range, decoded from the keyframe before the clip; audio=True adds <slot>_audio.",
             companions=video_companions)
    register("decode_audio", _native.op("decode_audio"), kind="decode", params=AUDIO_PARAMS,
             description="duration seconds of the first audio stream from offset (seconds or 'random'), "
                         "float32 [C, N], resampled to sample_rate, downmixed when mono; with duration, in a pipeline, "
                         "a shorter window is zero-padded and <slot>_lengths holds each row's samples.",
             companions=audio_companions)
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
