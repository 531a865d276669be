"""Sending and settling (collector.sender), the part that must not lose an event:
exactly the events a 200 names leave the buffer, once; a lost answer is sent again and
settled as a duplicate; a split request parks only an event refused on its own, and
only after the parked copy is on disk."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import requests
import requests_mock as rm

from collector.api_client import DeliveryRefused
from collector.buffer import BufferedEvent, EventBuffer
from collector.delivery_config import DeliveryConfig
from collector.metrics import CollectorMetrics
from collector.sender import Sender
from tests.unit.collector.conftest import sample_value

URL = "http://reporting.test:8779/v1/events"
COLLECTOR = Path(__file__).resolve().parents[3] / "collector"


class FakeIngest:
    """Stores each event_id once, as ingest does: a repeat answers duplicate.
    ``lose_answers``: that many requests are stored but their answer is lost;
    ``poisoned``: event_ids refused with 400 in any request holding them."""

    def __init__(self) -> None:
        self.stored: list[str] = []
        self.requests: list[list[str]] = []
        self.lose_answers = 0
        self.poisoned: set[str] = set()

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        ids = [event["event_id"] for event in request.json()["events"]]
        self.requests.append(ids)
        if self.poisoned.intersection(ids):
            context.status_code = 400
            return {"error": {"code": "bad_request", "message": "nests deeper than 64"}}
        results = []
        for index, event_id in enumerate(ids):
            status = "duplicate" if event_id in self.stored else "stored"
            if status == "stored":
                self.stored.append(event_id)
            results.append({"index": index, "event_id": event_id, "status": status})
        if self.lose_answers:
            self.lose_answers -= 1
            raise requests.ConnectionError("connection reset by peer")
        return {"results": results}


@pytest.fixture
def ingest(requests_mock: rm.Mocker) -> FakeIngest:
    fake = FakeIngest()
    requests_mock.post(URL, json=fake)
    return fake


def _sender(buffer: EventBuffer, metrics: CollectorMetrics) -> Sender:
    return Sender(DeliveryConfig(URL, "secret-token"), buffer, metrics)


def _append(buffer: EventBuffer, *ns: int) -> None:
    buffer.append([json.dumps({"event_id": f"e-{n}"}) for n in ns])


def _left(buffer: EventBuffer) -> list[str]:
    return [json.loads(event.value)["event_id"] for event in buffer.peek(1000)]


def _delivered(metrics: CollectorMetrics, outcome: str) -> float:
    return sample_value(metrics, "tally_collector_delivered_total", {"outcome": outcome})


def test_exactly_the_named_events_leave_by_position(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    _append(buffer, 0, 1, 2)
    _append(buffer, 3, 4)
    requests_mock.post(URL, json={"results": [
        {"index": 0, "status": "stored"}, {"index": 2, "status": "duplicate"},
        {"index": 3, "status": "rejected"},
    ]})
    claimed = buffer.peek(10)
    first, second = claimed[0].item, claimed[3].item
    with pytest.raises(DeliveryRefused, match="covered 3 of 5"):
        _sender(buffer, metrics).send(claimed)
    assert _left(buffer) == ["e-1", "e-4"]
    assert [(e.item, e.position) for e in buffer.peek(10)] == [(first, 1), (second, 1)]
    assert buffer.depth() == 2


def test_an_index_named_twice_settles_once(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    _append(buffer, 0, 1)
    requests_mock.post(URL, json={"results": [
        {"index": 0, "status": "stored"}, {"index": 0, "status": "stored"},
        {"index": 1, "status": "stored"},
    ]})
    assert _sender(buffer, metrics).send(buffer.peek(10)) == 2
    assert buffer.depth() == 0
    assert _delivered(metrics, "stored") == 2


@pytest.mark.parametrize("index", [True, 1.0, "1", -1, 2, None])
def test_an_index_that_is_not_one_of_the_request_settles_nothing(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker, index: Any
) -> None:
    _append(buffer, 0, 1)
    requests_mock.post(URL, json={"results": [{"index": 0, "status": "stored"},
                                              {"index": index, "status": "stored"}]})
    with pytest.raises(DeliveryRefused, match="covered 1 of 2"):
        _sender(buffer, metrics).send(buffer.peek(10))
    assert _left(buffer) == ["e-1"]


def test_a_lost_answer_is_sent_again_and_settled_as_a_duplicate(
    buffer: EventBuffer, metrics: CollectorMetrics, ingest: FakeIngest
) -> None:
    _append(buffer, 0, 1, 2)
    ingest.lose_answers = 1
    sender = _sender(buffer, metrics)
    with pytest.raises(DeliveryRefused) as refused:
        sender.send(buffer.peek(10))
    assert refused.value.reason == "connection"
    assert buffer.depth() == 3  # stored by the API, but nobody said so: kept
    assert sender.send(buffer.peek(10)) == 3
    assert buffer.depth() == 0
    assert ingest.stored == ["e-0", "e-1", "e-2"]  # once each
    assert _delivered(metrics, "duplicate") == 3


def test_a_split_settles_each_event_once_and_parks_the_poisoned_one(
    buffer: EventBuffer, metrics: CollectorMetrics, ingest: FakeIngest
) -> None:
    _append(buffer, 0, 1, 2)
    _append(buffer, 3, 4, 5, 6, 7)
    ingest.poisoned = {"e-5"}
    assert _sender(buffer, metrics).send(buffer.peek(10)) == 8
    assert buffer.depth() == 0
    assert sorted(ingest.stored) == [f"e-{n}" for n in range(8) if n != 5]
    settled = [ids for ids in ingest.requests if "e-5" not in ids]
    assert sorted(sum(settled, [])) == sorted(ingest.stored)  # each in one 200 only
    parked = buffer.parked_items()
    assert [json.loads(p["event"])["event_id"] for p in parked] == ["e-5"]
    assert parked[0]["reason"] == "HTTP 400 bad_request: nests deeper than 64"
    assert _delivered(metrics, "stored") == 7
    assert sample_value(metrics, "tally_collector_parked_total", {"reason": "refused"}) == 1
    assert sample_value(metrics, "tally_collector_delivery_failures_total",
                        {"reason": "split"}) >= 1


def test_a_half_that_fails_keeps_its_events_and_parks_nothing(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    _append(buffer, 0, 1, 2, 3)
    ingest = FakeIngest()
    ingest.poisoned = {"e-0"}

    def callback(request: Any, context: Any) -> Any:
        if len(ingest.requests) >= 4:  # e-0 alone refused, e-1 stored, then an outage
            ingest.requests.append([])
            context.status_code = 503
            return {"error": {"code": "database_unavailable", "message": "down"}}
        return ingest(request, context)

    requests_mock.post(URL, json=callback)
    with pytest.raises(DeliveryRefused) as refused:
        _sender(buffer, metrics).send(buffer.peek(10))
    assert refused.value.reason == "server_error"
    assert _left(buffer) == ["e-0", "e-2", "e-3"]  # only e-1 was answered for
    assert buffer.parked_depth() == 0  # e-0 goes again with the rest, parked later


def test_an_api_refusing_every_event_parks_nothing(
    buffer: EventBuffer, metrics: CollectorMetrics, ingest: FakeIngest
) -> None:
    _append(buffer, 0, 1)
    ingest.poisoned = {"e-0", "e-1"}
    with pytest.raises(DeliveryRefused) as refused:
        _sender(buffer, metrics).send(buffer.peek(10))
    assert refused.value.reason == "client_error"
    assert "nests deeper than 64" in str(refused.value)
    assert buffer.depth() == 2 and buffer.parked_depth() == 0


class _ParkingFails(EventBuffer):
    def park(self, record: Any) -> None:
        raise OSError("disk on fire")


def test_an_event_whose_parked_copy_cannot_be_written_stays_buffered(
    tmp_path: Path, metrics: CollectorMetrics, ingest: FakeIngest
) -> None:
    buffer = _ParkingFails(str(tmp_path / "buf"), max_items=100)
    try:
        _append(buffer, 0, 1)
        ingest.poisoned = {"e-1"}
        with pytest.raises(OSError, match="disk on fire"):
            _sender(buffer, metrics).send(buffer.peek(10))
        assert _left(buffer) == ["e-1"]
    finally:
        buffer.close()


def test_the_request_carries_the_claimed_events_and_the_token(
    buffer: EventBuffer, metrics: CollectorMetrics, ingest: FakeIngest,
    requests_mock: rm.Mocker,
) -> None:
    _append(buffer, 0, 1, 2)
    claimed: list[BufferedEvent] = buffer.peek(2)
    assert _sender(buffer, metrics).send(claimed) == 2
    assert ingest.requests == [["e-0", "e-1"]]
    assert _left(buffer) == ["e-2"]
    request = requests_mock.last_request
    assert request is not None
    assert request.headers["Authorization"] == "Bearer secret-token"
    assert request.headers["Content-Type"] == "application/json"


def _buffer_removals(path: Path) -> list[tuple[str, str]]:
    """(module, method) of each call in ``path`` that takes events out of a buffer:
    ``<…buffer>.remove(…)`` and ``move_to_parked(…)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = ast.unparse(node.func.value)
        if node.func.attr == "move_to_parked" or (
                node.func.attr == "remove" and owner.endswith("buffer")):
            found.append((path.name, node.func.attr))
    return found


def test_only_the_sender_takes_events_out_of_the_buffer() -> None:
    """The at-least-once argument lives in collector/sender.py: it holds only if no
    other module removes buffered events."""
    found = [call for path in sorted(COLLECTOR.glob("*.py")) if path.name != "buffer.py"
             for call in _buffer_removals(path)]
    assert sorted(found) == [("sender.py", "move_to_parked"), ("sender.py", "remove")], found
