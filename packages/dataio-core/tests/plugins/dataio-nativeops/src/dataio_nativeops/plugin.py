"""Registers the native ops of ``dataio_nativeops._native``: each
registration gets a fresh ``dataio.op.v1`` capsule, which the core adopts."""

from __future__ import annotations

from typing import Any

import dataio

from . import _native


@dataio.hookimpl
def dataio_register_ops(register: Any) -> None:
    register("decode_pgm", _native.op("decode_pgm"), kind="decode", params={"max_pixels": int},
             description="Binary PGM (P5, 8-bit) to uint8 [H, W, 1].")
    register("decode_pgm_ranged", _native.op("decode_pgm_ranged"), kind="decode", params={"max_pixels": int},
             description="decode_pgm, reading the header and the pixels by range, never the rest of the object.")
    register("native_invert", _native.op("native_invert"), kind="transform",
             description="255 - x on a uint8 tensor of any shape.")
    register("native_jitter", _native.op("native_jitter"), kind="transform", params={"amount": int},
             description="Adds one keyed offset in [-amount, amount] to every value of a uint8 tensor (saturating).")
