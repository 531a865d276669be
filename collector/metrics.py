"""Prometheus metrics of tally-collector, served on ``[collector] metrics_bind``.

The metrics live in a registry of their own (no process-global state), so tests
can build as many collectors as they like in one process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from wsgiref.simple_server import WSGIServer

import prometheus_client
from oslo_config import cfg

from collector.errors import ConfigurationError
from tally_common.digits import ascii_digits

LOG = logging.getLogger(__name__)

OPTS = [
    cfg.StrOpt(
        "metrics_bind",
        default="127.0.0.1:9780",
        help="HOST:PORT the Prometheus metrics are served on (GET /metrics). "
        "Port 0 picks a free port; an empty value serves no metrics.",
    ),
]


class CollectorMetrics:
    """Every metric the collector exports."""

    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        r = self.registry
        self.skipped = prometheus_client.Counter(
            "tally_collector_skipped", "Notifications the table does not book, by oslo type.",
            ["oslo_event_type"], registry=r)
        self.mapped = prometheus_client.Counter(
            "tally_collector_mapped", "Notifications mapped to canonical events, by oslo type.",
            ["oslo_event_type"], registry=r)
        self.buffer_write_failures = prometheus_client.Counter(
            "tally_collector_buffer_write_failures",
            "Buffer writes that failed; their notifications were requeued.", registry=r)
        self.parked = prometheus_client.Counter(
            "tally_collector_parked",
            "Items moved to the parked store (kept on disk, not delivered), by reason.",
            ["reason"], registry=r)
        self.delivered = prometheus_client.Counter(
            "tally_collector_delivered",
            "Buffered events the Reporting API answered for, by outcome.",
            ["outcome"], registry=r)
        self.delivery_failures = prometheus_client.Counter(
            "tally_collector_delivery_failures",
            "Delivery requests that did not succeed, by reason.", ["reason"], registry=r)
        self.backpressure = prometheus_client.Gauge(
            "tally_collector_backpressure",
            "1 while the buffer is full and the listener holds back acknowledgements.",
            registry=r)
        self.buffer_depth = prometheus_client.Gauge(
            "tally_collector_buffer_depth", "Events in the disk buffer.", registry=r)
        self.buffer_oldest_age = prometheus_client.Gauge(
            "tally_collector_buffer_oldest_age_seconds",
            "Age of the oldest event in the disk buffer (0 when empty).", registry=r)
        self.parked_depth = prometheus_client.Gauge(
            "tally_collector_parked_depth",
            "Items in the parked store: not yet filed in the Reporting API's dead letter "
            "(the API did not answer, or refused to file them).", registry=r)
        self.parked_forwarded = prometheus_client.Counter(
            "tally_collector_parked_forwarded",
            "Parked items the Reporting API filed in its dead letter, then removed from "
            "the parked store, by outcome (filed; duplicate: filed by an earlier attempt).",
            ["outcome"], registry=r)
        self.parked_forward_failures = prometheus_client.Counter(
            "tally_collector_parked_forward_failures",
            "Requests filing parked items that did not succeed, by reason (refused: the "
            "API will not file that item, which stays parked).", ["reason"], registry=r)
        self.parked_requeued = prometheus_client.Counter(
            "tally_collector_parked_requeued",
            "Parked events an operator requeued, moved back into the buffer.", registry=r)
        self.undecodable = prometheus_client.Counter(
            "tally_collector_undecodable",
            "Notifications oslo.messaging could not decode and rejected before the "
            "collector saw them (dropped by RabbitMQ, or dead-lettered by the queue).",
            registry=r)
        self.cloud_known = prometheus_client.Gauge(
            "tally_collector_cloud_known",
            "1 when the Reporting API knows [collector] cloud (its clouds file names it, "
            "or it has none), 0 when it does not; absent until the API answered.",
            ["cloud"], registry=r)
        self.cloud_check_failures = prometheus_client.Counter(
            "tally_collector_cloud_check_failures",
            "Start-up checks of the cloud the Reporting API did not answer.", registry=r)

        self.connected = prometheus_client.Gauge(
            "tally_collector_connected",
            "1 while the listener is connected to RabbitMQ, 0 before its first connection "
            "and while it reconnects.", registry=r)
        self.connection_failures = prometheus_client.Counter(
            "tally_collector_connection_failures",
            "Attempts to connect the listener before its first connection that failed "
            "(RabbitMQ refused it: a wrong password or vhost; or did not answer), each "
            "retried.", registry=r)
        self.reconnections = prometheus_client.Counter(
            "tally_collector_reconnections",
            "Reconnections to RabbitMQ after the listener's connection was lost.",
            registry=r)
        self.duplicates_skipped = prometheus_client.Counter(
            "tally_collector_duplicates_skipped",
            "Notifications RabbitMQ delivered again after a reconnect that oslo.messaging "
            "skipped as already received.", registry=r)
        self.delivery_recoveries = prometheus_client.Counter(
            "tally_collector_delivery_recoveries",
            "Deliveries that succeeded again after one or more failed.", registry=r)

    def watch_buffer(
        self, depth: Callable[[], float], oldest_age: Callable[[], float],
        parked_depth: Callable[[], float],
    ) -> None:
        """Read the buffer gauges at scrape time.  The two that query SQLite are read at
        most once a second: every scrape runs on a new thread, which opens its own
        SQLite connections, beside the listener's commits."""
        self.buffer_depth.set_function(depth)
        self.buffer_oldest_age.set_function(_at_most_every(_SQLITE_GAUGE_TTL_S, oldest_age))
        self.parked_depth.set_function(_at_most_every(_SQLITE_GAUGE_TTL_S, parked_depth))


_SQLITE_GAUGE_TTL_S = 1.0


def _at_most_every(seconds: float, read: Callable[[], float]) -> Callable[[], float]:
    """``read`` called at most once per ``seconds``; the last value in between."""
    lock = threading.Lock()
    last: list[float] = []  # [value, monotonic time read]

    def cached() -> float:
        with lock:
            now = time.monotonic()
            if not last or now - last[1] >= seconds:
                last[:] = [read(), now]
            return last[0]

    return cached


def parse_bind(value: str) -> tuple[str, int] | None:
    """``HOST:PORT`` -> (host, port); empty -> None.  Raises ConfigurationError."""
    if not value:
        return None
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not ascii_digits(port) or int(port) > 65535:
        raise ConfigurationError(
            f"[collector] metrics_bind {value!r} is not HOST:PORT (e.g. 127.0.0.1:9780)")
    return host, int(port)


class MetricsServer:
    """The HTTP endpoint serving one CollectorMetrics registry."""

    def __init__(self, metrics: CollectorMetrics, bind: tuple[str, int]) -> None:
        self._metrics = metrics
        self._bind = bind
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_port)

    def start(self) -> None:
        host, port = self._bind
        try:
            self._server, self._thread = prometheus_client.start_http_server(
                port, addr=host, registry=self._metrics.registry)
        except OSError as exc:
            raise ConfigurationError(
                f"[collector] metrics_bind {host}:{port} cannot be served: {exc}") from None
        LOG.info("Serving metrics on %s:%s", host, self.port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
