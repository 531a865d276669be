"""The listener's backlog signal: full batches at a pace, and when the pace stops."""

from __future__ import annotations

import math

from collector.backlog import BacklogSignal
from tests.unit.collector.conftest import FakeClock


def test_no_batch_yet_is_no_backlog() -> None:
    signal = BacklogSignal(FakeClock())
    assert signal.expected_until() == -math.inf
    assert not signal.draining()


def test_a_first_full_batch_expects_more_without_a_known_pace() -> None:
    signal = BacklogSignal(FakeClock())
    signal.batch_handled(full=True)
    assert signal.expected_until() == math.inf
    assert signal.draining()


def test_a_partial_batch_ends_the_backlog_at_once() -> None:
    clock = FakeClock()
    signal = BacklogSignal(clock)
    signal.batch_handled(full=True)
    clock.now += 0.05
    signal.batch_handled(full=True)
    signal.batch_handled(full=False)
    assert signal.expected_until() == -math.inf
    signal.batch_handled(full=True)  # a new backlog starts without the old pace
    assert signal.expected_until() == math.inf


def test_the_next_full_batch_is_expected_within_twice_the_usual_interval() -> None:
    clock = FakeClock()
    signal = BacklogSignal(clock)
    for _ in range(5):
        signal.batch_handled(full=True)
        clock.now += 0.05
    clock.now -= 0.05  # the fifth batch has just been handled
    assert signal.expected_until() == clock.now + 0.1
    clock.now += 0.099
    assert signal.draining()
    clock.now += 0.002  # overdue: the backlog ended on a full batch
    assert not signal.draining()


def test_one_slow_batch_stretches_the_pace_without_ending_the_backlog() -> None:
    clock = FakeClock()
    signal = BacklogSignal(clock)
    signal.batch_handled(full=True)
    for _ in range(4):
        clock.now += 0.05
        signal.batch_handled(full=True)
    clock.now += 0.15  # three usual intervals: a pause (a GIL switch, an fsync)
    signal.batch_handled(full=True)
    # the running average moved a quarter of the way: 0.05 + 0.25 * (0.15 - 0.05)
    assert math.isclose(signal.expected_until() - clock.now, 2 * 0.075)


def test_a_clock_that_steps_back_does_not_make_a_negative_pace() -> None:
    clock = FakeClock()
    signal = BacklogSignal(clock)
    signal.batch_handled(full=True)
    clock.now -= 5
    signal.batch_handled(full=True)
    assert signal.expected_until() == clock.now
    assert not signal.draining()
