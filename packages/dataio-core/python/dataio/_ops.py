"""The table of built-in (native) ops: names, kinds and parameter schemas.

Plan construction validates every op against this table (and plugins' ops
against theirs) so a typo or a wrong type fails when the pipeline is built,
not when the first batch runs. The native compiler validates again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "area")
MODES = ("rgb", "gray", "rgba")
DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "bool")


@dataclasses.dataclass(frozen=True)
class Param:
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] | None = None
    positive: bool = False
    col: bool = False  # may be a per-record dataio.col(...) reference
    doc: str = ""


@dataclasses.dataclass(frozen=True)
class BuiltinOp:
    name: str
    kind: str  # "decode" or "transform"
    params: Mapping[str, Param]
    description: str
    random: bool = False


INT = (int,)
NUM = (int, float)


def _op(name: str, kind: str, description: str, random: bool = False, **params: Param) -> BuiltinOp:
    return BuiltinOp(name, kind, params, description, random)


_INTERP = Param((str,), default="bilinear", choices=INTERPOLATIONS, doc="resampling filter")
_AA = Param((bool,), default=True, doc="low-pass filter when shrinking")

BUILTIN_OPS: dict[str, BuiltinOp] = {
    op.name: op
    for op in [
        _op(
            "decode_image",
            "decode",
            "JPEG/PNG/WebP/GIF/BMP/TIFF to HWC uint8, EXIF orientation applied",
            mode=Param((str,), default="rgb", choices=MODES),
            max_pixels=Param(INT, default=178_956_970, positive=True, doc="refuse larger images (decompression bombs)"),
            dct_scaling=Param((bool,), default=True, doc="let JPEG decode at 1/2, 1/4 or 1/8 when a later resize shrinks"),
        ),
        _op("decode_bytes", "decode", "raw bytes as a 1-D uint8 tensor; numbers and bools as scalars"),
        _op("decode_npy", "decode", ".npy payload to its array"),
        _op(
            "decode_safetensors",
            "decode",
            "one tensor of a safetensors file",
            tensor_key=Param((str,), required=True, col=True, doc="name of the tensor"),
        ),
        _op("resize", "transform", "resize to exactly h x w", h=Param(INT, True, positive=True), w=Param(INT, True, positive=True), interpolation=_INTERP, antialias=_AA),
        _op("resize_short", "transform", "scale so the short side is `size`", size=Param(INT, True, positive=True), interpolation=_INTERP, antialias=_AA, max_size=Param(INT, positive=True, doc="cap on the long side")),
        _op("resize_long", "transform", "scale so the long side is `size`", size=Param(INT, True, positive=True), interpolation=_INTERP, antialias=_AA),
        _op("center_crop", "transform", "central h x w window (zero-padded when smaller)", h=Param(INT, True, positive=True), w=Param(INT, True, positive=True)),
        _op("crop", "transform", "fixed window", top=Param(INT, True), left=Param(INT, True), h=Param(INT, True, positive=True), w=Param(INT, True, positive=True)),
        _op("random_crop", "transform", "uniformly placed h x w window", True, h=Param(INT, True, positive=True), w=Param(INT, True, positive=True)),
        _op(
            "random_resized_crop",
            "transform",
            "random area/aspect crop resized to h x w (Inception-style)",
            True,
            h=Param(INT, True, positive=True),
            w=Param(INT, True, positive=True),
            scale=Param((tuple, list), default=(0.08, 1.0)),
            ratio=Param((tuple, list), default=(3 / 4, 4 / 3)),
            interpolation=_INTERP,
            antialias=_AA,
        ),
        _op("hflip", "transform", "mirror left-right with probability p", True, p=Param(NUM, default=0.5)),
        _op("vflip", "transform", "mirror top-bottom with probability p", True, p=Param(NUM, default=0.5)),
        _op(
            "normalize",
            "transform",
            "(x/255 - mean) / std to float32, CHW by default",
            mean_std=Param((str, tuple, list), default="imagenet", doc='"imagenet", "clip", "symmetric" or (mean, std)'),
            layout=Param((str,), default="CHW", choices=("CHW", "HWC")),
        ),
        _op("to_chw", "transform", "HWC to CHW without changing the dtype"),
        _op("cast", "transform", "convert the dtype", dtype=Param((str,), True, choices=DTYPES)),
    ]
}
