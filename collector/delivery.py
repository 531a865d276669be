"""Delivery of buffered events to the Reporting API (``POST /v1/events``).

``delivery_concurrency`` threads run the same loop over three parts, each with one
job and its own lock (none held across a request):

- ``collector.next_batch.NextBatch``: what to send next; claims the oldest unclaimed
  buffer items for one request and lets a partial batch linger while a backlog
  drains;
- ``collector.sender.Sender``: sends a claimed batch and settles exactly what the API
  answered for, splitting on 400/413 and parking an event refused on its own.  Its
  docstring holds the argument why nothing is lost;
- ``collector.backoff.Backoff``: the pause after a failure, shared by the threads.

The loop: wait out the pause, claim, send and settle, release; on a failure count it
and pause; with nothing to send, wait for the listener's next write.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from oslo_config import cfg

from collector.api_client import DeliveryRefused
from collector.backlog import BacklogSignal
from collector.backoff import Backoff
from collector.buffer import EventBuffer
from collector.delivery_config import DeliveryConfig
from collector.metrics import CollectorMetrics
from collector.next_batch import NextBatch
from collector.sender import Sender
from tally_common.service_auth import ApiClient

LOG = logging.getLogger(__name__)


class Outage:
    """The delivery failures since the last success, so that the first success after
    them is said once: for how long and how many attempts delivery failed, how many
    events waited meanwhile and for how long the oldest of them did."""

    def __init__(self, metrics: CollectorMetrics, buffer: EventBuffer,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._metrics = metrics
        self._buffer = buffer
        self._clock = clock
        self._wall_clock = wall_clock  # the buffer's stamps are wall-clock time
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0
        self._waiting = 0  # the most events the buffer held meanwhile
        self._oldest: float | None = None  # stamp of the oldest event that waited

    def failed(self) -> None:
        depth = self._buffer.depth()
        with self._lock:
            if self._since is None:
                self._since = self._clock()
            self._failures += 1
            self._waiting = max(self._waiting, depth)
            known = self._oldest is not None
        if not known:
            stamp = self._buffer.oldest_stamp()
            with self._lock:
                if self._oldest is None:
                    self._oldest = stamp

    def succeeded(self) -> None:
        with self._lock:
            since, failures, waiting, oldest = (
                self._since, self._failures, self._waiting, self._oldest)
            if since is None:
                return
            self._since, self._failures, self._waiting, self._oldest = None, 0, 0, None
        self._metrics.delivery_recoveries.inc()
        waited = 0.0 if oldest is None else max(0.0, self._wall_clock() - oldest)
        LOG.info("Delivery succeeds again after %.1fs and %d failed attempts; %d events "
                    "waited, the oldest for %.1fs", self._clock() - since, failures,
                    waiting, waited)


class Delivery:
    """The delivery loop.  ``run`` until ``stop`` is set; ``deliver_once`` for tests."""

    def __init__(
        self,
        config: DeliveryConfig,
        buffer: EventBuffer,
        metrics: CollectorMetrics,
        backlog: BacklogSignal | None = None,
        jitter: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.config = config
        self.next_batch = NextBatch(config, buffer, backlog)
        self.sender = Sender(config, buffer, metrics)
        self.backoff = Backoff(config.initial_delay, config.max_delay, jitter)
        self.outage = Outage(metrics, buffer)
        self._metrics = metrics

    @classmethod
    def from_conf(
        cls, conf: cfg.ConfigOpts, buffer: EventBuffer, metrics: CollectorMetrics,
        backlog: BacklogSignal | None = None, client: ApiClient | None = None,
    ) -> Delivery:
        return cls(DeliveryConfig.from_conf(conf, client), buffer, metrics, backlog)

    def run(self, stop: threading.Event, written: threading.Event) -> None:
        """Deliver with ``concurrency`` threads (this one included) until ``stop``."""
        helpers = [
            threading.Thread(target=self._work, args=(stop, written),
                             name=f"tally-delivery-{n}", daemon=True)
            for n in range(1, max(1, self.config.concurrency))
        ]
        for helper in helpers:
            helper.start()
        self._work(stop, written)
        for helper in helpers:
            helper.join()

    def deliver_once(self) -> int:
        """Claim, send and settle one batch; answers how many events left the buffer
        (0: nothing to send now).  Raises DeliveryRefused when it must be retried."""
        with self.next_batch.claim() as items:
            return self.sender.send(items) if items else 0

    def _work(self, stop: threading.Event, written: threading.Event) -> None:
        while not stop.is_set():
            if self.backoff.wait(stop):
                break
            refused: DeliveryRefused | None = None
            try:
                delivered = self.deliver_once()
            except DeliveryRefused as exc:
                refused = exc
            except Exception:
                self._metrics.delivery_failures.labels("internal").inc()
                LOG.exception("Delivery round failed")
                self.backoff.failed(None)
                self.outage.failed()
                continue
            if refused is not None:
                # Logged outside the except block: oslo.log appends the exception being
                # handled to a WARNING, which would say the reason a second time.
                self._metrics.delivery_failures.labels(refused.reason).inc()
                delay = self.backoff.failed(refused.retry_after)
                self.outage.failed()
                LOG.warning("Delivery failed (%s: %s); retrying in %.1fs",
                            refused.reason, refused, delay)
                continue
            if delivered:
                self.backoff.succeeded()
                self.outage.succeeded()
            else:
                # Nothing (ready) to claim: not a success (another thread may be failing).
                written.wait(self.next_batch.idle_wait())
                written.clear()
