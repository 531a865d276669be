"""The collector assembled: listener, disk buffer, delivery and parked-item threads,
metrics."""

from __future__ import annotations

import logging
import threading

import oslo_messaging
from oslo_config import cfg

from collector.api_client import client_from_conf
from collector.backlog import BacklogSignal
from collector.broker import ConnectionWatch, DuplicateSkips, ListenerStarter, broker_name
from collector.buffer import EventBuffer
from collector.cloud_check import CloudCheck
from collector.delivery import Delivery
from collector.errors import ConfigurationError
from collector.forward import ParkedForwarder
from collector.listener import NotificationEndpoint, build_listener, resolve_cloud
from collector.metrics import CollectorMetrics, MetricsServer, parse_bind
from collector.undecodable import UndecodableCounter

LOG = logging.getLogger(__name__)

_RABBIT_GROUP = "oslo_messaging_rabbit"
# Threads handing listener batches to the endpoint, unless the operator sets oslo's
# executor_thread_pool_size (default 64, sized for RPC servers whose calls block).
_EXECUTOR_THREADS = 4


def _default_unless_set(
    conf: cfg.ConfigOpts, name: str, value: int, group: str | None = None
) -> None:
    """Give an oslo.messaging option the collector's default unless the operator
    set it; nothing when the option does not exist (another driver)."""
    try:
        location = conf.get_location(name, group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return
    if location is None or location.location == cfg.Locations.opt_default:
        conf.set_default(name, value, group=group)


class Collector:
    """One running collector.  Everything is read and checked in the constructor, so
    a bad configuration fails before anything is consumed."""

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        transport: oslo_messaging.Transport | None = None,
    ) -> None:
        self.conf = conf
        self.cloud = resolve_cloud(conf)
        bind = parse_bind(conf.collector.metrics_bind)
        self.metrics = CollectorMetrics()
        self.buffer = EventBuffer.from_conf(conf)
        self.backlog = BacklogSignal()  # whether the listener drains a backlog
        # One client of the API (one keystone token) for every sender.
        self.api = client_from_conf(conf)
        self.delivery = Delivery.from_conf(conf, self.buffer, self.metrics, self.backlog,
                                           client=self.api)
        self.metrics.watch_buffer(self.buffer.depth, self.buffer.oldest_age,
                                  self.buffer.parked_depth)
        self.metrics_server = MetricsServer(self.metrics, bind) if bind else None
        self.cloud_check = CloudCheck(
            self.api.describe(), None, self.cloud,
            self.metrics, timeout=conf.collector.request_timeout_s,
            retry_s=conf.collector.retry_max_delay_s, client=self.api)
        self.cloud_check_done = self.cloud_check.done
        self.stopping = threading.Event()
        self.written = threading.Event()
        self.undecodable = UndecodableCounter(self.metrics.undecodable)
        self.forwarder = ParkedForwarder.from_conf(conf, self.buffer, self.metrics,
                                                   self.written, client=self.api)
        self.endpoint = NotificationEndpoint(
            self.cloud, self.buffer, self.metrics, self.stopping, self.written,
            max_write_attempts=conf.collector.max_write_attempts,
            requeue_max_delay_s=conf.collector.requeue_max_delay_s,
            backlog=self.backlog,
            batch_size=conf.collector.listener_batch_size,
        )
        self._own_transport = transport is None
        if transport is None:
            try:
                transport = oslo_messaging.get_notification_transport(conf)
            except (oslo_messaging.InvalidTransportURL, oslo_messaging.DriverLoadFailure) as exc:
                raise ConfigurationError(f"transport_url: {exc}") from None
        self.transport = transport
        # oslo's default prefetch is unlimited: a full buffer would then pull the whole
        # queue into memory unacknowledged.
        _default_unless_set(conf, "rabbit_qos_prefetch_count",
                            2 * conf.collector.listener_batch_size, _RABBIT_GROUP)
        self.listener = self._build_listener()
        # The endpoint's batches take turns at the buffer's one SQLite writer: a few
        # threads kept warm serve it better than oslo's pool, which starts a new
        # thread for each batch up to 64 of them (bench/collector.py, paired rounds:
        # ~5% more delivered).  The listener registered the option on the
        # transport's configuration; its executor is built at start().
        _default_unless_set(self.listener.conf, "executor_thread_pool_size",
                            _EXECUTOR_THREADS)
        self.first_connection_timeout_s = conf.collector.first_connection_timeout_s
        self.starter = ListenerStarter(self._next_listener, self.metrics, broker_name(conf))
        self.connection_watch = ConnectionWatch(self.metrics, self.starter)
        self.duplicate_skips = DuplicateSkips(self.metrics.duplicates_skipped)
        self._delivery_thread = threading.Thread(
            target=self.delivery.run, args=(self.stopping, self.written),
            name="tally-delivery", daemon=True)
        # listener.start() blocks while RabbitMQ is unreachable (oslo retries the
        # connection), so it runs in its own thread and SIGTERM still ends the process.
        self._listener_thread = threading.Thread(
            target=self.starter.run, args=(self.stopping, self._listening_with),
            name="tally-listener-start", daemon=True)
        self._forward_thread = threading.Thread(
            target=self.forwarder.run, args=(self.stopping,), name="tally-parked-forward",
            daemon=True)
        self._cloud_check_thread = threading.Thread(
            target=self.cloud_check.run, args=(self.stopping,), name="tally-cloud-check",
            daemon=True)
        self._state_lock = threading.Lock()
        self._listening = False
        self._first_listener_used = False

    def _build_listener(self) -> oslo_messaging.MessageHandlingServer:
        return build_listener(self.conf, self.transport, self.endpoint)

    def _next_listener(self) -> oslo_messaging.MessageHandlingServer:
        """The listener of the next start attempt: a new one after a failed start."""
        with self._state_lock:
            if not self._first_listener_used:
                self._first_listener_used = True
                return self.listener
            self.listener = self._build_listener()
            return self.listener

    def start(self) -> None:
        if self.metrics_server is not None:
            self.metrics_server.start()
        depth, parked = self.buffer.depth(), self.buffer.parked_depth()
        LOG.info("Collecting cloud %s from exchanges %s (pool %s); %d events buffered",
                 self.cloud, ",".join(self.conf.collector.exchanges),
                 self.conf.collector.pool, depth)
        if parked:
            LOG.warning("%d items are parked in %s/parked; they go to the Reporting API's "
                        "dead letter as soon as it files them", parked, self.buffer.directory)
        self.undecodable.install()
        self.connection_watch.install()
        self.duplicate_skips.install()
        self._delivery_thread.start()
        self._forward_thread.start()
        self._listener_thread.start()
        self._cloud_check_thread.start()

    def _listening_with(self, listener: oslo_messaging.MessageHandlingServer) -> None:
        with self._state_lock:
            self.listener = listener
            self._listening = True
            raced_with_stop = self.stopping.is_set()
        if raced_with_stop:
            listener.stop()
            listener.wait()

    def must_exit(self) -> str | None:
        """Why the process must end with a failure (never connected in time); None
        while it may run."""
        return self.starter.overdue(self.first_connection_timeout_s)

    @property
    def listening(self) -> bool:
        with self._state_lock:
            return self._listening

    def stop(self) -> None:
        """Stop consuming, finish in-flight batches and their acks, stop delivering."""
        LOG.info("Stopping: finishing in-flight notifications")
        with self._state_lock:
            self.stopping.set()
            listening = self._listening
        if listening:
            self.listener.stop()
            self.listener.wait()
        else:
            LOG.warning("Stopping before RabbitMQ was reached: nothing was consumed")
        self.written.set()
        self._delivery_thread.join(timeout=self.conf.collector.request_timeout_s + 5)
        self._forward_thread.join(timeout=self.conf.collector.request_timeout_s + 5)
        if self.metrics_server is not None:
            self.metrics_server.stop()
        self.undecodable.remove()
        self.connection_watch.remove()
        self.duplicate_skips.remove()
        if self._own_transport and listening:
            self.transport.cleanup()
        self.buffer.close()
        LOG.info("Stopped; %s", "delivery thread still busy" if
                 self._delivery_thread.is_alive() else "clean exit")
