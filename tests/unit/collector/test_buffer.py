"""The durable disk buffer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.buffer import EventBuffer
from collector.errors import ConfigurationError


def _values(buffer: EventBuffer, limit: int = 100) -> list[str]:
    return [event.value for event in buffer.peek(limit)]


def test_fifo_peek_and_exact_removal(buffer: EventBuffer) -> None:
    buffer.append(['{"n":1}', '{"n":2}'])
    buffer.append(['{"n":3}'])
    items = buffer.peek(10)
    assert [e.value for e in items] == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert _values(buffer, 2) == ['{"n":1}', '{"n":2}']
    buffer.remove([items[1]])
    assert _values(buffer) == ['{"n":1}', '{"n":3}']
    assert buffer.depth() == 2
    buffer.remove([e for e in buffer.peek(10) if e.value == '{"n":1}'])
    assert _values(buffer) == ['{"n":3}']
    assert len(buffer._cache) == 1          # the emptied item is gone
    assert buffer.depth() == 1


def test_peek_takes_whole_items_up_to_the_limit(buffer: EventBuffer) -> None:
    buffer.append([f'{{"n":{n}}}' for n in range(3)])
    buffer.append([f'{{"n":{n}}}' for n in range(3, 6)])
    assert len(buffer.peek(4)) == 3          # the second item does not fit
    assert len(buffer.peek(6)) == 6
    assert len(buffer.peek(2)) == 2          # an item larger than the limit is cut


def test_partial_settlement_survives_reopening(tmp_path: Path) -> None:
    first = EventBuffer(str(tmp_path / "b"), max_items=10)
    first.append(['{"a":1}', '{"b":2}', '{"c":3}'])
    first.remove([first.peek(10)[1]])
    first.close()
    second = EventBuffer(str(tmp_path / "b"), max_items=10)
    try:
        assert second.depth() == 2
        assert _values(second) == ['{"a":1}', '{"c":3}']
        assert [e.position for e in second.peek(10)] == [0, 2]
    finally:
        second.close()


def test_one_collector_per_directory(tmp_path: Path) -> None:
    first = EventBuffer(str(tmp_path / "b"), max_items=10)
    try:
        with pytest.raises(ConfigurationError, match="in use by another collector"):
            EventBuffer(str(tmp_path / "b"), max_items=10)
    finally:
        first.close()


def test_contents_survive_reopening(tmp_path: Path) -> None:
    first = EventBuffer(str(tmp_path / "b"), max_items=10)
    first.append(['{"a":1}', '{"b":2}'])
    first.close()
    second = EventBuffer(str(tmp_path / "b"), max_items=10)
    try:
        assert _values(second) == ['{"a":1}', '{"b":2}']
        assert second.depth() == 2
    finally:
        second.close()


def test_nothing_is_evicted(tmp_path: Path) -> None:
    buf = EventBuffer(str(tmp_path / "b"), max_items=10)
    try:
        assert buf._cache.eviction_policy == "none"
        assert buf._cache.sqlite_synchronous == 2
        big = json.dumps({"x": "y" * 100_000})
        buf.append([big] * 3)
        assert buf.depth() == 3
        # values stay inside SQLite (part of the transaction), never in side files
        assert not list((tmp_path / "b").rglob("*.val"))
    finally:
        buf.close()


def test_is_full_at_the_limit(tmp_path: Path) -> None:
    buf = EventBuffer(str(tmp_path / "b"), max_items=2)
    try:
        buf.append(["1"])
        assert not buf.is_full()
        buf.append(["2"])
        assert buf.is_full()
    finally:
        buf.close()


def test_oldest_age(buffer: EventBuffer) -> None:
    assert buffer.oldest_age() == 0.0
    buffer.append(["{}"])
    (_, _), stored_at = buffer._cache.peek(tag=True)
    assert buffer.oldest_age(now=stored_at + 42.5) == pytest.approx(42.5)
    buffer.append(["{}"])
    (_, _), second_at = buffer._cache.peek(tag=True)  # still the first item
    assert second_at == stored_at
    buffer.remove(buffer.peek(1))  # the first item settled: the second is the oldest
    (_, _), second_at = buffer._cache.peek(tag=True)
    assert buffer.oldest_age(now=second_at + 1.0) == pytest.approx(1.0)
    buffer.remove(buffer.peek(1))
    assert buffer.oldest_age() == 0.0


def test_parking_keeps_the_item(buffer: EventBuffer) -> None:
    buffer.append(['{"e":1}', '{"e":2}'])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 400")
    assert _values(buffer) == ['{"e":2}']
    (record,) = buffer.parked_items()
    # Each parked item gets its key in the Reporting API's dead letter when it is parked.
    assert record == {"reason": "HTTP 400", "event": '{"e":1}', "parked_id": record["parked_id"]}
    assert len(record["parked_id"]) == 32
    assert buffer.parked_depth() == 1


def test_unwritable_directory_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigurationError, match="buffer_dir"):
        EventBuffer(str(blocker / "buffer"), max_items=1)
