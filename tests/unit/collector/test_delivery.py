"""The delivery loop (next batch, sender, backoff together) against requests-mock
answering the ingest contract, and a loopback server for concurrent requests.

The contract is the one docs/reporting-api.md states.  Each part has tests of its
own: test_next_batch, test_sender, test_backoff, test_delivery_config.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests
import requests_mock as rm

from collector.api_client import DeliveryRefused
from collector.backlog import BacklogSignal
from collector.buffer import EventBuffer
from collector.delivery import Delivery
from collector.delivery_config import DeliveryConfig
from collector.metrics import CollectorMetrics
from collector.next_batch import NextBatch
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


def _delivery(buffer: EventBuffer, metrics: CollectorMetrics,
              backlog: BacklogSignal | None = None, **kwargs: Any) -> Delivery:
    return Delivery(DeliveryConfig(URL, "secret-token", **kwargs), buffer, metrics, backlog,
                    jitter=lambda a, b: b)


class _StoppedClocks:
    """A monotonic and a wall clock that stand still until advanced."""

    def __init__(self) -> None:
        self._monotonic, self._wall = time.monotonic(), time.time()

    def monotonic(self) -> float:
        return self._monotonic

    def wall(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        self._monotonic += seconds
        self._wall += seconds


class _Backlog(BacklogSignal):
    """A backlog signal whose expectation the test sets directly."""

    def __init__(self, until: float) -> None:
        super().__init__()
        self.until = until

    def expected_until(self) -> float:
        return self.until


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
    assert request is not None
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
    assert delivery.backoff.next_delay(refused.value.retry_after) == 7.0
    assert delivery.backoff.next_delay(1000.0) == 60.0


def test_400_is_split_and_the_poisoned_item_parked(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(8)])
    answer = _answer()

    def callback(request: Any, context: Any) -> Any:
        if any(e["event_id"] == "e-5" for e in request.json()["events"]):
            context.status_code = 400
            return {"error": {"code": "bad_request", "message": "nests deeper than 64"}}
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert _delivery(buffer, metrics).deliver_once() == 8
    assert buffer.depth() == 0
    parked = buffer.parked_items()
    assert len(parked) == 1 and json.loads(parked[0]["event"])["event_id"] == "e-5"
    # The API's own words travel with it to the dead letter.
    assert parked[0]["reason"] == "HTTP 400 bad_request: nests deeper than 64"
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
    delivery = Delivery(DeliveryConfig(URL, initial_delay=0.01, max_delay=0.02, idle_poll=0.01),
                        buffer, metrics)
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
    assert requests_mock.last_request is not None
    assert "Authorization" not in requests_mock.last_request.headers


# --- concurrent delivery ------------------------------------------------------------


def _ids(request: Any) -> list[str]:
    return [event["event_id"] for event in request.json()["events"]]


def test_a_request_in_flight_owns_its_items(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    """A second request sent while the first is in flight carries other items, and each
    settles exactly its own: every event reaches the API once and leaves the buffer once."""
    for item in range(4):
        buffer.append([_event(item * 10 + n) for n in range(3)])
    delivery = _delivery(buffer, metrics, batch_size=6)
    answer = _answer()
    sent: list[list[str]] = []
    nested: list[int] = []

    def callback(request: Any, context: Any) -> Any:
        sent.append(_ids(request))
        if len(sent) == 1:  # the first request is in flight: another one goes out
            nested.append(delivery.deliver_once())
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert delivery.deliver_once() == 6
    assert nested == [6]
    assert sent == [["e-0", "e-1", "e-2", "e-10", "e-11", "e-12"],
                    ["e-20", "e-21", "e-22", "e-30", "e-31", "e-32"]]
    assert buffer.depth() == 0
    assert delivery.deliver_once() == 0
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 12


@pytest.mark.parametrize("drained", [False, True], ids=["backlog-draining", "backlog-drained"])
def test_the_rest_of_a_backlog_and_a_request_in_flight(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker, drained: bool
) -> None:
    """Extra requests are for a backlog: while it drains, the last few events are not
    sent beside a request in flight (the busy thread takes them next, grown); once it
    is drained, they go at once."""
    buffer.append([_event(n) for n in range(4)])
    buffer.append([_event(n) for n in range(4, 6)])
    delivery = _delivery(buffer, metrics, batch_size=4,
                         backlog=_Backlog(-math.inf) if drained else None)
    answer = _answer()
    sent: list[list[str]] = []
    nested: list[int] = []

    def callback(request: Any, context: Any) -> Any:
        sent.append(_ids(request))
        if len(sent) == 1:
            nested.append(delivery.deliver_once())
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert delivery.deliver_once() == 4
    if drained:
        assert nested == [2]
        assert sent == [["e-0", "e-1", "e-2", "e-3"], ["e-4", "e-5"]]
    else:
        assert nested == [0]
        assert sent == [["e-0", "e-1", "e-2", "e-3"]]
        assert delivery.deliver_once() == 2  # alone now: a partial batch goes out
    assert buffer.depth() == 0


def test_a_failing_request_keeps_its_items_and_touches_no_others(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(3)])
    buffer.append([_event(n) for n in range(3, 6)])
    delivery = _delivery(buffer, metrics, batch_size=3)
    answer = _answer()
    calls = 0

    def callback(request: Any, context: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:  # in flight while the second request succeeds, then fails
            assert delivery.deliver_once() == 3
            context.status_code = 503
            return {"error": {"code": "unavailable", "message": "down"}}
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    with pytest.raises(DeliveryRefused):
        delivery.deliver_once()
    assert [json.loads(e.value)["n"] for e in buffer.peek(10)] == [0, 1, 2]
    assert delivery.deliver_once() == 3  # the released items are claimed again
    assert _ids(requests_mock.last_request) == ["e-0", "e-1", "e-2"]
    assert buffer.depth() == 0
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 6


def test_a_split_request_parks_only_its_own_poisoned_item(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    buffer.append([_event(n) for n in range(4)])
    buffer.append([_event(n) for n in range(4, 8)])
    delivery = _delivery(buffer, metrics, batch_size=4)
    answer = _answer()
    first = True

    def callback(request: Any, context: Any) -> Any:
        nonlocal first
        if first:
            first = False
            assert delivery.deliver_once() == 4  # the other item, e-6 poisoned
        if "e-6" in _ids(request):
            context.status_code = 400
            return {"error": {"code": "bad_request", "message": "nests deeper than 64"}}
        return answer(request, context)

    requests_mock.post(URL, json=callback)
    assert delivery.deliver_once() == 4
    assert buffer.depth() == 0
    assert [json.loads(p["event"])["n"] for p in buffer.parked_items()] == [6]
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 7


class _LocalAPI:
    """A loopback HTTP server answering POSTs through ``handle(events) -> (status, body)``
    on one thread per request (requests-mock serialises requests, so concurrency needs a
    real server)."""

    def __init__(self, handle: Any) -> None:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers["Content-Length"])
                events = json.loads(self.rfile.read(length))["events"]
                status, body = api.handle(events)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.handle = handle
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/events"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _stored(events: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    return 200, {"results": [{"index": i, "event_id": e["event_id"], "status": "stored"}
                             for i, e in enumerate(events)]}


def _run(delivery: Delivery, stop: threading.Event, written: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=delivery.run, args=(stop, written))
    thread.start()
    return thread


def _wait_for(condition: Any, stop: threading.Event) -> None:
    for _ in range(3000):
        if condition():
            return
        stop.wait(0.01)


def test_concurrent_threads_deliver_every_event_exactly_once(
    buffer: EventBuffer, metrics: CollectorMetrics
) -> None:
    for item in range(12):
        buffer.append([_event(item * 100 + n) for n in range(50)])
    lock = threading.Lock()
    all_in_flight = threading.Barrier(3, timeout=30)
    sent: list[str] = []
    batches: list[list[str]] = []

    def handle(events: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        with lock:
            batches.append([e["event_id"] for e in events])
            sent.extend(batches[-1])
            first_ones = len(batches) <= 3
        if first_ones:
            all_in_flight.wait()  # the first three requests meet: all in flight at once
        return _stored(events)

    api = _LocalAPI(handle)
    delivery = Delivery(DeliveryConfig(api.url, batch_size=100, concurrency=3, idle_poll=0.01,
                                       initial_delay=0.01, max_delay=0.02), buffer, metrics)
    stop, written = threading.Event(), threading.Event()
    thread = _run(delivery, stop, written)
    try:
        _wait_for(lambda: buffer.depth() == 0, stop)
    finally:
        stop.set()
        written.set()
        thread.join(10)
        api.close()
    assert not thread.is_alive()
    assert not all_in_flight.broken
    first_three = [set(batch) for batch in batches[:3]]
    assert len(set.union(*first_three)) == 300  # disjoint
    assert sorted(sent) == sorted(f"e-{item * 100 + n}" for item in range(12) for n in range(50))
    assert buffer.depth() == 0
    assert sample_value(metrics, "tally_collector_delivered_total", {"outcome": "stored"}) == 600
    assert sample_value(metrics, "tally_collector_delivery_failures_total",
                        {"reason": "internal"}) == 0


def test_backoff_is_shared_by_concurrent_requests(
    buffer: EventBuffer, metrics: CollectorMetrics
) -> None:
    """Two requests failing in the same outage start one pause that both wait out."""
    buffer.append([_event(1)])
    buffer.append([_event(2)])
    both_in_flight = threading.Barrier(2, timeout=30)
    requests_seen = []

    def handle(events: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        requests_seen.append(events)
        both_in_flight.wait()
        return 503, {"error": {"code": "unavailable", "message": "down"}}

    api = _LocalAPI(handle)
    delivery = Delivery(DeliveryConfig(api.url, batch_size=1, concurrency=2, initial_delay=1000,
                                       max_delay=10**6), buffer, metrics, jitter=lambda a, b: b)
    stop, written = threading.Event(), threading.Event()
    thread = _run(delivery, stop, written)
    failures = {"reason": "server_error"}
    try:
        _wait_for(lambda: sample_value(
            metrics, "tally_collector_delivery_failures_total", failures) == 2, stop)
        # counted once: the next pause is the second step (2 x 1000)
        assert delivery.backoff.next_delay(None) == 2000
    finally:
        stop.set()
        written.set()
        thread.join(10)
        api.close()
    assert not thread.is_alive()
    assert sample_value(metrics, "tally_collector_delivery_failures_total", failures) == 2
    assert len(requests_seen) == 2  # nobody sent during the pause
    assert buffer.depth() == 2


def test_an_idle_thread_does_not_reset_the_backoff(
    buffer: EventBuffer, metrics: CollectorMetrics
) -> None:
    """One item, the API down: the thread with nothing to claim must not count its
    empty rounds as successes, so the pause keeps doubling.  The backoff's own count
    is what doubles: a failure that joins a pause already running (the other thread
    claimed the item the moment it was released) is in the metric but starts no pause."""
    buffer.append([_event(1)])
    api = _LocalAPI(lambda events: (503, {"error": {"code": "unavailable", "message": "x"}}))
    delivery = Delivery(DeliveryConfig(api.url, concurrency=2, idle_poll=0.001,
                                       initial_delay=0.01, max_delay=1000),
                        buffer, metrics, jitter=lambda a, b: b)
    stop, written = threading.Event(), threading.Event()
    thread = _run(delivery, stop, written)
    failures = {"reason": "server_error"}
    try:
        _wait_for(lambda: delivery.backoff.failures >= 5, stop)
    finally:
        stop.set()
        written.set()
        thread.join(10)
        api.close()
    assert not thread.is_alive()
    count = delivery.backoff.failures
    assert count >= 5
    assert sample_value(metrics, "tally_collector_delivery_failures_total", failures) >= count
    assert delivery.backoff.next_delay(None) == pytest.approx(0.01 * 2**count)
    assert buffer.depth() == 1


def test_a_partial_batch_lingers_for_more_events_and_a_full_one_does_not(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(URL, json=_answer())
    delivery = _delivery(buffer, metrics, batch_size=4, linger=30.0)
    buffer.append([_event(n) for n in range(3)])
    assert delivery.deliver_once() == 0  # 3 of 4, fresh: waits for more
    assert 0 < delivery.next_batch.idle_wait() <= 1.0  # idle_poll bounds the wait
    assert not requests_mock.called
    buffer.append([_event(n) for n in range(3, 6)])
    assert delivery.deliver_once() == 3  # whole items only while they fit: 3, then 3
    assert delivery.deliver_once() == 0  # the rest is partial and fresh again
    assert buffer.depth() == 3


def test_a_partial_batch_goes_out_once_its_oldest_event_has_lingered(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(URL, json=_answer())
    delivery = _delivery(buffer, metrics, batch_size=4, linger=0.05, idle_poll=5.0)
    buffer.append([_event(1)])
    # The batch's clocks stand still from here (a loaded machine once spent the whole
    # 50 ms linger between these lines), then move past the linger.
    clocks = _StoppedClocks()
    delivery.next_batch = NextBatch(delivery.config, buffer, clock=clocks.monotonic,
                                    wall_clock=clocks.wall)
    assert delivery.deliver_once() == 0
    assert 0 < delivery.next_batch.idle_wait() <= 0.05  # wakes when it is due, not at idle_poll
    clocks.advance(0.08)
    assert delivery.deliver_once() == 1
    assert buffer.depth() == 0


def test_an_item_stamped_in_the_future_does_not_linger(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    """The buffer stamps wall-clock time; a clock stepped back does not hold events."""
    requests_mock.post(URL, json=_answer())
    buffer._cache.push(_event(1), tag=time.time() + 3600)
    buffer._count += 1
    assert _delivery(buffer, metrics, batch_size=4, linger=1.0).deliver_once() == 1


def test_run_delivers_a_single_event_after_the_linger_not_the_idle_poll(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(URL, json=_answer())
    delivery = _delivery(buffer, metrics, linger=0.1, idle_poll=30.0)
    stop, written = threading.Event(), threading.Event()
    thread = _run(delivery, stop, written)
    try:
        buffer.append([_event(1)])
        written.set()  # as the listener does after a write
        _wait_for(lambda: buffer.depth() == 0, stop)
    finally:
        stop.set()
        written.set()
        thread.join(10)
    assert buffer.depth() == 0


def test_a_partial_batch_lingers_only_while_the_listener_drains_a_backlog(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(URL, json=_answer())
    backlog = _Backlog(math.inf)  # the listener's batches come full: more is on its way
    delivery = _delivery(buffer, metrics, batch_size=4, linger=30.0, backlog=backlog)
    buffer.append([_event(1)])
    assert delivery.deliver_once() == 0
    backlog.until = -math.inf  # a partial listener batch: the queue ran dry
    assert delivery.deliver_once() == 1
    assert buffer.depth() == 0


def test_a_partial_batch_goes_when_the_backlog_is_overdue_not_after_the_linger(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker
) -> None:
    """A backlog that ended on a full listener batch: the rest waits only until the
    next full batch is overdue, and the run loop wakes then."""
    requests_mock.post(URL, json=_answer())
    buffer.append([_event(1)])
    # The batch's clocks stand still from the event's stamp on (a loaded machine
    # once spent the whole 50 ms between these lines), then move past the expected batch.
    clocks = _StoppedClocks()
    backlog = _Backlog(clocks.monotonic() + 0.05)
    delivery = _delivery(buffer, metrics, batch_size=4, linger=30.0, idle_poll=30.0,
                         backlog=backlog)
    delivery.next_batch = NextBatch(delivery.config, buffer, backlog,
                                    clock=clocks.monotonic, wall_clock=clocks.wall)
    assert delivery.deliver_once() == 0
    # not the linger's 30 s, not idle_poll (the clocks' sums round in the last bits)
    assert 0 < delivery.next_batch.idle_wait() <= 0.05 + 1e-9
    clocks.advance(0.06)
    assert delivery.deliver_once() == 1
    assert buffer.depth() == 0


def test_the_first_success_after_failures_is_said_once(
    buffer: EventBuffer, metrics: CollectorMetrics, requests_mock: rm.Mocker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    buffer.append([_event(n) for n in range(3)])
    requests_mock.post(URL, [{"exc": requests.ConnectionError("refused")},
                             {"status_code": 503, "json": {}},
                             {"json": _answer()}])
    delivery = _delivery(buffer, metrics, initial_delay=0.01, max_delay=0.01)
    stop, written = threading.Event(), threading.Event()
    with caplog.at_level(logging.INFO, logger="collector.delivery"):
        worker = threading.Thread(target=delivery.run, args=(stop, written))
        worker.start()
        deadline = time.monotonic() + 30
        while buffer.depth() and time.monotonic() < deadline:
            time.sleep(0.02)
        buffer.append([_event(9)])  # delivered with no failure before it
        written.set()
        while buffer.depth() and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        written.set()
        worker.join(10)
    recovered = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("Delivery succeeds again")]
    assert len(recovered) == 1
    assert re.fullmatch(r"Delivery succeeds again after \d+\.\ds and 2 failed attempts; "
                        r"3 events waited, the oldest for \d+\.\ds", recovered[0])
    assert sample_value(metrics, "tally_collector_delivery_recoveries_total") == 1
