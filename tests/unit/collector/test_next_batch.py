"""What a delivery thread sends next (collector.next_batch): oldest first, whole items,
claims kept apart while in flight, and a partial batch lingering only while a backlog
drains.  Fake clocks: nothing here waits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collector.backlog import BacklogSignal
from collector.buffer import BufferedEvent, EventBuffer
from collector.delivery_config import DeliveryConfig
from collector.next_batch import NextBatch
from tests.unit.collector.conftest import FakeClock

URL = "http://reporting.test:8779/v1/events"


def _append(buffer: EventBuffer, *ns: int) -> None:
    buffer.append([json.dumps({"event_id": f"e-{n}"}) for n in ns])


def _ids(items: list[BufferedEvent]) -> list[str]:
    return [json.loads(item.value)["event_id"] for item in items]


def _drained(clock: FakeClock) -> BacklogSignal:
    signal = BacklogSignal(clock)
    signal.batch_handled(full=False)  # a partial listener batch: the queue ran dry
    return signal


def _draining(clock: FakeClock) -> BacklogSignal:
    signal = BacklogSignal(clock)
    signal.batch_handled(full=True)  # full batches, no pace yet: more is expected
    return signal


def _next(buffer: EventBuffer, clock: FakeClock, backlog: BacklogSignal | None,
          wall: FakeClock | None = None, **config: Any) -> NextBatch:
    return NextBatch(DeliveryConfig(URL, **config), buffer, backlog, clock=clock,
                     wall_clock=wall or FakeClock(buffer.oldest_stamp() or 0.0))


def test_oldest_first_and_whole_items_while_they_fit(buffer: EventBuffer) -> None:
    _append(buffer, 0, 1, 2)
    _append(buffer, 3, 4, 5)
    _append(buffer, 6, 7, 8)
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock), batch_size=7)
    with batches.claim() as items:
        assert _ids(items) == ["e-0", "e-1", "e-2", "e-3", "e-4", "e-5"]  # not e-6 alone
        with batches.claim() as others:  # a second thread meanwhile
            assert _ids(others) == ["e-6", "e-7", "e-8"]
            with batches.claim() as third:
                assert third == []  # everything is in flight


def test_a_claim_is_released_after_its_block_even_when_it_fails(buffer: EventBuffer) -> None:
    _append(buffer, 0, 1)
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock))
    with pytest.raises(RuntimeError), batches.claim() as items:
        assert len(items) == 2
        raise RuntimeError("the request failed")
    with batches.claim() as again:  # kept in the buffer, claimed again
        assert _ids(again) == ["e-0", "e-1"]


def test_an_item_larger_than_a_batch_is_sent_in_part_and_never_beside_itself(
    buffer: EventBuffer
) -> None:
    _append(buffer, 0, 1, 2, 3, 4)
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock), batch_size=3)
    with batches.claim() as items:
        assert _ids(items) == ["e-0", "e-1", "e-2"]
        with batches.claim() as others:
            assert others == []  # e-3 and e-4 belong to the item in flight
        buffer.remove(items)  # as the sender settles
    with batches.claim() as rest:
        assert _ids(rest) == ["e-3", "e-4"]


def test_the_batch_size_never_passes_the_wire_limit(buffer: EventBuffer) -> None:
    for item in range(3):
        _append(buffer, *range(item * 600, item * 600 + 600))
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock), batch_size=5000)
    with batches.claim() as items:
        assert len(items) == 600  # whole items within 1000


def test_a_partial_batch_waits_for_a_request_in_flight_while_a_backlog_drains(
    buffer: EventBuffer
) -> None:
    _append(buffer, *range(4))
    _append(buffer, 4, 5)
    clock = FakeClock()
    backlog = _draining(clock)
    batches = _next(buffer, clock, backlog, batch_size=4, linger=0.0)
    with batches.claim() as items:
        assert len(items) == 4
        with batches.claim() as rest:
            assert rest == []  # the busy thread takes it, grown, when it is done
        backlog.batch_handled(full=False)  # the backlog is over
        with batches.claim() as rest:
            assert _ids(rest) == ["e-4", "e-5"]  # beside the request in flight


def test_a_partial_batch_lingers_until_its_oldest_event_is_due(buffer: EventBuffer) -> None:
    _append(buffer, 0)
    stamp = buffer.oldest_stamp()
    assert stamp is not None
    clock, wall = FakeClock(), FakeClock(stamp + 0.1)  # the event is 0.1 s old
    batches = _next(buffer, clock, _draining(clock), wall=wall, batch_size=4, linger=1.0,
                    idle_poll=5.0)
    with batches.claim() as items:
        assert items == []
    assert batches.idle_wait() == pytest.approx(0.9)  # wakes when it is due, not at idle_poll
    clock.now += 0.89
    with batches.claim() as items:
        assert items == []
    clock.now += 0.02
    with batches.claim() as items:
        assert _ids(items) == ["e-0"]


def test_a_full_batch_never_lingers(buffer: EventBuffer) -> None:
    _append(buffer, *range(4))
    clock = FakeClock()
    batches = _next(buffer, clock, _draining(clock), batch_size=4, linger=30.0)
    with batches.claim() as items:
        assert len(items) == 4


def test_without_a_backlog_signal_a_partial_batch_is_taken_as_draining(
    buffer: EventBuffer
) -> None:
    _append(buffer, 0)
    clock = FakeClock()
    batches = _next(buffer, clock, None, batch_size=4, linger=30.0)
    with batches.claim() as items:
        assert items == []
    with _next(buffer, clock, None, batch_size=4, linger=0.0).claim() as items:
        assert _ids(items) == ["e-0"]  # linger 0: at once


def test_a_trickle_goes_at_once(buffer: EventBuffer) -> None:
    _append(buffer, 0)
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock), batch_size=4, linger=30.0)
    with batches.claim() as items:
        assert _ids(items) == ["e-0"]


def test_the_rest_goes_once_the_next_full_batch_is_overdue(buffer: EventBuffer) -> None:
    """A backlog that ended on a full listener batch: the rest waits only until the
    next full batch is overdue (twice the usual interval), and idle_wait says when."""
    clock = FakeClock()
    backlog = BacklogSignal(clock)
    backlog.batch_handled(full=True)
    clock.now += 0.05
    backlog.batch_handled(full=True)  # one every 0.05 s: overdue 0.1 s after the last
    _append(buffer, 0)
    batches = _next(buffer, clock, backlog, batch_size=4, linger=30.0, idle_poll=30.0)
    with batches.claim() as items:
        assert items == []
    assert batches.idle_wait() == pytest.approx(0.1)
    clock.now += 0.1
    with batches.claim() as items:
        assert _ids(items) == ["e-0"]


def test_an_item_stamped_in_the_future_does_not_linger(buffer: EventBuffer) -> None:
    _append(buffer, 0)
    stamp = buffer.oldest_stamp()
    assert stamp is not None
    clock = FakeClock()
    batches = _next(buffer, clock, _draining(clock), wall=FakeClock(stamp - 3600),
                    batch_size=4, linger=1.0)
    with batches.claim() as items:
        assert _ids(items) == ["e-0"]


def test_holding_back_reads_the_buffer_once_per_oldest_item(buffer: EventBuffer) -> None:
    """Every listener write wakes the threads; holding back is decided from counts in
    memory, not by reading the buffer each time."""
    _append(buffer, 0)
    stamp = buffer.oldest_stamp()
    assert stamp is not None
    reads = []
    oldest_stamp = buffer.oldest_stamp

    def counted() -> float | None:
        reads.append(1)
        return oldest_stamp()

    buffer.oldest_stamp = counted  # type: ignore[method-assign]
    clock = FakeClock()
    batches = _next(buffer, clock, _draining(clock), wall=FakeClock(stamp), batch_size=4,
                    linger=1.0)
    for _ in range(20):
        with batches.claim() as items:
            assert items == []
    assert len(reads) == 1


def test_idle_wait_is_idle_poll_when_nothing_is_due(buffer: EventBuffer) -> None:
    clock = FakeClock()
    batches = _next(buffer, clock, _drained(clock), idle_poll=0.7)
    with batches.claim() as items:
        assert items == []  # an empty buffer
    assert batches.idle_wait() == 0.7
