"""Parked items to the Reporting API's dead letter (collector.forward), against a fake API
(requests-mock answering the contract of docs/reporting-api.md): filed under their
parked_id, removed only once filed, kept while the API does not answer."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
import requests
import requests_mock as rm

from collector.api_client import DeliveryRefused
from collector.buffer import EventBuffer
from collector.forward import ParkedForwarder
from collector.metrics import CollectorMetrics
from tests.unit.collector.conftest import sample_value

URL = "http://reporting.test:8779/v1/rejected-events"
EVENT = '{"event_id":"e-1","cloud":"os-unit"}'


class FakeDeadLetter:
    """Files each key once, as the API does; ``status`` answers instead when set."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.requests: list[list[dict[str, Any]]] = []
        self.status: int | None = None
        self.too_large: set[str] = set()  # raws refused with 413 when sent in a batch

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        items = request.json()["items"]
        self.requests.append(items)
        if self.status is not None:
            context.status_code = self.status
            return {"error": {"code": "unavailable", "message": "database down"}}
        if any(item["raw"] in self.too_large for item in items):
            context.status_code = 413
            return {"error": {"code": "request_entity_too_large", "message": "over 10 MiB"}}
        results = []
        for index, item in enumerate(items):
            new = item["key"] not in self.rows
            self.rows.setdefault(item["key"], {**item, "id": len(self.rows) + 1})
            results.append({"index": index, "key": item["key"],
                            "id": self.rows[item["key"]]["id"],
                            "status": "filed" if new else "duplicate"})
        filed = sum(r["status"] == "filed" for r in results)
        return {"results": results, "filed": filed, "duplicates": len(results) - filed}


@pytest.fixture
def api(requests_mock: rm.Mocker) -> FakeDeadLetter:
    fake = FakeDeadLetter()
    requests_mock.post(URL, json=fake)
    return fake


def forwarder(buffer: EventBuffer, metrics: CollectorMetrics,
              written: threading.Event | None = None) -> ParkedForwarder:
    return ParkedForwarder(URL, "tok-ingest", buffer, metrics, written or threading.Event(),
                           jitter=lambda a, b: b)


def park_each_kind(buffer: EventBuffer) -> None:
    buffer.append([EVENT])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 413 request_entity_too_large: too big")
    buffer.park({"reason": "buffer write failed repeatedly",
                 "notification": {"event_type": "volume.create.end", "event": '{"event_id":"e-2"}'}})
    buffer.park({"reason": "unmappable: ValueError: NaN",
                 "notification": {"event_type": "compute.instance.exists",
                                  "payload": {"vcpus": float("nan")}}})


def test_every_kind_is_filed_under_its_parked_id_then_removed(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter,
    requests_mock: rm.Mocker
) -> None:
    park_each_kind(buffer)
    ids = [record["parked_id"] for record in buffer.parked_items()]
    assert forwarder(buffer, metrics).forward_once() == 3
    (sent,) = api.requests
    assert [item["key"] for item in sent] == ids
    assert [item["raw"] for item in sent] == [
        EVENT, '{"event_id":"e-2"}',
        '{"event_type": "compute.instance.exists", "payload": {"vcpus": NaN}}']
    assert [item["reason"] for item in sent] == [
        "HTTP 413 request_entity_too_large: too big", "buffer write failed repeatedly",
        "unmappable: ValueError: NaN"]
    assert requests_mock.last_request.headers["Authorization"] == "Bearer tok-ingest"
    assert buffer.parked_depth() == 0
    assert sample_value(metrics, "tally_collector_parked_forwarded_total",
                        {"outcome": "filed"}) == 3


@pytest.mark.parametrize(("failure", "reason"), [
    ({"exc": requests.exceptions.ConnectionError}, "connection"),
    ({"exc": requests.exceptions.ConnectTimeout}, "timeout"),
    ({"status_code": 503, "json": {}}, "server_error"),
    ({"status_code": 429, "json": {}}, "throttled"),
    ({"status_code": 401, "json": {}}, "unauthorized"),
    ({"status_code": 404, "json": {}}, "client_error"),  # an API without the route
])
def test_nothing_leaves_while_the_api_does_not_file_it(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker,
    failure: dict[str, Any], reason: str
) -> None:
    park_each_kind(buffer)
    requests_mock.post(URL, **failure)
    with pytest.raises(DeliveryRefused) as refused:
        forwarder(buffer, metrics).forward_once()
    assert refused.value.reason == reason
    assert buffer.parked_depth() == 3


def test_a_retry_after_a_lost_answer_names_the_same_items(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter,
    requests_mock: rm.Mocker
) -> None:
    park_each_kind(buffer)
    # The API commits, then the answer is lost: the items stay, and the next attempt
    # sends the very same keys, which the API answers as duplicates.
    def lost(request: Any, context: Any) -> Any:
        api(request, context)
        raise requests.exceptions.ConnectionError("connection reset")

    requests_mock.post(URL, json=lost)
    with pytest.raises(DeliveryRefused):
        forwarder(buffer, metrics).forward_once()
    assert buffer.parked_depth() == 3 and len(api.rows) == 3
    requests_mock.post(URL, json=api)
    assert forwarder(buffer, metrics).forward_once() == 3
    assert api.requests[0] == api.requests[1]
    assert len(api.rows) == 3 and buffer.parked_depth() == 0
    assert sample_value(metrics, "tally_collector_parked_forwarded_total",
                        {"outcome": "duplicate"}) == 3


def test_an_item_the_api_will_not_file_stays_and_the_rest_goes(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter
) -> None:
    park_each_kind(buffer)
    api.too_large.add('{"event_id":"e-2"}')
    forward = forwarder(buffer, metrics)
    assert forward.forward_once() == 2  # split: the one refused alone stays
    assert [r["notification"]["event"] for r in buffer.parked_items()] == ['{"event_id":"e-2"}']
    assert sample_value(metrics, "tally_collector_parked_forward_failures_total",
                        {"reason": "refused"}) == 1
    sent = len(api.requests)
    assert forward.forward_once() == 0  # not offered again (until a restart)
    assert len(api.requests) == sent
    assert forwarder(buffer, metrics).forward_once() == 0  # a new process tries once more
    assert len(api.requests) == sent + 1


def test_an_answer_that_does_not_cover_the_batch_keeps_the_rest(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    park_each_kind(buffer)
    first = buffer.parked_items()[0]["parked_id"]
    requests_mock.post(URL, json={"results": [
        {"index": 0, "key": first, "id": 1, "status": "filed"},
        {"index": 1, "key": "someone-else", "id": 2, "status": "filed"}],
        "filed": 2, "duplicates": 0})
    with pytest.raises(DeliveryRefused) as refused:
        forwarder(buffer, metrics).forward_once()
    assert refused.value.reason == "bad_response"
    assert buffer.parked_depth() == 2


def test_reasons_are_sent_as_the_api_takes_them(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter
) -> None:
    buffer.park({"reason": "unmappable: \x00\ud800" + "x" * 2000, "notification": {}})
    buffer.park({"reason": "", "notification": {}})
    forwarder(buffer, metrics).forward_once()
    reasons = [item["reason"] for item in api.requests[0]]
    assert reasons[0].startswith("unmappable: \ufffd?x") and len(reasons[0]) == 1000
    assert reasons[1] == "parked without a reason"


def test_a_record_parked_before_parked_ids_keeps_one_derived_key(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter,
    requests_mock: rm.Mocker
) -> None:
    buffer.parked._cache.push(json.dumps({"reason": "HTTP 400", "event": EVENT}), tag=1.5)
    (first,) = buffer.parked.items()
    (again,) = buffer.parked.items()
    assert first.parked_id == again.parked_id and len(first.parked_id) == 32
    assert forwarder(buffer, metrics).forward_once() == 1
    assert api.requests[0][0]["key"] == first.parked_id


def test_marked_events_go_back_into_the_buffer(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter
) -> None:
    park_each_kind(buffer)
    for item in buffer.parked.items():
        buffer.parked.mark_requeue(item)  # the notification holds no event: not marked
    written = threading.Event()
    forward = forwarder(buffer, metrics, written)
    assert forward.forward_once() == 1  # marked records are not filed
    assert [item["raw"][:20] for item in api.requests[0]] == ['{"event_type": "comp']
    assert forward.requeue_marked() == 2
    assert sorted(e.value for e in buffer.peek(10)) == [EVENT, '{"event_id":"e-2"}']
    assert buffer.depth() == 2 and buffer.parked_depth() == 0 and written.is_set()
    assert sample_value(metrics, "tally_collector_parked_requeued_total") == 2


def test_a_mark_made_while_the_item_is_being_filed_is_honoured(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter,
    requests_mock: rm.Mocker
) -> None:
    buffer.append([EVENT])
    buffer.move_to_parked(buffer.peek(1)[0], "HTTP 413 request_entity_too_large")

    def marks_meanwhile(request: Any, context: Any) -> Any:
        for item in buffer.parked.items():
            buffer.parked.mark_requeue(item)  # python -m collector.parked requeue
        return api(request, context)

    requests_mock.post(URL, json=marks_meanwhile)
    forward = forwarder(buffer, metrics)
    assert forward.forward_once() == 1
    assert buffer.parked_depth() == 1  # filed, but the operator asked for a requeue
    assert forward.requeue_marked() == 1
    assert [e.value for e in buffer.peek(10)] == [EVENT] and buffer.parked_depth() == 0


def test_the_loop_backs_off_and_keeps_requeueing(
    buffer: EventBuffer, metrics: CollectorMetrics, api: FakeDeadLetter
) -> None:
    park_each_kind(buffer)
    api.status = 503
    stop = threading.Event()
    forward = ParkedForwarder(URL, None, buffer, metrics, threading.Event(),
                              initial_delay=30, max_delay=60, poll=0.01)
    thread = threading.Thread(target=forward.run, args=(stop,))
    thread.start()
    try:
        for item in buffer.parked.items():
            buffer.parked.mark_requeue(item)
        def failures() -> float:
            return sample_value(metrics, "tally_collector_parked_forward_failures_total",
                                {"reason": "server_error"})

        # The requeue may come before the attempt, whose failure the thread counts
        # after the API answered: wait for both (the deadline only guards a hang).
        deadline = time.monotonic() + 120
        while (buffer.depth() < 2 or failures() < 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert buffer.depth() == 2  # requeued, and during the 30 s pause
        assert len(api.requests) == 1  # one attempt, then the pause
        assert failures() == 1
    finally:
        stop.set()
        thread.join(10)
    assert buffer.parked_depth() == 1
