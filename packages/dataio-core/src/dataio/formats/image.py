"""``read_image``: one image through the pipeline's native decoders."""

from __future__ import annotations

from typing import Any

from .. import _native
from ..io import read

__all__ = ["read_image"]


def read_image(uri: str, mode: str = "rgb", *, max_pixels: int | None = None, apply_exif_orientation: bool = True) -> Any:
    """Decodes ``uri`` (JPEG, PNG, WebP, GIF, BMP, TIFF) to an HWC uint8 numpy
    array with the pipeline's ``decode_image`` (same rules: ``mode`` ``"rgb"``
    drops alpha, ``"rgba"`` keeps it, ``"gray"`` is the luma; 16-bit samples
    scaled to 8; upright by the EXIF orientation tag of any format unless
    ``apply_exif_orientation=False``). ``max_pixels``: refuse larger images
    (default: ``decode_image``'s, see docs/ops.md). A file the decoder cannot
    read is a :class:`dataio.errors.DecodeError` naming ``uri``."""
    import numpy as np

    from ..errors import DecodeError

    data = read(uri)
    try:
        t = _native.decode_image(data, mode, max_pixels, apply_exif_orientation)
    except DecodeError as e:
        raise type(e)(f"{uri}: {e}") from None
    return np.from_dlpack(t)
