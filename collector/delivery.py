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
from mapping.service_auth import ApiClient

LOG = logging.getLogger(__name__)


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
                continue
            if refused is not None:
                # Logged outside the except block: oslo.log appends the exception being
                # handled to a WARNING, which would say the reason a second time.
                self._metrics.delivery_failures.labels(refused.reason).inc()
                delay = self.backoff.failed(refused.retry_after)
                LOG.warning("Delivery failed (%s: %s); retrying in %.1fs",
                            refused.reason, refused, delay)
                continue
            if delivered:
                self.backoff.succeeded()
            else:
                # Nothing (ready) to claim: not a success (another thread may be failing).
                written.wait(self.next_batch.idle_wait())
                written.clear()
