"""Delivery of buffered events to the Reporting API (``POST /v1/events``).

``delivery_concurrency`` threads drain the buffer oldest first in batches of at
most ``batch_size``.  Each thread claims whole buffer items under a lock before
sending them, so no event is in two requests at once, and settles exactly its own
claim; the API stores concurrent batches on its several workers.  On a 200 it removes exactly the items the answer reports as stored, duplicate or
rejected; anything else stays and is sent again (ingest deduplicates on
event_id, so resending is always safe).  Connection errors, 5xx and 429 back off
exponentially with jitter up to a cap; the pause is shared, so every thread
waits it out and concurrent failures of one outage count once.  A 400 or 413 of a whole request is split
in halves so one poisoned item cannot block the rest; an item refused on its own
while its neighbours went through is moved to the parked store.  Nothing is
dropped.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable

import orjson
import requests
from oslo_config import cfg

from collector.backlog import BacklogSignal
from collector.buffer import BufferedEvent, EventBuffer
from collector.errors import ConfigurationError
from collector.metrics import CollectorMetrics
from mapping.api_url import ApiUrlError, check_base_url, describe_request_error
from mapping.event import MAX_BATCH
from mapping.token_file import TokenFileError, read_token_file

LOG = logging.getLogger(__name__)

ANSWERED = ("stored", "duplicate", "rejected")

OPTS = [
    cfg.StrOpt(
        "reporting_url",
        help="Base URL of the Reporting API, e.g. http://127.0.0.1:8779. Required.",
    ),
    cfg.StrOpt(
        "token_file",
        help="File holding the bearer token (role ingest) sent to the Reporting "
        "API. Unset sends no Authorization header (an API with auth_strategy noauth).",
    ),
    cfg.IntOpt(
        "batch_size", default=MAX_BATCH, min=1, max=MAX_BATCH,
        help="Events per POST /v1/events.",
    ),
    cfg.IntOpt(
        "delivery_concurrency", default=2, min=1, max=32,
        help="Delivery requests in flight at once, each carrying its own events "
        "(never one event in two requests). Match the Reporting API's workers; "
        "1 sends one request at a time.",
    ),
    cfg.FloatOpt(
        "request_timeout_s", default=30.0, min=0.1,
        help="Timeout of one delivery request.",
    ),
    cfg.FloatOpt(
        "retry_initial_delay_s", default=0.5, min=0.01,
        help="First pause after a failed delivery; doubled per consecutive failure.",
    ),
    cfg.FloatOpt(
        "retry_max_delay_s", default=60.0, min=0.01,
        help="Cap of the pause between failed deliveries.",
    ),
    cfg.FloatOpt(
        "batch_linger_s", default=0.25, min=0.0, max=60.0,
        help="While the listener drains a backlog (oslo hands over full listener "
        "batches), how long buffered events may wait for more to fill a delivery "
        "batch before a partial one is sent. The backlog then travels in full "
        "batches (the API stores 1000 events in one request at far less cost than "
        "in five). Otherwise, and with 0, whatever is there is sent at once.",
    ),
    cfg.FloatOpt(
        "idle_poll_s", default=1.0, min=0.01,
        help="How often an empty buffer is looked at again (new events wake the "
        "delivery at once).",
    ),
]


class DeliveryRefused(Exception):
    """A delivery round that must be retried later (the reason is a metric label)."""

    def __init__(self, reason: str, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.retry_after = retry_after


def api_url(reporting_url: str, path: str) -> str:
    """``path`` of the Reporting API at ``[collector] reporting_url``."""
    try:
        return check_base_url("[collector] reporting_url", reporting_url) + path
    except ApiUrlError as exc:
        raise ConfigurationError(str(exc)) from None


def events_url(reporting_url: str) -> str:
    return api_url(reporting_url, "/v1/events")


def backoff_delay(failures: int, initial: float, maximum: float,
                  jitter: Callable[[float, float], float], retry_after: float | None) -> float:
    """The pause after ``failures`` earlier consecutive failures: exponential with equal
    jitter, capped at ``maximum``; honours Retry-After up to the cap."""
    ceiling = min(maximum, initial * 2 ** min(failures, 30))
    delay = ceiling / 2 + jitter(0, ceiling / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, maximum))
    return delay


def read_token(path: str | None) -> str | None:
    """The token file's first line: the one rule of every Tally token file."""
    if not path:
        return None
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise ConfigurationError(f"[collector] token_file {exc}") from None


class Delivery:
    """The delivery loop.  ``run`` until ``stop`` is set; ``deliver_once`` for tests."""

    def __init__(
        self,
        url: str,
        token: str | None,
        buffer: EventBuffer,
        metrics: CollectorMetrics,
        batch_size: int = MAX_BATCH,
        timeout: float = 30.0,
        initial_delay: float = 0.5,
        max_delay: float = 60.0,
        idle_poll: float = 1.0,
        concurrency: int = 2,
        linger: float = 0.0,
        backlog: BacklogSignal | None = None,
        jitter: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self._url = url
        self._buffer = buffer
        self._metrics = metrics
        self._batch_size = min(batch_size, MAX_BATCH)
        self._timeout = timeout
        self._initial_delay = initial_delay
        self._max_delay = max_delay
        self._idle_poll = idle_poll
        self._linger = linger
        # Whether the listener drains a backlog; None: taken as always draining.
        self._backlog = backlog
        self._concurrency = max(1, concurrency)
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._jitter = jitter
        self._local = threading.local()  # one requests.Session per delivery thread
        # Guards the claims and the shared backoff.
        self._lock = threading.Lock()
        self._claimed: set[int] = set()  # buffer items inside a request in flight
        self._claimed_events = 0  # events of those items sent
        self._failures = 0
        self._resume_at = 0.0  # time.monotonic() before which nothing is sent
        # time.monotonic() when a lingering partial batch (of the oldest unclaimed
        # item) is due; None: not known since the last claim or release
        self._linger_due: float | None = None

    @classmethod
    def from_conf(
        cls, conf: cfg.ConfigOpts, buffer: EventBuffer, metrics: CollectorMetrics,
        backlog: BacklogSignal | None = None,
    ) -> Delivery:
        group = conf.collector
        return cls(
            events_url(group.reporting_url),
            read_token(group.token_file),
            buffer,
            metrics,
            batch_size=group.batch_size,
            timeout=group.request_timeout_s,
            initial_delay=group.retry_initial_delay_s,
            max_delay=group.retry_max_delay_s,
            idle_poll=group.idle_poll_s,
            concurrency=group.delivery_concurrency,
            linger=group.batch_linger_s,
            backlog=backlog,
        )

    def run(self, stop: threading.Event, written: threading.Event) -> None:
        """Deliver with ``concurrency`` threads (this one included) until ``stop``."""
        helpers = [
            threading.Thread(target=self._work, args=(stop, written),
                             name=f"tally-delivery-{n}", daemon=True)
            for n in range(1, self._concurrency)
        ]
        for helper in helpers:
            helper.start()
        self._work(stop, written)
        for helper in helpers:
            helper.join()

    def _work(self, stop: threading.Event, written: threading.Event) -> None:
        while not stop.is_set():
            if self._wait_out_backoff(stop):
                break
            refused: tuple[str, str, float | None] | None = None
            try:
                delivered = self.deliver_once()
            except DeliveryRefused as exc:
                refused = (exc.reason, str(exc), exc.retry_after)
            except Exception:
                self._metrics.delivery_failures.labels("internal").inc()
                LOG.exception("Delivery round failed")
                self._back_off(None)
                continue
            if refused is not None:
                # Logged outside the except block: oslo.log appends the exception being
                # handled to a WARNING, which would say the reason a second time.
                reason, detail, retry_after = refused
                self._metrics.delivery_failures.labels(reason).inc()
                delay = self._back_off(retry_after)
                LOG.warning("Delivery failed (%s: %s); retrying in %.1fs", reason, detail, delay)
                continue
            if delivered:
                with self._lock:
                    self._failures = 0
            else:
                # Nothing (ready) to claim: not a success (another thread may be failing).
                written.wait(self._idle_wait())
                written.clear()

    def _wait_out_backoff(self, stop: threading.Event) -> bool:
        """Sleep through the shared pause; True when ``stop`` was set meanwhile."""
        while True:
            with self._lock:
                remaining = self._resume_at - time.monotonic()
            if remaining <= 0:
                return stop.is_set()
            if stop.wait(remaining):
                return True

    def _back_off(self, retry_after: float | None) -> float:
        """Start the shared pause after a failure, or join the one already running
        (requests in flight during one outage fail together and count once)."""
        with self._lock:
            now = time.monotonic()
            if now >= self._resume_at:
                self._resume_at = now + self.next_delay(retry_after)
            return self._resume_at - now

    def next_delay(self, retry_after: float | None) -> float:
        """Exponential backoff with equal jitter, capped; honours Retry-After up to the cap."""
        delay = backoff_delay(self._failures, self._initial_delay, self._max_delay,
                              self._jitter, retry_after)
        self._failures += 1
        return delay

    def deliver_once(self) -> int:
        """Claim and send one batch; returns how many items the API answered for
        (0: nothing unclaimed in the buffer)."""
        items = self._claim()
        if not items:
            return 0
        try:
            answered, refused_alone = self._send(items)
            if refused_alone:
                if answered:
                    for event, reason in refused_alone:
                        LOG.error("Buffered event refused on its own (%s); parked", reason)
                        self._buffer.move_to_parked(event, reason)
                        self._metrics.parked.labels("refused").inc()
                else:
                    # Nothing went through: the API refuses everything, not this item.
                    raise DeliveryRefused("client_error", refused_alone[0][1])
            return answered + len(refused_alone)
        finally:
            self._release(items)

    def _claim(self) -> list[BufferedEvent]:
        """The oldest unclaimed events, their items now owned by this request.

        While the listener drains a backlog, a partial batch holding everything that
        is left is held back while another request is in flight (the busy thread
        takes it, grown, when it is done) and until its oldest event has waited
        ``linger`` seconds: the backlog then travels in full batches, since every
        request costs both sides work of its own.  A trickle, and the rest once the
        backlog is drained, are sent at once.  The counts are in memory, so holding
        back reads the buffer at most once per oldest item, not at every listener
        write that wakes this thread."""
        with self._lock:
            unclaimed = self._buffer.depth() - self._claimed_events
            if unclaimed <= 0 or (unclaimed < self._batch_size and self._held_back()):
                return []
            items = self._buffer.peek(self._batch_size, skip=self._claimed)
            self._claimed.update(event.item for event in items)
            self._claimed_events += len(items)
            self._linger_due = None
        return items

    def _held_back(self) -> bool:
        """(Under the lock, for a partial batch of everything left) whether to wait."""
        now = time.monotonic()
        if now >= self._more_expected_until():
            return False  # no backlog behind it (any more): nothing to wait for
        if self._claimed:
            return True  # the busy thread takes it, grown, when it is done
        if self._linger_due is None:
            stamp = self._buffer.oldest_stamp()  # nothing is claimed: the oldest item
            # a wall-clock stamp: a clock stepped back does not hold the batch longer
            wait = -1.0 if stamp is None else stamp + self._linger - time.time()
            self._linger_due = now + wait if 0 < wait <= self._linger else 0.0
        return now < self._linger_due

    def _more_expected_until(self) -> float:
        """time.monotonic() until which the listener is expected to add more."""
        return math.inf if self._backlog is None else self._backlog.expected_until()

    def _idle_wait(self) -> float:
        """How long to wait for new events before looking again: until a lingering
        partial batch is due or the backlog is taken as drained, at most ``idle_poll``."""
        with self._lock:
            due = min(math.inf if self._linger_due is None else self._linger_due,
                      self._more_expected_until())
        until_due = due - time.monotonic()
        return min(self._idle_poll, until_due) if until_due > 0 else self._idle_poll

    def _release(self, items: list[BufferedEvent]) -> None:
        with self._lock:
            self._claimed.difference_update(event.item for event in items)
            self._claimed_events -= len(items)
            self._linger_due = None

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            session.headers.update(self._headers)
        return session

    def _send(
        self, items: list[BufferedEvent]
    ) -> tuple[int, list[tuple[BufferedEvent, str]]]:
        """POST items, splitting on 400/413.  Returns (answered, items refused alone)."""
        response = self._post(items)
        if response.status_code in (400, 413):
            detail = f"HTTP {response.status_code} {error_summary(response)}"
            if len(items) == 1:
                return 0, [(items[0], detail)]
            self._metrics.delivery_failures.labels("split").inc()
            LOG.warning("Batch of %d refused (%s); splitting it", len(items), detail)
            middle = len(items) // 2
            first = self._send(items[:middle])
            second = self._send(items[middle:])
            return first[0] + second[0], first[1] + second[1]
        if response.status_code != 200:
            raise refusal(response)
        return self._settle(items, response), []

    def _post(self, items: list[BufferedEvent]) -> requests.Response:
        body = '{"events":[' + ",".join(item.value for item in items) + "]}"
        return post(self._session(), self._url, body.encode("utf-8"), self._timeout)

    def _settle(self, items: list[BufferedEvent], response: requests.Response) -> int:
        try:
            results = orjson.loads(response.content)["results"]
            if not isinstance(results, list):
                raise TypeError("results is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise DeliveryRefused("bad_response", f"unreadable 200 answer: {exc}") from None
        done: dict[int, str] = {}
        for result in results:
            index = result.get("index") if isinstance(result, dict) else None
            status = result.get("status") if isinstance(result, dict) else None
            if isinstance(index, int) and 0 <= index < len(items) and status in ANSWERED:
                done[index] = status
        if done:
            self._buffer.remove(items[index] for index in done)
            for status, count in Counter(done.values()).items():
                self._metrics.delivered.labels(status).inc(count)
        if len(done) < len(items):
            raise DeliveryRefused(
                "bad_response",
                f"the answer covered {len(done)} of {len(items)} events; the rest is kept")
        return len(done)


def post(session: requests.Session, url: str, body: bytes, timeout: float) -> requests.Response:
    """POST ``body``; a request that got no answer is a DeliveryRefused."""
    try:
        return session.post(url, data=body, timeout=timeout)
    except requests.Timeout as exc:
        raise DeliveryRefused("timeout", describe_request_error(exc, url)) from None
    except requests.RequestException as exc:
        # requests' text holds urllib3's twice (~600 characters): one reason instead.
        raise DeliveryRefused("connection", describe_request_error(exc, url)) from None


def _error_code(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except Exception:
        return ""


def error_summary(response: requests.Response) -> str:
    """The API's error code and message (clipped), for a reason an operator reads."""
    try:
        error = response.json()["error"]
        summary = f"{error['code']}: {error['message']}"
    except Exception:
        return ""
    return summary if len(summary) <= 300 else summary[:297] + "..."


def refusal(response: requests.Response) -> DeliveryRefused:
    """The retry-later failure a non-200 answer is (its reason a metric label)."""
    status = response.status_code
    detail = f"HTTP {status} {_error_code(response)}".strip()
    if status == 429:
        return DeliveryRefused("throttled", detail, _retry_after(response))
    if status >= 500:
        return DeliveryRefused("server_error", detail, _retry_after(response))
    if status in (401, 403):
        return DeliveryRefused("unauthorized", detail)
    return DeliveryRefused("client_error", detail)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
