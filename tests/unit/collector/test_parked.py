"""python -m collector.parked: list and requeue the parked store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collector import parked
from collector.buffer import EventBuffer


def test_list_and_requeue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = str(tmp_path / "buffer")
    buffer = EventBuffer(directory, max_items=100)
    buffer.append(['{"event_id":"a"}', '{"event_id":"b"}'])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 400 bad_request")
    buffer.park({"reason": "buffer write failed repeatedly",
                 "notification": {"event_type": "volume.create.end", "event": '{"event_id":"c"}'}})
    buffer.park({"reason": "unmappable: x", "notification": {"event_type": "t", "payload": {}}})
    buffer.close()

    assert parked.main(["--buffer-dir", directory, "list"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["kind"], line["reason"]) for line in lines] == [
        ("event", "HTTP 400 bad_request"),
        ("event", "buffer write failed repeatedly"),
        ("notification", "unmappable: x"),
    ]

    assert parked.main(["--buffer-dir", directory, "requeue"]) == 0
    assert "requeued 2 parked events; 1 raw notifications stay parked" in capsys.readouterr().out
    buffer = EventBuffer(directory, max_items=100)
    try:
        assert sorted(json.loads(e.value)["event_id"] for e in buffer.peek(10)) == ["a", "b", "c"]
        assert [r["reason"] for r in buffer.parked_items()] == ["unmappable: x"]
    finally:
        buffer.close()


def test_refuses_a_buffer_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = str(tmp_path / "buffer")
    running = EventBuffer(directory, max_items=10)
    try:
        assert parked.main(["--buffer-dir", directory, "list"]) == 2
        assert "in use by another collector" in capsys.readouterr().err
    finally:
        running.close()
