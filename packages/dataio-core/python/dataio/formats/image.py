"""``read_image``: one image through the pipeline's native decoders."""

from __future__ import annotations

from typing import Any

from .. import _native
from ..io import read

__all__ = ["read_image"]


def read_image(uri: str, mode: str = "rgb", *, max_pixels: int = 178_956_970) -> Any:
    """Decodes ``uri`` (JPEG, PNG, WebP, GIF, BMP, TIFF) to an HWC uint8 numpy
    array, EXIF orientation applied. ``mode``: ``"rgb"``, ``"gray"``, ``"rgba"``."""
    import numpy as np

    from ..errors import DecodeError

    data = read(uri)
    try:
        t = _native.decode_image(data, mode, max_pixels)
    except DecodeError as e:
        raise type(e)(f"{uri}: {e}") from None
    return np.from_dlpack(t)
