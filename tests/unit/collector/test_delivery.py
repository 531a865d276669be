"""Delivery to the Reporting API, against requests-mock answering the SPEC §3.2 contract."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests
import requests_mock as rm

from collector.buffer import EventBuffer
from collector.delivery import Delivery, DeliveryRefused, events_url, read_token
from collector.errors import ConfigurationError
from collector.metrics import CollectorMetrics
from tests.unit.collector.conftest import sample_value

URL = "http://reporting.test:8779/v1/events"


def _event(n: int) -> str:
    return json.dumps({"event_id": f"e-{n}", "n": n})


def _answer(statuses: dict[str, str] | None = None) -> Any:
    """A requests-mock callback answering every item as the contract does."""
    statuses = statuses or {}

    def callback(request: Any, context: Any) -> dict[str, Any]:
        events = request.json()["events"]
        context.status_code = 200
        results = []
        for index, item in enumerate(events):
            status = statuses.get(item["event_id"], "stored")
            result = {"index": index, "event_id": item["event_id"], "status": status}
            if status == "rejected":
                result["reason"] = "event_schema: test"
            results.append(result)
        return {"results": results,
                "stored": sum(r["status"] == "stored" for r in results),
                "duplicates": sum(r["status"] == "duplicate" for r in results),
                "rejected": sum(r["status"] == "rejected" for r in results)}

    return callback


def _delivery(buffer: EventBuffer, metrics: CollectorMetrics, **kwargs: Any) -> Delivery:
    return Delivery(URL, "secret-token", buffer, metrics, jitter=lambda a, b: b, **kwargs)


def test_200_removes_stored_duplicate_and_rejected(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(5)])
    requests_mock.post(URL, json=_answer({"e-1": "duplicate", "e-3": "rejected"}))
    assert _delivery(buffer, metrics).deliver_once() == 5
    assert buffer.depth() == 0
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 3
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "duplicate"}) == 1
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "rejected"}) == 1
    request = requests_mock.last_request
    assert request.headers["Authorization"] == "Bearer secret-token"
    assert request.headers["Content-Type"] == "application/json"
    assert [e["n"] for e in request.json()["events"]] == [0, 1, 2, 3, 4]


def test_batches_hold_at_most_batch_size(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(2500)])
    requests_mock.post(URL, json=_answer())
    delivery = _delivery(buffer, metrics, batch_size=5000)
    sizes = []
    while buffer.depth():
        sizes.append(delivery.deliver_once())
    assert sizes == [1000, 1000, 500]
    assert delivery.deliver_once() == 0


def test_only_answered_items_are_removed(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(3)])
    requests_mock.post(URL, json={"results": [
        {"index": 0, "event_id": "e-0", "status": "stored"},
        {"index": 2, "event_id": "e-2", "status": "weird"},
        {"index": 7, "event_id": "e-7", "status": "stored"},
    ]})
    with pytest.raises(DeliveryRefused) as refused:
        _delivery(buffer, metrics).deliver_once()
    assert refused.value.reason == "bad_response"
    assert [json.loads(e.value)["n"] for e in buffer.peek(10)] == [1, 2]


@pytest.mark.parametrize("body", ["not json", json.dumps({"stored": 1}), json.dumps({"results": 3})])
def test_unreadable_200_keeps_everything(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker, body: str
) -> None:
    buffer.append([_event(1)])
    requests_mock.post(URL, text=body, status_code=200)
    with pytest.raises(DeliveryRefused, match="unreadable"):
        _delivery(buffer, metrics).deliver_once()
    assert buffer.depth() == 1


@pytest.mark.parametrize(("status", "reason"), [
    (500, "server_error"), (503, "server_error"), (429, "throttled"),
    (401, "unauthorized"), (403, "unauthorized"), (404, "client_error"),
])
def test_failures_keep_the_buffer(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker,
    status: int, reason: str,
) -> None:
    buffer.append([_event(1), _event(2)])
    requests_mock.post(URL, status_code=status, json={"error": {"code": "x", "message": "m"}})
    with pytest.raises(DeliveryRefused) as refused:
        _delivery(buffer, metrics).deliver_once()
    assert refused.value.reason == reason
    assert buffer.depth() == 2


@pytest.mark.parametrize("exc", [requests.ConnectionError("refused"), requests.ConnectTimeout("slow")])
def test_connection_errors_keep_the_buffer(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker, exc: Exception
) -> None:
    buffer.append([_event(1)])
    requests_mock.post(URL, exc=exc)
    with pytest.raises(DeliveryRefused) as refused:
        _delivery(buffer, metrics).deliver_once()
    assert refused.value.reason in ("connection", "timeout")
    assert buffer.depth() == 1


def test_retry_after_is_honoured_up_to_the_cap(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(1)])
    requests_mock.post(URL, status_code=429, headers={"Retry-After": "7"})
    delivery = _delivery(buffer, metrics, initial_delay=0.5, max_delay=60)
    with pytest.raises(DeliveryRefused) as refused:
        delivery.deliver_once()
    assert refused.value.retry_after == 7.0
    assert delivery.next_delay(refused.value.retry_after) == 7.0
    assert delivery.next_delay(1000.0) == 60.0


def test_backoff_doubles_with_jitter_and_is_capped(buffer: EventBuffer, metrics: CollectorMetrics) -> None:
    low = Delivery(URL, None, buffer, metrics, initial_delay=1, max_delay=10, jitter=lambda a, b: a)
    high = Delivery(URL, None, buffer, metrics, initial_delay=1, max_delay=10, jitter=lambda a, b: b)
    assert [low.next_delay(None) for _ in range(6)] == [0.5, 1, 2, 4, 5, 5]
    assert [high.next_delay(None) for _ in range(6)] == [1, 2, 4, 8, 10, 10]


def test_400_is_split_and_the_poisoned_item_parked(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(8)])
    answer = _answer()

    def callback(request: Any, context: Any) -> Any:
        if any(e["event_id"] == "e-5" for e in request.json()["events"]):
            context.status_code = 400
            return {"error": {"code": "bad_request", "message": "no"}}
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert _delivery(buffer, metrics).deliver_once() == 8
    assert buffer.depth() == 0
    parked = buffer.parked_items()
    assert len(parked) == 1 and json.loads(parked[0]["event"])["event_id"] == "e-5"
    assert parked[0]["reason"] == "HTTP 400 bad_request"
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 7
    assert sample_value(metrics, "tally_collector_parked_total", {"reason": "refused"}) == 1


def test_413_is_split_until_it_fits(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(10)])
    answer = _answer()
    seen = []

    def callback(request: Any, context: Any) -> Any:
        count = len(request.json()["events"])
        seen.append(count)
        if count > 3:
            context.status_code = 413
            return {"error": {"code": "too_large", "message": "no"}}
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert _delivery(buffer, metrics).deliver_once() == 10
    assert buffer.depth() == 0 and buffer.parked_depth() == 0
    assert seen[0] == 10 and max(seen[1:]) <= 5


def test_an_api_refusing_everything_parks_nothing(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(4)])
    requests_mock.post(URL, status_code=400, json={"error": {"code": "bad", "message": "x"}})
    with pytest.raises(DeliveryRefused) as refused:
        _delivery(buffer, metrics).deliver_once()
    assert refused.value.reason == "client_error"
    assert buffer.depth() == 4 and buffer.parked_depth() == 0


def test_run_retries_until_the_api_answers(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(3)])
    requests_mock.post(URL, [
        {"exc": requests.ConnectionError("down")},
        {"status_code": 503},
        {"json": _answer()},
    ])
    delivery = Delivery(URL, None, buffer, metrics, initial_delay=0.01, max_delay=0.02,
                        idle_poll=0.01)
    stop, written = threading.Event(), threading.Event()
    thread = threading.Thread(target=delivery.run, args=(stop, written))
    thread.start()
    try:
        for _ in range(500):
            if buffer.depth() == 0:
                break
            stop.wait(0.01)
    finally:
        stop.set()
        written.set()
        thread.join(5)
    assert buffer.depth() == 0
    assert sample_value(metrics, "tally_collector_delivery_failures_total", {"reason": "connection"}) == 1
    assert sample_value(metrics, "tally_collector_delivery_failures_total", {"reason": "server_error"}) == 1
    assert "Authorization" not in requests_mock.last_request.headers


@pytest.mark.parametrize("url", ["", "127.0.0.1:8779", "ftp://host/", "http://", "http://h:99999"])
def test_malformed_reporting_url(url: str) -> None:
    with pytest.raises(ConfigurationError, match="reporting_url"):
        events_url(url)


def test_events_url() -> None:
    assert events_url("http://127.0.0.1:8779/") == "http://127.0.0.1:8779/v1/events"
    assert events_url("https://api.example/tally") == "https://api.example/tally/v1/events"


def test_read_token(tmp_path: Any) -> None:
    path = tmp_path / "token"
    path.write_text("  abc123\n")
    assert read_token(str(path)) == "abc123"
    assert read_token(None) is None
    path.write_text("\n")
    with pytest.raises(ConfigurationError, match="empty"):
        read_token(str(path))
    with pytest.raises(ConfigurationError, match="token_file"):
        read_token(str(tmp_path / "missing"))
