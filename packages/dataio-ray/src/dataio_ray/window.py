"""The Ray executor's bookkeeping of one epoch's batches, apart from Ray.

:class:`BatchWindow` knows which planned batches are in the window (between
planning and delivery), which wait for a worker (retries first), which came
back ready, which one may be delivered next (submit or completion order), and
the resume position after the contiguous prefix of delivered batches (the
core's :class:`dataio.contract.DeliveryTracker`, the one the native loader
uses). It never touches ``ray``: ``RayEpochRun`` drives it with what the
cluster reports, and the tests drive it by hand.
"""

from __future__ import annotations

import collections
import heapq
from collections.abc import Iterator
from typing import Any, Protocol

from dataio.contract import DeliveryTracker, PlannedBatch

__all__ = ["BatchWindow", "Delivered", "RetriesSpent"]


class Delivered(Protocol):
    """A batch that came back from a worker, finished or failed."""

    @property
    def seq(self) -> int: ...


class RetriesSpent(Exception):
    """Batch ``seq`` was lost ``lost`` times, more than the retry budget allows."""

    def __init__(self, seq: int, lost: int) -> None:
        super().__init__(f"batch {seq} was lost {lost} times")
        self.seq = seq
        self.lost = lost


class BatchWindow:
    """One epoch's planned batches from planning to delivery.

    * ``size`` — at most this many planned batches are undelivered (in
      flight, ready, or waiting for a worker): :meth:`top_up` plans up to it.
    * ``start`` — the epoch's resume position (``EpochJob.start``); planned
      ``seq`` numbers start at 0 for every plan.
    * ``completion`` — deliver whatever is ready (``order="completion"``)
      rather than the oldest planned batch first.
    """

    def __init__(self, plan: Iterator[PlannedBatch], *, size: int, start: int, completion: bool) -> None:
        self.size = size
        self.completion = completion
        self.delivered = 0  # batches delivered this epoch
        self._plan = plan
        self._plan_done = False
        self._planned: dict[int, PlannedBatch] = {}  # in the window, not delivered
        self._queue: list[int] = []  # heap of seqs waiting for a worker (retries go first: lower seqs)
        self._attempts: collections.Counter[int] = collections.Counter()  # calls each seq was sent in
        self._ready: dict[int, Any] = {}  # seq → what came back, not delivered, in arrival order
        self._tracker = DeliveryTracker(start)

    # -- planning -------------------------------------------------------------

    def top_up(self) -> None:
        """Plans batches until the window is full; each waits for a worker."""
        while not self._plan_done and len(self._planned) < self.size:
            try:
                planned = next(self._plan)
            except StopIteration:
                self._plan_done = True
                break
            self._planned[planned.seq] = planned
            heapq.heappush(self._queue, planned.seq)

    @property
    def done(self) -> bool:
        """The plan is exhausted and every planned batch was delivered."""
        return self._plan_done and not self._planned

    # -- dispatch -------------------------------------------------------------

    @property
    def queued(self) -> int:
        """Batches waiting for a worker."""
        return len(self._queue)

    @property
    def retry_next(self) -> bool:
        """The next batch to send was lost before: it goes alone, to an idle worker."""
        return bool(self._queue) and self._attempts[self._queue[0]] > 0

    def take(self, per_call: int, max_retries: int) -> list[int]:
        """The seqs of the next call, lowest first: a batch lost before goes
        alone; otherwise up to ``per_call`` batches never sent. Raises
        :class:`RetriesSpent` for a batch lost more than ``max_retries`` times."""
        retry = self.retry_next
        want = 1 if retry else min(per_call, len(self._queue))
        seqs: list[int] = []
        while len(seqs) < want and self._queue and (retry or self._attempts[self._queue[0]] == 0):
            seqs.append(heapq.heappop(self._queue))
        for s in seqs:
            if self._attempts[s] > max_retries:
                raise RetriesSpent(s, self._attempts[s])
            self._attempts[s] += 1
        return seqs

    def batches(self, seqs: list[int]) -> list[PlannedBatch]:
        return [self._planned[s] for s in seqs]

    def rows(self, seqs: list[int]) -> int:
        """Records of those of ``seqs`` still in the window."""
        return sum(len(self._planned[s]) for s in seqs if s in self._planned)

    def requeue(self, seqs: list[int]) -> int:
        """A call was lost: its batches not back yet wait for a worker again
        (ahead of every batch never sent). Returns how many."""
        lost = 0
        for s in seqs:
            if s in self._planned and s not in self._ready:
                heapq.heappush(self._queue, s)
                lost += 1
        return lost

    # -- results and delivery -------------------------------------------------

    def arrived(self, item: Delivered) -> bool:
        """Keeps a batch that came back; ``False`` for one that is not wanted
        (a duplicate from a retried call, or already delivered)."""
        if item.seq not in self._planned or item.seq in self._ready:
            return False
        self._ready[item.seq] = item
        return True

    def take_deliverable(self) -> Any:
        """The batch to deliver now, or ``None``: in submit order the oldest
        planned batch once it is ready; in completion order the first ready."""
        if not self._ready:
            return None
        if self.completion:
            seq = next(iter(self._ready))
        else:
            # Delivered in order so far: the oldest undelivered batch is the
            # first seq past the delivered prefix.
            seq = self._tracker.next_seq
            if seq not in self._ready:
                return None
        return self._ready.pop(seq)

    def deliver(self, seq: int) -> None:
        """Batch ``seq`` went to the consumer: it leaves the window and the
        position moves over the contiguous prefix of delivered batches."""
        planned = self._planned.pop(seq)
        self._attempts.pop(seq, None)
        self.delivered += 1
        self._tracker.delivered(seq, planned.end_position)

    @property
    def position(self) -> int:
        """The ``end_position`` of the last batch of the contiguous prefix of
        delivered batches (the epoch's start before any): a checkpoint never
        skips a batch that a later one overtook."""
        return self._tracker.position

    @property
    def ahead(self) -> int:
        """Delivered batches past that prefix (completion order)."""
        return self._tracker.ahead

    @property
    def ahead_ends(self) -> list[int]:
        """The end positions of those batches (a checkpoint keeps them)."""
        return self._tracker.ahead_ends

    # -- counts and release ---------------------------------------------------

    @property
    def undelivered(self) -> int:
        """Planned batches in the window, ready ones included."""
        return len(self._planned)

    @property
    def ready(self) -> int:
        return len(self._ready)

    def close(self) -> bool:
        """Drops every batch and stops planning; ``True`` if the epoch was
        not finished."""
        unfinished = bool(self._planned) or not self._plan_done
        self._ready.clear()
        self._planned.clear()
        self._queue.clear()
        stop_planning = getattr(self._plan, "close", None)  # a generator over the native planner
        if stop_planning is not None:
            stop_planning()
        return unfinished
