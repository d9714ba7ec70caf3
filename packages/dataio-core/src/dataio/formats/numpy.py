"""``read_numpy``: ``.npy`` and ``.npz`` through the IO layer.

Local ``.npy`` files are memory-mapped copy-on-write: the array is a view of
the file (no read up front, no copy), and writing to it never touches the
file. Parsing is numpy's own, so every dtype numpy writes reads back.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from .. import uri as _uri
from ..errors import CorruptDataError
from ..io import read

__all__ = ["read_numpy"]


def read_numpy(uri: str, *, mmap: bool = True) -> Any:
    """An ``.npy`` file as an array, or an ``.npz`` file as a dict of arrays.

    A damaged file raises :class:`dataio.CorruptDataError` naming the URI,
    whatever part is damaged (numpy's own header parser raises ``SyntaxError``,
    ``tokenize.TokenError``, ``ValueError``, zip errors... on damaged bytes)."""
    import numpy as np

    local = _uri.local_path(uri)
    if local is not None and mmap and not uri.endswith(".npz"):
        with open(local, "rb") as f:
            magic = f.read(6)
        if magic == b"\x93NUMPY":
            return _parsed(uri, lambda: np.load(local, mmap_mode="c", allow_pickle=False))
    data = read(uri)
    if data[:2] == b"PK":

        def npz() -> dict[str, Any]:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                return {k: z[k] for k in z.files}

        return _parsed(uri, npz)
    return _parsed(uri, lambda: np.load(io.BytesIO(data), allow_pickle=False))


def _parsed(uri: str, parse: Callable[[], Any]) -> Any:
    """Runs numpy's parser on bytes already read: anything it raises but
    running out of memory means the bytes are not a readable array."""
    try:
        return parse()
    except MemoryError:
        raise
    except Exception as e:  # numpy's parser raises many kinds on damaged bytes
        raise CorruptDataError(f"{uri}: not a readable .npy/.npz file: {type(e).__name__}: {e}") from e
