"""The Ray executor's window bookkeeping (``dataio_ray.window.BatchWindow``),
driven by hand: no Ray, no cluster. Which batches go out (retries first and
alone), which one is delivered next in submit and in completion order, and
the resume position after the contiguous prefix of delivered batches."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from dataio.contract import PlannedBatch
from dataio_ray.window import BatchWindow, RetriesSpent

ROWS = 4  # records per planned batch


def _plan(n: int, *, start: int = 0) -> Iterator[PlannedBatch]:
    """``n`` planned batches of ``ROWS`` records from position ``start`` on."""
    for seq in range(n):
        first = start + seq * ROWS
        positions = list(range(first, first + ROWS))
        yield PlannedBatch(seq, first + ROWS, positions, positions, [{"i": p} for p in positions])


def _end(seq: int, start: int = 0) -> int:
    return start + (seq + 1) * ROWS


@dataclass
class _Back:
    """A batch as it comes back from a worker."""

    seq: int


def _window(n: int, *, size: int = 8, start: int = 0, completion: bool = False) -> BatchWindow:
    window = BatchWindow(_plan(n, start=start), size=size, start=start, completion=completion)
    window.top_up()
    return window


def _deliver_next(window: BatchWindow) -> int | None:
    item = window.take_deliverable()
    if item is None:
        return None
    window.deliver(item.seq)
    return item.seq


def test_the_window_imports_no_ray() -> None:
    code = "import sys, dataio_ray.window; assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_top_up_plans_up_to_the_window_and_sends_in_calls_of_per_call_batches() -> None:
    window = _window(7, size=5)
    assert (window.undelivered, window.queued, window.position) == (5, 5, 0)
    assert window.take(2, max_retries=3) == [0, 1]
    assert window.take(2, max_retries=3) == [2, 3]
    assert window.take(2, max_retries=3) == [4]
    assert window.queued == 0
    # Full: nothing more is planned until a batch is delivered.
    window.top_up()
    assert window.undelivered == 5 and window.queued == 0
    assert [b.seq for b in window.batches([3, 4])] == [3, 4]
    assert window.rows([3, 4, 99]) == 2 * ROWS


def test_submit_order_delivers_the_oldest_planned_batch_first() -> None:
    window = _window(4, size=4, start=100)
    window.take(4, max_retries=3)
    assert window.arrived(_Back(2)) and window.arrived(_Back(1))
    assert window.take_deliverable() is None, "batch 0 is not back: nothing may overtake it"
    assert (window.position, window.ready) == (100, 2)
    assert window.arrived(_Back(0))
    assert [_deliver_next(window) for _ in range(4)] == [0, 1, 2, None]
    assert (window.position, window.ahead, window.delivered) == (_end(2, 100), 0, 3)
    window.arrived(_Back(3))
    assert _deliver_next(window) == 3
    assert window.position == _end(3, 100)


def test_completion_order_position_does_not_pass_a_gap_and_jumps_when_it_is_filled() -> None:
    window = _window(5, completion=True, start=40)
    window.take(5, max_retries=3)
    for seq in (2, 1, 4):
        window.arrived(_Back(seq))
    # Delivered as they came back...
    assert [_deliver_next(window) for _ in range(4)] == [2, 1, 4, None]
    # ...but the position stays at the epoch's start while batch 0 is missing:
    # a checkpoint taken now replays 1, 2 and 4 rather than losing 0.
    assert (window.position, window.ahead) == (40, 3)
    window.arrived(_Back(0))
    assert _deliver_next(window) == 0
    # The gap is filled: the position jumps over 0, 1, 2 and stops at 3.
    assert (window.position, window.ahead) == (_end(2, 40), 1)
    window.arrived(_Back(3))
    assert _deliver_next(window) == 3
    assert (window.position, window.ahead) == (_end(4, 40), 0)
    assert window.done


def test_a_lost_call_goes_back_first_and_each_retry_goes_alone() -> None:
    window = _window(6, size=6)
    assert window.take(3, max_retries=3) == [0, 1, 2]
    assert window.take(3, max_retries=3) == [3, 4, 5]
    window.arrived(_Back(4))
    # The worker holding 3, 4, 5 died: 4 came back before, so only 3 and 5 are lost.
    assert window.requeue([3, 4, 5]) == 2
    assert window.retry_next and window.queued == 2
    assert window.take(3, max_retries=3) == [3], "a retry goes alone"
    assert window.take(3, max_retries=3) == [5]
    assert not window.retry_next and window.queued == 0


def test_retries_go_ahead_of_batches_never_sent_and_never_share_a_call_with_them() -> None:
    window = _window(8, size=4)
    assert window.take(2, max_retries=3) == [0, 1]
    window.arrived(_Back(0))
    _deliver_next(window)
    window.top_up()  # 4 is planned behind 2 and 3, which were never sent
    assert window.requeue([1]) == 1
    assert window.take(4, max_retries=3) == [1]
    assert window.take(4, max_retries=3) == [2, 3, 4]


def test_a_batch_lost_past_the_retry_budget_ends_the_epoch() -> None:
    window = _window(2)
    for lost in range(2):
        assert window.take(1, max_retries=1) == [0]
        assert window.requeue([0]) == 1, lost
    with pytest.raises(RetriesSpent) as e:
        window.take(1, max_retries=1)
    assert (e.value.seq, e.value.lost) == (0, 2)


def test_duplicates_and_delivered_batches_are_not_kept() -> None:
    window = _window(3)
    window.take(3, max_retries=3)
    assert window.arrived(_Back(0))
    assert not window.arrived(_Back(0)), "a duplicate from a retried call"
    _deliver_next(window)
    assert not window.arrived(_Back(0)), "delivered already"
    assert window.requeue([0]) == 0, "a delivered batch is never sent again"
    assert not window.arrived(_Back(7)), "never planned"


def test_the_end_of_the_plan() -> None:
    empty = _window(0)
    assert empty.done and empty.take_deliverable() is None and empty.position == 0
    window = _window(2, size=5, start=8)
    assert not window.done, "planned, not delivered"
    window.take(2, max_retries=3)
    for seq in (0, 1):
        window.arrived(_Back(seq))
        assert _deliver_next(window) == seq
    window.top_up()
    assert window.done and window.undelivered == 0 and window.position == _end(1, 8)
    assert window.close() is False, "a finished epoch"


def test_close_mid_epoch_stops_planning_and_drops_every_batch() -> None:
    closed = []

    def plan() -> Iterator[PlannedBatch]:
        try:
            yield from _plan(10)
        finally:
            closed.append(True)

    window = BatchWindow(plan(), size=3, start=0, completion=False)
    window.top_up()
    window.take(1, max_retries=3)
    window.arrived(_Back(0))
    assert window.close() is True, "an unfinished epoch"
    assert closed == [True]
    assert (window.undelivered, window.ready, window.queued) == (0, 0, 0)
