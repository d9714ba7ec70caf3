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
from dataio.hookspecs import CapabilityRegistrar, NamespaceRegistrar, hookimpl
from dataio.plugins import NativeOpsPlugin

from . import _native

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
    return params, [(f"{slot}_audio", _native.DECODE_AUDIO, audio_params)]


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


#: The native ops (decode_video, decode_audio, video_info), registered from
#: their declarations in ``crates/dataio-video/src/ops.rs``; the companions
#: above are the Python hooks those declarations name.
PLUGIN = NativeOpsPlugin("dataio_video._native")
dataio_register_ops = PLUGIN.dataio_register_ops


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
