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

from .errors import PlanError

__all__ = ["BatchTransform", "mixup", "cutmix", "pad_to_longest"]


class BatchTransform:
    _dataio_batch_transform = True
    __slots__ = ("name", "params")

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


def _mix(name: str, alpha: float, num_classes: int, slot: str, label: str) -> BatchTransform:
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or alpha <= 0:
        raise PlanError(f"{name}: alpha must be a positive number, got {alpha!r}")
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise PlanError(f"{name}: num_classes must be an integer >= 2, got {num_classes!r}")
    return BatchTransform(name, {"alpha": float(alpha), "num_classes": num_classes, "slot": slot, "label": label})


def mixup(alpha: float = 0.2, *, num_classes: int, slot: str = "image", label: str = "label") -> BatchTransform:
    """Mix each sample with its neighbour (batch rolled by one), λ ~ Beta(α, α) per batch.
    The label slot becomes mixed one-hot float32 rows of ``num_classes``."""
    return _mix("mixup", alpha, num_classes, slot, label)


def cutmix(alpha: float = 1.0, *, num_classes: int, slot: str = "image", label: str = "label") -> BatchTransform:
    """Paste a box of the rolled batch into each sample; labels mixed by the box area."""
    return _mix("cutmix", alpha, num_classes, slot, label)


def pad_to_longest(slot: str, value: float = 0) -> BatchTransform:
    """Stack a variable-length slot, padding its first axis with ``value``;
    adds ``<slot>_lengths`` (int64) with each row's original length."""
    if not isinstance(slot, str) or not slot:
        raise PlanError("pad_to_longest: slot must name a slot")
    return BatchTransform("pad_to_longest", {"slot": slot, "value": value})
