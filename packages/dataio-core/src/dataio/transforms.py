"""Op factories: the same native ops as the slot methods.

    dataio.slot("image").decode_image().resize(h=512, w=512)
    dataio.slot("image").decode_image().apply(dataio.transforms.resize(h=512, w=512))

Every factory validates its parameters when called against the native op
table (:mod:`dataio._ops`), so a wrong type fails where the pipeline is
written. The sizes of the geometry ops (``resize``, ``resize_short``,
``resize_long``, ``center_crop``, ``crop``, ``random_crop``,
``random_resized_crop``) also take ``dataio.col(field)``: the value is read
from each record when it runs (``resize(h=dataio.col("h"), w=dataio.col("w"))``).
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any

from ._ops import BUILTIN_OPS, Param
from .errors import PlanError

__all__ = [
    "Op",
    "Col",
    "col",
    "op",
    "decode_image",
    "decode_bytes",
    "decode_npy",
    "decode_safetensors",
    "resize",
    "resize_short",
    "resize_long",
    "center_crop",
    "crop",
    "random_crop",
    "random_resized_crop",
    "hflip",
    "vflip",
    "normalize",
    "to_chw",
    "cast",
]


class Col:
    """A per-record parameter: the value of field ``name`` of each record."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("dataio.col() takes a field name")
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Col is immutable")

    def __repr__(self) -> str:
        return f"dataio.col({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Col) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("col", self.name))

    def __reduce__(self) -> Any:
        return (Col, (self.name,))

    def is_null(self):  # noqa: ANN201 - convenience: dataio.col(x) in predicates
        from .cond import col as _c

        return _c(self.name).is_null()

    def is_not_null(self):  # noqa: ANN201
        from .cond import col as _c

        return _c(self.name).is_not_null()


def col(name: str) -> Col:
    """Reference record field ``name`` as an op parameter (``tensor_key=dataio.col("k")``)."""
    return Col(name)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Col):
        return {"$col": value.name}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class Op:
    """One op of a slot chain: a name and validated parameters. Immutable."""

    __slots__ = ("name", "params")

    def __init__(self, name: str, params: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", types.MappingProxyType(dict(params or {})))

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Op is immutable")

    @property
    def kind(self) -> str:
        spec = BUILTIN_OPS.get(self.name)
        if spec is not None:
            return spec.kind
        from ._plugins import host

        plugin_op = host.op(self.name)
        return plugin_op.kind if plugin_op else "transform"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.name, "params": {k: _jsonable(v) for k, v in self.params.items()}}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Op) and other.to_json() == self.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True, default=str))

    def __reduce__(self) -> Any:
        return (Op, (self.name, dict(self.params)))


def _check(name: str, spec: Mapping[str, Param], params: dict[str, Any]) -> dict[str, Any]:
    for key in params:
        if key not in spec:
            raise PlanError(f"op {name}: unknown parameter {key!r} (it takes {', '.join(spec) or 'none'})")
    out: dict[str, Any] = {}
    for key, p in spec.items():
        value = params.get(key, None)
        if value is None:
            if p.required:
                raise PlanError(f"op {name}: missing required parameter {key!r}")
            continue
        if isinstance(value, Col):
            if not p.col:
                raise PlanError(f"op {name}: {key} cannot be a per-record dataio.col(...)")
            out[key] = value
            continue
        if isinstance(value, bool) and bool not in p.types:
            raise PlanError(f"op {name}: {key} must be {_names(p.types)}, got a bool")
        if not isinstance(value, p.types):
            raise PlanError(f"op {name}: {key} must be {_names(p.types)}, got {type(value).__name__} {value!r}")
        if p.choices is not None and isinstance(value, str) and value not in p.choices:
            raise PlanError(f"op {name}: {key} must be one of {', '.join(map(repr, p.choices))}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            why = p.check_number(value)
            if why is not None:
                raise PlanError(f"op {name}: {key} {why}, got {value!r}")
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


def op(name: str, **params: Any) -> Op:
    """Any registered op by name: built-in or a plugin's."""
    spec = BUILTIN_OPS.get(name)
    if spec is not None:
        return Op(name, _check(name, spec.params, params))
    from ._plugins import host

    plugin_op = host.op(name)
    if plugin_op is None:
        known = sorted([*BUILTIN_OPS, *host.ops()])
        raise PlanError(f"unknown op {name!r}; known ops: {', '.join(known)}")
    for key, value in params.items():
        expected = plugin_op.params.get(key)
        if plugin_op.params and expected is None:
            raise PlanError(f"op {name}: unknown parameter {key!r}")
        if expected is not None and not isinstance(value, expected):
            raise PlanError(f"op {name}: {key} must be {expected}, got {type(value).__name__}")
    return Op(name, params)


def decode_image(mode: str = "rgb", *, max_pixels: int | None = None, dct_scaling: bool = True, apply_exif_orientation: bool = True) -> Op:
    """Decode JPEG/PNG/WebP/GIF/BMP/TIFF to HWC uint8.

    ``mode="rgb"`` drops alpha (``"rgba"`` keeps it, ``"gray"`` is the luma);
    16-bit images become 8-bit by ``round(v / 257)``; the EXIF orientation
    tag turns the image upright in every format that carries one, unless
    ``apply_exif_orientation=False`` (docs/formats.md has the rules)."""
    return op("decode_image", mode=mode, max_pixels=max_pixels, dct_scaling=dct_scaling, apply_exif_orientation=apply_exif_orientation)


def decode_bytes() -> Op:
    """Raw bytes as a 1-D uint8 tensor; numeric and bool fields as scalars."""
    return op("decode_bytes")


def decode_npy() -> Op:
    return op("decode_npy")


def decode_safetensors(tensor_key: str | Col) -> Op:
    return op("decode_safetensors", tensor_key=tensor_key)


def resize(h: int | Col, w: int | Col, *, interpolation: str = "bilinear", antialias: bool = True) -> Op:
    return op("resize", h=h, w=w, interpolation=interpolation, antialias=antialias)


def resize_short(size: int | Col, *, interpolation: str = "bilinear", antialias: bool = True, max_size: int | Col | None = None) -> Op:
    return op("resize_short", size=size, interpolation=interpolation, antialias=antialias, max_size=max_size)


def resize_long(size: int | Col, *, interpolation: str = "bilinear", antialias: bool = True) -> Op:
    return op("resize_long", size=size, interpolation=interpolation, antialias=antialias)


def center_crop(h: int | Col, w: int | Col) -> Op:
    return op("center_crop", h=h, w=w)


def crop(top: int | Col, left: int | Col, h: int | Col, w: int | Col) -> Op:
    return op("crop", top=top, left=left, h=h, w=w)


def random_crop(h: int | Col, w: int | Col) -> Op:
    return op("random_crop", h=h, w=w)


def random_resized_crop(
    h: int | Col,
    w: int | Col,
    *,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    interpolation: str = "bilinear",
    antialias: bool = True,
) -> Op:
    return op("random_resized_crop", h=h, w=w, scale=scale, ratio=ratio, interpolation=interpolation, antialias=antialias)


def hflip(p: float = 0.5) -> Op:
    return op("hflip", p=p)


def vflip(p: float = 0.5) -> Op:
    return op("vflip", p=p)


def normalize(mean_std: str | tuple[Any, Any] = "imagenet", *, layout: str = "CHW") -> Op:
    """``(x / 255 - mean) / std`` to float32; ``"imagenet"``, ``"clip"``, ``"symmetric"``, ``"unit"`` or ``(mean, std)``."""
    if isinstance(mean_std, tuple):
        mean_std = [list(m) if isinstance(m, (list, tuple)) else m for m in mean_std]  # type: ignore[assignment]
    return op("normalize", mean_std=mean_std, layout=layout)


def to_chw() -> Op:
    return op("to_chw")


def cast(dtype: str) -> Op:
    return op("cast", dtype=str(dtype).replace("torch.", ""))
