"""python -m collector.parked: list and requeue the parked store, with the collector
stopped and beside a running one (another process: the parked store is a diskcache
database both use at once)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests_mock as rm

from collector import parked
from collector.buffer import EventBuffer
from collector.forward import ParkedForwarder
from collector.metrics import CollectorMetrics

URL = "http://reporting.test:8779/v1/rejected-events"


def park_three(buffer: EventBuffer) -> None:
    buffer.append(['{"event_id":"a"}', '{"event_id":"b"}'])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 400 bad_request")
    buffer.park({"reason": "buffer write failed repeatedly",
                 "notification": {"event_type": "volume.create.end", "event": '{"event_id":"c"}'}})
    buffer.park({"reason": "unmappable: x", "notification": {"event_type": "t", "payload": {}}})


def test_list_and_requeue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = str(tmp_path / "buffer")
    buffer = EventBuffer(directory, max_items=100)
    park_three(buffer)
    buffer.close()

    assert parked.main(["--buffer-dir", directory, "list"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["kind"], line["reason"], line["requeue_requested"]) for line in lines] == [
        ("event", "HTTP 400 bad_request", False),
        ("event", "buffer write failed repeatedly", False),
        ("notification", "unmappable: x", False),
    ]
    assert all(len(line["parked_id"]) == 32 for line in lines)

    assert parked.main(["--buffer-dir", directory, "requeue"]) == 0
    assert "requeued 2 parked events; 1 raw notifications stay parked" in capsys.readouterr().out
    buffer = EventBuffer(directory, max_items=100)
    try:
        assert sorted(json.loads(e.value)["event_id"] for e in buffer.peek(10)) == ["a", "b", "c"]
        assert buffer.depth() == 3
        assert [r["reason"] for r in buffer.parked_items()] == ["unmappable: x"]
    finally:
        buffer.close()


def test_list_beside_a_running_collector(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    directory = str(tmp_path / "buffer")
    running = EventBuffer(directory, max_items=10)  # holds the directory's lock
    try:
        park_three(running)
        assert parked.main(["--buffer-dir", directory, "list"]) == 0
        assert len(capsys.readouterr().out.splitlines()) == 3
    finally:
        running.close()


def test_a_directory_without_a_parked_store_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parked.main(["--buffer-dir", str(tmp_path / "typo"), "list"]) == 2
    assert "holds no parked store" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_requeue_beside_a_running_collector(tmp_path: Path, requests_mock: rm.Mocker) -> None:
    """The command runs as another process while this one is the collector: it holds
    the buffer, parks new items all along and runs its forwarder against an API that
    does not answer (so the items stay parked)."""
    directory = str(tmp_path / "buffer")
    requests_mock.post(URL, status_code=503, json={})
    buffer = EventBuffer(directory, max_items=1_000_000)
    metrics = CollectorMetrics()
    stop = threading.Event()
    forward = ParkedForwarder(URL, None, buffer, metrics, threading.Event(),
                              initial_delay=60, max_delay=60, poll=0.05)
    try:
        park_three(buffer)
        forwarder = threading.Thread(target=forward.run, args=(stop,))
        forwarder.start()
        parking_more = 0

        def keep_parking() -> None:  # the listener parks beside the command's writes
            nonlocal parking_more
            while not stop.is_set():
                buffer.park({"reason": "unmappable: y",
                             "notification": {"event_type": "t", "n": parking_more}})
                parking_more += 1
                time.sleep(0.002)

        parker = threading.Thread(target=keep_parking)
        parker.start()
        command = subprocess.run(
            [sys.executable, "-m", "collector.parked", "--buffer-dir", directory, "requeue",
             "--wait", "30"], capture_output=True, text=True, timeout=120)
        stop.set()
        parker.join(10)
        forwarder.join(10)
        assert command.returncode == 0, command.stderr
        assert ("a collector runs on this buffer: marked 2 parked events for requeue, 2 moved "
                "into the buffer by it") in command.stdout
        # The running collector moved them (its count is right); nothing else moved,
        # nothing parked meanwhile was lost.
        assert sorted(json.loads(e.value)["event_id"] for e in buffer.peek(10)) == ["a", "b", "c"]
        assert buffer.depth() == 3
        left = buffer.parked_items()
        assert parking_more > 0
        assert [r["reason"] for r in left] == ["unmappable: x"] + ["unmappable: y"] * parking_more
        assert [r["notification"]["n"] for r in left[1:]] == list(range(parking_more))
        assert not any(r.get("requeue") for r in left)
    finally:
        stop.set()
        buffer.close()
