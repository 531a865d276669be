"""The shared pause after failed requests (collector.backoff): its bounds, Retry-After,
one pause for concurrent failures, and its clock."""

from __future__ import annotations

import random
import threading

import pytest

from collector.backoff import Backoff
from tests.unit.collector.conftest import FakeClock


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    low = Backoff(1, 10, jitter=lambda a, b: a)
    high = Backoff(1, 10, jitter=lambda a, b: b)
    assert [low.next_delay(None) for _ in range(6)] == [0.5, 1, 2, 4, 5, 5]
    assert [high.next_delay(None) for _ in range(6)] == [1, 2, 4, 8, 10, 10]


@pytest.mark.parametrize(("initial", "maximum"), [(0.5, 60.0), (0.01, 0.02), (3.0, 1.0)])
def test_every_pause_lies_between_half_its_ceiling_and_the_ceiling(
    initial: float, maximum: float
) -> None:
    backoff = Backoff(initial, maximum, jitter=random.Random(7).uniform)
    for failures in range(200):  # far past 2**30: no overflow, the cap holds
        ceiling = min(maximum, initial * 2 ** min(failures, 30))
        assert ceiling / 2 <= backoff.next_delay(None) <= ceiling


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    backoff = Backoff(0.5, 60, jitter=lambda a, b: b)
    assert backoff.next_delay(7.0) == 7.0
    assert backoff.next_delay(1000.0) == 60.0
    assert backoff.next_delay(0.0) == 2.0  # a shorter Retry-After does not shorten it


def test_failures_during_a_pause_join_it_and_count_once() -> None:
    clock = FakeClock()
    backoff = Backoff(10, 1000, jitter=lambda a, b: b, clock=clock)
    assert backoff.remaining() == 0
    assert backoff.failed() == 10  # the first failure starts a pause of 10 s
    clock.now += 4
    assert backoff.failed() == 6  # a second one, in flight meanwhile, joins it
    assert backoff.remaining() == 6
    clock.now += 6
    assert backoff.remaining() == 0
    assert backoff.failed() == 20  # the next failure is the second step, not the third


def test_a_success_ends_the_count() -> None:
    clock = FakeClock()
    backoff = Backoff(1, 100, jitter=lambda a, b: b, clock=clock)
    backoff.failed()
    clock.now += 1
    backoff.failed()
    clock.now += 2
    backoff.succeeded()
    assert backoff.failed() == 1


def test_wait_sleeps_through_the_pause_and_stops_on_request() -> None:
    backoff = Backoff(0.05, 0.05, jitter=lambda a, b: b)
    stop = threading.Event()
    assert backoff.wait(stop) is False  # no pause: at once
    backoff.failed()
    assert backoff.wait(stop) is False  # slept 0.05 s
    assert backoff.remaining() == 0
    backoff = Backoff(1000, 1000)
    backoff.failed()
    stop.set()
    assert backoff.wait(stop) is True
