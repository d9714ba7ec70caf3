"""The native module of dataio-video (rust/lib.rs)."""

from typing import Any

DECODE_VIDEO: str
DECODE_AUDIO: str
VIDEO_INFO: str

def ops() -> list[Any]: ...
def ffmpeg_versions() -> list[tuple[str, str]]: ...
def clear_index_cache() -> None: ...
