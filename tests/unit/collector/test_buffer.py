"""The durable disk buffer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector.buffer import EventBuffer
from collector.errors import ConfigurationError


def test_fifo_peek_and_exact_removal(buffer: EventBuffer) -> None:
    buffer.append(['{"n":1}', '{"n":2}'])
    buffer.append(['{"n":3}'])
    items = buffer.peek(10)
    assert [value for _, value in items] == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert [value for _, value in buffer.peek(2)] == ['{"n":1}', '{"n":2}']
    buffer.remove([items[1][0]])
    assert [value for _, value in buffer.peek(10)] == ['{"n":1}', '{"n":3}']
    assert buffer.depth() == 2


def test_contents_survive_reopening(tmp_path: Path) -> None:
    first = EventBuffer(str(tmp_path / "b"), max_items=10)
    first.append(['{"a":1}', '{"b":2}'])
    first.close()
    second = EventBuffer(str(tmp_path / "b"), max_items=10)
    try:
        assert [v for _, v in second.peek(10)] == ['{"a":1}', '{"b":2}']
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


def test_parking_keeps_the_item(buffer: EventBuffer) -> None:
    buffer.append(['{"e":1}', '{"e":2}'])
    key, value = buffer.peek(1)[0]
    buffer.move_to_parked(key, value, "HTTP 400")
    assert [v for _, v in buffer.peek(10)] == ['{"e":2}']
    assert buffer.parked_items() == [{"reason": "HTTP 400", "event": '{"e":1}'}]
    assert buffer.parked_depth() == 1


def test_unwritable_directory_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigurationError, match="buffer_dir"):
        EventBuffer(str(blocker / "buffer"), max_items=1)
