"""Several record sources in one loader, drawn in set proportions.

``dataio.mix(sources, weights=[...], stop=...)`` is a sized record source
over the concatenation of its sources, whose epoch order draws from each
source in proportion to its weight (see ``docs/arch.md``, "Mixing
datasets"): deterministic in (seed, epoch, position), each source shuffled by
its own keyed order and restarted in its next own epoch when exhausted, and
resumable exactly from ``state_dict()`` like any sized source.

``stop`` ends a mixed epoch: ``"first_exhausted"`` (the default: when the
first source runs out), ``"all_exhausted"`` (when every source has been
drawn whole; the others restart meanwhile) or a number ``N`` of samples per
epoch, the stream continuing across epochs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import _native
from .contract import layout_of
from .errors import InvalidArgumentError

__all__ = ["mix", "MixedRecords"]

_STOPS = ("first_exhausted", "all_exhausted")


def _sized(src: Any) -> bool:
    return hasattr(src, "__len__") and hasattr(src, "__getitem__") and not isinstance(src, (str, bytes, dict))


class MixedRecords(Sequence[dict[str, Any]]):
    """What :func:`mix` returns. ``len()`` is the size of the concatenation;
    ``records[i]`` is record ``i`` of it (with ``__source__``, the source's
    number); the loader's epoch has :meth:`epoch_len` draws."""

    def __init__(self, sources: Sequence[Any], weights: Sequence[float], stop: str | int) -> None:
        sources = list(sources)
        if not sources:
            raise InvalidArgumentError("mix needs at least one source")
        for s, src in enumerate(sources):
            if not _sized(src):
                raise InvalidArgumentError(
                    f"mix source {s} ({type(src).__name__}) is not a sized source (len() and indexing): "
                    "mix lists, parquet_records, tar_records, tfrecord_records or other sized sequences"
                )
        weights = list(weights)
        if len(weights) != len(sources):
            raise InvalidArgumentError(f"mix has {len(sources)} sources but {len(weights)} weights")
        for s, w in enumerate(weights):
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                raise InvalidArgumentError(f"mix source {s}: weight {w!r} must be a finite number >= 0")
        if not any(w > 0 for w in weights):
            raise InvalidArgumentError("mix weights are all zero: at least one source must be drawn from")
        lens = [len(src) for src in sources]
        for s, (n, w) in enumerate(zip(lens, weights)):
            if n == 0 and w > 0:
                raise InvalidArgumentError(f"mix source {s} ({_describe(sources[s])}) is empty")
        if isinstance(stop, bool) or not (stop in _STOPS or (isinstance(stop, int) and stop >= 1)):
            raise InvalidArgumentError(f"stop must be 'first_exhausted', 'all_exhausted' or a positive number of samples, got {stop!r}")
        self.sources = sources
        self.weights = [float(w) for w in weights]
        self.stop = stop
        self._lens = lens
        self._bases = [0]
        for n in lens:
            self._bases.append(self._bases[-1] + n)
        self._total = self._bases[-1]
        self._layouts = [layout_of(src) for src in sources]

    def __len__(self) -> int:
        return self._total

    def locate(self, i: int) -> tuple[int, int]:
        """(source, index in it) of record ``i`` (restarts wrap around)."""
        i %= self._total
        s = bisect.bisect_right(self._bases, i) - 1
        while self._lens[s] == 0:
            s += 1
        return s, i - self._bases[s]

    def sources_of(self, indices: Sequence[int]) -> list[int]:
        """The source of each record index (what :meth:`locate` gives, for many at once)."""
        i = np.asarray(indices, dtype=np.int64) % self._total
        return np.searchsorted(np.asarray(self._bases[1:], dtype=np.int64), i, side="right").tolist()  # type: ignore[no-any-return]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        s, k = self.locate(int(i))
        rec = self.sources[s][k]
        if not isinstance(rec, dict):
            raise InvalidArgumentError(f"mix source {s}: record {k} is a {type(rec).__name__}, not a dict")
        return {**rec, "__source__": s}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self[i]

    def _stop_args(self) -> tuple[str, int]:
        return (self.stop, 0) if isinstance(self.stop, str) else ("samples", int(self.stop))

    def _dataio_mix(self) -> tuple[list[int], list[Any], list[float], str, int]:
        kind, n = self._stop_args()
        return list(self._lens), list(self._layouts), list(self.weights), kind, n

    def _plan(self, seed: int | None, epoch: int, position: int) -> tuple[int, list[tuple[int, int]]]:
        kind, n = self._stop_args()
        return _native.mix_plan(list(self._lens), list(self._layouts), list(self.weights), kind, n, seed, epoch, position)

    def epoch_len(self, seed: int | None = None, epoch: int = 0) -> int:
        """Draws in mixed epoch ``epoch`` (all ranks together)."""
        return self._plan(seed, epoch, 0)[0]

    def progress(self, seed: int | None, epoch: int, position: int) -> list[dict[str, int]]:
        """Per source, after ``position`` draws of mixed epoch ``epoch``: its
        draws in this epoch and its own epoch (restarts so far)."""
        _, per = self._plan(seed, epoch, position)
        return [{"source": s, "drawn": d, "epoch": e} for s, (d, e) in enumerate(per)]

    def _dataio_check_fields(self, required: Sequence[str]) -> None:
        """Each source's first record has the fields the pipeline's required
        slots read (record maps aside): a typed error names the source."""
        for s, src in enumerate(self.sources):
            if self._lens[s] == 0:
                continue
            rec = src[0]
            missing = [f for f in required if not isinstance(rec, dict) or f not in rec]
            if missing:
                raise InvalidArgumentError(
                    f"mix source {s} ({_describe(src)}) lacks the field(s) {missing} that the pipeline's slots read; "
                    "make those slots optional=True, or map the source's records to the same fields"
                )

    def __repr__(self) -> str:
        parts = ", ".join(f"{_describe(src)} x{w:g}" for src, w in zip(self.sources, self.weights))
        return f"<dataio.mix of {len(self.sources)} sources ({parts}), stop={self.stop!r}>"


def _describe(src: Any) -> str:
    text = repr(src)
    return text if len(text) <= 60 else f"{type(src).__name__} of {len(src)}"


def mix(sources: Sequence[Any], weights: Sequence[float] | None = None, stop: str | int = "first_exhausted") -> MixedRecords:
    """Mixes sized record sources in proportions ``weights`` (equal when
    omitted); see the module docstring for ``stop``."""
    sources = list(sources)
    return MixedRecords(sources, [1.0] * len(sources) if weights is None else weights, stop)
