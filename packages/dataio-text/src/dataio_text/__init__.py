"""dataio-text: native tokenization for dataio.

Registers the op ``tokenize`` (native, through dataio's op ABI: it runs on
the engine's pool without the GIL, and takes a string field's text itself).
"""

from __future__ import annotations

from ._native import clear_tokenizers, preload

__all__ = ["clear_tokenizers", "preload"]
