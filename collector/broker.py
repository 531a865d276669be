"""The collector's connection to RabbitMQ, as an operator needs to see it.

- ``ListenerStarter`` starts the listener, retrying with backoff: a refused login or
  an unknown vhost makes oslo.messaging raise once out of ``listener.start()`` (it
  retries only unreachable hosts itself), which used to leave a collector alive but
  deaf.  Each attempt is one log line; ``tally_collector_connected`` is 0 until one
  succeeds.  A collector that has never connected within
  ``[collector] first_connection_timeout_s`` is told to exit non-zero (the service
  manager restarts it, and says so).
- ``ConnectionWatch`` follows oslo's own lines about the connection once it is up (a
  broker cut, each reconnection attempt, the reconnection): the gauge follows, and
  the reconnection is said once, with how long the collector was cut off.
- ``DuplicateSkips`` turns oslo's traceback per message RabbitMQ delivers again after a
  reconnect (``ignoring duplicate message … Found duplicate message(…). Skipping it.``,
  one per message received but not acknowledged before the cut) into a count
  (``tally_collector_duplicates_skipped_total``) and one line per burst.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import oslo_messaging
import prometheus_client
from oslo_config import cfg

from collector.backoff import Backoff
from collector.metrics import CollectorMetrics
from tally_common.config_check import redact_url

LOG = logging.getLogger(__name__)

OPTS = [
    cfg.FloatOpt(
        "first_connection_timeout_s", default=300.0, min=1.0,
        help="Seconds a collector that has not connected to RabbitMQ yet keeps trying "
        "before it exits with status 1 (so that systemd's Restart=on-failure or the "
        "pod's restart policy acts, and the failure shows). Once connected, it "
        "reconnects for as long as it runs.",
    ),
]

RABBIT_LOGGER = "oslo.messaging._drivers.impl_rabbit"  # oslo names its loggers so
AMQP_LOGGER = "oslo_messaging._drivers.amqpdriver"  # this one by its module name
_RETRY_INITIAL_S = 1.0
_RETRY_MAX_S = 30.0
_DUPLICATE_BURST_S = 2.0


def broker_name(conf: cfg.ConfigOpts) -> str:
    """The broker's URL as the log names it (passwords redacted)."""
    try:
        url = conf.oslo_messaging_notifications.transport_url or conf.transport_url
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return "RabbitMQ"
    return redact_url(url)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class ListenerStarter:
    """Builds and starts a listener until one starts (or ``stop`` is set)."""

    def __init__(
        self, build: Callable[[], oslo_messaging.MessageHandlingServer],
        metrics: CollectorMetrics, broker: str, *,
        initial_delay: float = _RETRY_INITIAL_S, max_delay: float = _RETRY_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._build = build
        self._metrics = metrics
        self._broker = broker
        self._backoff = Backoff(initial_delay, max_delay)
        self._clock = clock
        self._started_at = clock()
        self._connected = threading.Event()
        self.attempts = 0
        self.last_error = "no answer yet"
        metrics.connected.set(0)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def run(self, stop: threading.Event,
            started: Callable[[oslo_messaging.MessageHandlingServer], None]) -> None:
        """Start a listener (a new one per attempt: a server whose start failed stays
        'started' for oslo) and hand it to ``started``."""
        while not stop.is_set():
            self.attempts += 1
            listener = self._build()
            failure = None
            try:
                listener.start()  # blocks while oslo retries an unreachable host
            except Exception as exc:
                failure = f"{type(exc).__name__}: {_one_line(exc)}"
            if failure is None:
                self._connected.set()
                self._metrics.connected.set(1)
                LOG.info("Connected to RabbitMQ at %s (attempt %d); consuming notifications",
                         self._broker, self.attempts)
                started(listener)
                return
            # Logged outside the except block: one line, no traceback.
            self.last_error = failure
            self._metrics.connection_failures.inc()
            delay = self._backoff.failed()
            LOG.error("Connecting to RabbitMQ at %s failed (attempt %d: %s); retrying in "
                      "%.1fs", self._broker, self.attempts, failure, delay)
            if stop.wait(delay):
                return

    def overdue(self, timeout: float) -> str | None:
        """Why the collector must exit: never connected within ``timeout``; else None."""
        if self.connected:
            return None
        waited = self._clock() - self._started_at
        if waited < timeout:
            return None
        return (f"not connected to RabbitMQ at {self._broker} within {timeout:g}s "
                f"({self.attempts} attempts; last: {self.last_error})")


class _LoggerFilter(logging.Filter):
    logger_name = ""

    def install(self) -> None:
        logging.getLogger(self.logger_name).addFilter(self)

    def remove(self) -> None:
        logging.getLogger(self.logger_name).removeFilter(self)


class ConnectionWatch(_LoggerFilter):
    """Reads oslo's RabbitMQ driver lines: down on a failure, up on a reconnection."""

    logger_name = RABBIT_LOGGER
    _DOWN = ("[%(connection_id)s] AMQP server", "Connection failed:")
    _UP = "[%(connection_id)s] Reconnected to AMQP server"

    def __init__(self, metrics: CollectorMetrics, starter: ListenerStarter,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._metrics = metrics
        self._starter = starter
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._failed_attempts = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            return True
        if not self._starter.connected:
            # oslo retries an unreachable host inside listener.start(), one line each:
            # counted with the attempts the broker refused.
            if record.msg.startswith(self._DOWN):
                self._metrics.connection_failures.inc()
            return True
        if record.msg.startswith(self._DOWN):
            with self._lock:
                if self._down_since is None:
                    self._down_since = self._clock()
                self._failed_attempts += 1
            self._metrics.connected.set(0)
        elif record.msg.startswith(self._UP):
            self.reconnected()
        return True

    def reconnected(self) -> None:
        with self._lock:
            since, attempts = self._down_since, self._failed_attempts
            self._down_since, self._failed_attempts = None, 0
        self._metrics.connected.set(1)
        if since is None:
            LOG.info("Reconnected to RabbitMQ")
        else:
            self._metrics.reconnections.inc()
            # INFO: called inside oslo's except block, where oslo.log would append the
            # exception being handled to a WARNING.
            LOG.info("Reconnected to RabbitMQ after %.1fs without a connection (%d failed "
                        "attempts); consuming again", self._clock() - since, attempts)


class DuplicateSkips(_LoggerFilter):
    """Counts oslo's skipped redeliveries and says each burst once."""

    logger_name = AMQP_LOGGER
    _DUPLICATE = "ignoring duplicate message"

    def __init__(self, counter: prometheus_client.Counter,
                 burst_s: float = _DUPLICATE_BURST_S) -> None:
        super().__init__()
        self._counter = counter
        self._burst_s = burst_s
        self._lock = threading.Lock()
        self._burst = 0
        self._timer: threading.Timer | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith(self._DUPLICATE)):
            return True
        self._counter.inc()
        with self._lock:
            self._burst += 1
            if self._timer is None:
                self._timer = threading.Timer(self._burst_s, self.flush)
                self._timer.daemon = True
                self._timer.start()
        return False  # the traceback says nothing the count does not

    def flush(self) -> None:
        with self._lock:
            count, self._burst, self._timer = self._burst, 0, None
        if count:
            LOG.warning("Skipped %d notifications RabbitMQ delivered again after a "
                        "reconnect (received before it; tally_collector_duplicates_skipped"
                        "_total counts them)", count)

    def remove(self) -> None:
        super().remove()
        with self._lock:
            timer = self._timer
        if timer is not None:
            timer.cancel()
        self.flush()
