"""``dataio.video``: video and audio verbs, served by the ``dataio-video``
plugin (FFmpeg), which also registers the ``decode_video`` and
``decode_audio`` ops; ``dataio.video_info``, ``dataio.read_video`` and
``dataio.read_audio`` are these.

This module only forwards, as ``dataio.rdma`` does: the names resolve on
first use to those of the object the plugin registered as the ``video``
namespace. The core wheel never links FFmpeg; using a verb without the
plugin raises an ImportError that says what to install.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NAMESPACE = "video"


def _plugin() -> Any:
    from ._plugins import host
    from .plugins import install_hint

    api = host.namespace(NAMESPACE)
    if api is None:
        raise ImportError(
            "video and audio need the dataio-video plugin; install it with " + install_hint("dataio-video") + host.failed_note(),
            name="dataio_video",
        )
    return api


def video_info(uri: str) -> dict[str, Any]:
    """What the media file at ``uri`` holds: ``codec``, ``width``,
    ``height``, ``fps``, ``frames``, ``duration``, ``keyframes`` (frame
    indices), ``format``, ``has_video`` and ``audio`` (one dict per audio
    stream). Reads the file's header by range (the whole file for
    containers that keep their timestamps beside the frames, e.g. mkv)."""
    result: dict[str, Any] = _plugin().video_info(uri)
    return result


def read_video(uri: str, start_frame: int = 0, num_frames: int | None = None, stride: int = 1) -> np.ndarray:
    """Frames ``start_frame, start_frame + stride, ...`` of the video at
    ``uri`` in presentation order (all to the end when ``num_frames`` is
    None), uint8 ``[T, H, W, 3]``; decodes from the keyframe before the
    first frame only, reading by range."""
    result: np.ndarray = _plugin().read_video(uri, start_frame=start_frame, num_frames=num_frames, stride=stride)
    return result


def read_audio(uri: str, sample_rate: int | None = None, mono: bool = False, offset: float = 0.0,
               duration: float | None = None) -> np.ndarray:
    """``duration`` seconds (to the end when None) of the first audio stream
    of ``uri`` from ``offset``, float32 ``[C, N]``, resampled to
    ``sample_rate`` (the stream's own when None), downmixed when ``mono``."""
    result: np.ndarray = _plugin().read_audio(uri, sample_rate=sample_rate, mono=mono, offset=offset, duration=duration)
    return result
