"""``read_numpy``: ``.npy`` and ``.npz`` through the IO layer.

Local ``.npy`` files are memory-mapped copy-on-write: the array is a view of
the file (no read up front, no copy), and writing to it never touches the
file. Parsing is numpy's own, so every dtype numpy writes reads back.
"""

from __future__ import annotations

import io
from typing import Any

from .. import uri as _uri
from ..errors import CorruptDataError
from ..io import read

__all__ = ["read_numpy"]


def read_numpy(uri: str, *, mmap: bool = True) -> Any:
    """An ``.npy`` file as an array, or an ``.npz`` file as a dict of arrays."""
    import numpy as np

    local = _uri.local_path(uri)
    try:
        if local is not None and mmap and not uri.endswith(".npz"):
            with open(local, "rb") as f:
                magic = f.read(6)
            if magic == b"\x93NUMPY":
                return np.load(local, mmap_mode="c", allow_pickle=False)
        data = read(uri)
        if data[:2] == b"PK":
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        if isinstance(e, (FileNotFoundError, PermissionError, IsADirectoryError)) or getattr(e, "uri", None):
            raise
        raise CorruptDataError(f"{uri}: not a readable .npy/.npz file: {e}") from e
