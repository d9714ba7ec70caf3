"""Native batch transforms: stages after the shape stage that run on each
finished batch in Rust, without the GIL, drawing from the seeded streams
(keyed by seed, epoch and the batch's position, so resume replays them).

    dataio.pipeline(
        dataio.slot("image").decode_image().random_resized_crop(224, 224).normalize(),
        dataio.slot("label").decode_bytes(),
        dataio.batch(64),
        dataio.batch_transforms.mixup(alpha=0.2, num_classes=1000),
    )
"""

from __future__ import annotations

from typing import Any

from ._ops import BATCH_OPS
from .errors import PlanError

__all__ = ["BatchTransform", "mixup", "cutmix", "pad_to_longest"]


class BatchTransform:
    _dataio_batch_transform = True
    __slots__ = ("name", "params")
    name: str
    params: dict[str, Any]

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params", dict(params))

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("batch transforms are immutable")

    def to_json(self) -> dict[str, Any]:
        return {"op": self.name, "params": self.params}

    def __repr__(self) -> str:
        return f"batch_transforms.{self.name}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"

    def __reduce__(self) -> Any:
        return (BatchTransform, (self.name, self.params))


def _make(name: str, **params: Any) -> BatchTransform:
    """Validates ``params`` against the native table (names, types, ranges)."""
    from .transforms import _check

    return BatchTransform(name, _check(name, BATCH_OPS[name].params, params))


def mixup(alpha: float = 0.2, *, num_classes: int, slot: str = "image", label: str = "label") -> BatchTransform:
    """Mix each sample with its neighbour (batch rolled by one), λ ~ Beta(α, α) per batch.
    The label slot becomes mixed one-hot float32 rows of ``num_classes``."""
    return _make("mixup", alpha=alpha, num_classes=num_classes, slot=slot, label=label)


def cutmix(alpha: float = 1.0, *, num_classes: int, slot: str = "image", label: str = "label") -> BatchTransform:
    """Paste a box of the rolled batch into each sample; labels mixed by the box area."""
    return _make("cutmix", alpha=alpha, num_classes=num_classes, slot=slot, label=label)


def pad_to_longest(slot: str, value: float = 0, *, length: int | None = None, axis: int | None = None) -> BatchTransform:
    """Stack a variable-length slot, padding each row with ``value`` to the
    longest row of the batch (at least ``length``); adds ``<slot>_lengths``
    (int64) with each row's original length. ``axis``: 0 pads the first
    axis of a row, -1 its last (audio ``[C, N]``); by default the first, or
    the last for rows that differ only there."""
    if not isinstance(slot, str) or not slot:
        raise PlanError("pad_to_longest: slot must name a slot")
    params: dict[str, Any] = {"slot": slot, "value": value}
    if length is not None:
        params["length"] = length
    if axis is not None:
        if axis not in (0, -1):
            raise PlanError(f"pad_to_longest: axis must be 0 or -1, got {axis!r}")
        params["axis"] = axis
    return _make("pad_to_longest", **params)
