"""A small progress bar for long operations (the demo, sharded writes,
large fetches). It draws only on a terminal and stays quiet otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int | None, label: str = "", unit: str = "it", stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.count = 0
        self.extra = ""
        self.start = time.perf_counter()
        self._last_draw = 0.0

    def update(self, n: int = 1, extra: str = "") -> None:
        self.count += n
        if extra:
            self.extra = extra
        now = time.perf_counter()
        if self.enabled and (now - self._last_draw > 0.1 or (self.total and self.count >= self.total)):
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.count / max(now - self.start, 1e-9)
        if self.total:
            frac = min(self.count / self.total, 1.0)
            bar = "#" * int(frac * 30)
            head = f"{self.label} [{bar:<30}] {self.count}/{self.total}"
        else:
            head = f"{self.label} {self.count}"
        self.stream.write(f"\r{head} {rate:,.0f} {self.unit}/s {self.extra}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
