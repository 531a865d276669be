"""The collector's connection to RabbitMQ: a refused start is retried with one line per
attempt, the gauge says whether it is connected, a collector never connected in time
is told to exit, a reconnection is said once, redelivered duplicates are counted."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from oslo_config import cfg

from collector.broker import (
    AMQP_LOGGER,
    RABBIT_LOGGER,
    ConnectionWatch,
    DuplicateSkips,
    ListenerStarter,
)
from collector.metrics import CollectorMetrics
from collector.service import Collector
from tests.unit.collector.conftest import FakeClock, sample_value


class RefusedListener:
    """A listener whose start fails as oslo's does for a wrong password."""

    def __init__(self, outcomes: list[Exception | None]) -> None:
        self._outcomes = outcomes
        self.started = False

    def start(self) -> None:
        outcome = self._outcomes.pop(0)
        if outcome is not None:
            raise outcome
        self.started = True


class AccessRefused(Exception):
    pass


def test_a_refused_start_is_retried_on_a_new_listener(
        metrics: CollectorMetrics, caplog: pytest.LogCaptureFixture) -> None:
    outcomes: list[Exception | None] = [
        AccessRefused("(0, 0): (403) ACCESS_REFUSED - Login was refused\n using AMQPLAIN"),
        AccessRefused("again"), None]
    built: list[RefusedListener] = []

    def build() -> Any:
        built.append(RefusedListener(outcomes))
        return built[-1]

    starter = ListenerStarter(build, metrics, "rabbit://tally:***@rabbit:5672/",
                              initial_delay=0.01, max_delay=0.02)
    assert sample_value(metrics, "tally_collector_connected") == 0
    handed: list[Any] = []
    with caplog.at_level(logging.INFO, logger="collector.broker"):
        starter.run(threading.Event(), handed.append)
    assert len(built) == 3 and handed == [built[2]] and built[2].started
    assert sample_value(metrics, "tally_collector_connected") == 1
    assert sample_value(metrics, "tally_collector_connection_failures_total") == 2
    lines = [r.getMessage() for r in caplog.records if r.name == "collector.broker"]
    assert lines[0].startswith(
        "Connecting to RabbitMQ at rabbit://tally:***@rabbit:5672/ failed (attempt 1: "
        "AccessRefused: (0, 0): (403) ACCESS_REFUSED - Login was refused using AMQPLAIN); "
        "retrying in ")
    assert lines[1].startswith("Connecting to RabbitMQ at rabbit://tally:***@rabbit:5672/ "
                               "failed (attempt 2: AccessRefused: again)")
    assert lines[2] == ("Connected to RabbitMQ at rabbit://tally:***@rabbit:5672/ "
                        "(attempt 3); consuming notifications")
    assert all(r.exc_info is None for r in caplog.records)   # no traceback


def test_never_connected_in_time_is_overdue(metrics: CollectorMetrics) -> None:
    clock = FakeClock()
    starter = ListenerStarter(lambda: RefusedListener([AccessRefused("no")]), metrics,
                              "rabbit://h/", initial_delay=0.01, max_delay=0.01, clock=clock)
    stop = threading.Event()
    thread = threading.Thread(target=starter.run, args=(stop, lambda listener: None))
    thread.start()
    clock.now += 299
    assert starter.overdue(300) is None
    clock.now += 1
    try:
        reason = starter.overdue(300)
    finally:
        stop.set()
        thread.join(5)
    assert reason is not None
    assert reason.startswith("not connected to RabbitMQ at rabbit://h/ within 300s (")
    assert "last: AccessRefused: no" in reason


def test_a_connected_collector_is_never_overdue(metrics: CollectorMetrics) -> None:
    clock = FakeClock()
    starter = ListenerStarter(lambda: RefusedListener([None]), metrics, "rabbit://h/",
                              clock=clock)
    starter.run(threading.Event(), lambda listener: None)
    clock.now += 10_000
    assert starter.overdue(300) is None


def _oslo_line(logger: str, msg: str, *args: Any) -> None:
    logging.getLogger(logger).error(msg, *args)


def test_a_broker_cut_and_the_reconnection_are_followed(
        metrics: CollectorMetrics, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    starter = ListenerStarter(lambda: RefusedListener([None]), metrics, "rabbit://h/")
    starter.run(threading.Event(), lambda listener: None)
    watch = ConnectionWatch(metrics, starter, clock=clock)
    watch.install()
    info = {"connection_id": "c1", "hostname": "h", "port": 5672, "err_str": "reset",
            "sleep_time": 1, "transport": "amqp", "client_port": 4}
    try:
        with caplog.at_level(logging.INFO):
            _oslo_line(RABBIT_LOGGER, "[%(connection_id)s] AMQP server on %(hostname)s:"
                       "%(port)s is unreachable: %(err_str)s. Trying again in "
                       "%(sleep_time)d seconds.", info)
            assert sample_value(metrics, "tally_collector_connected") == 0
            clock.now += 12.5
            _oslo_line(RABBIT_LOGGER, "Connection failed: %s (retrying in %s seconds)",
                       "refused", 2)
            logging.getLogger(RABBIT_LOGGER).info(
                "[%(connection_id)s] Reconnected to AMQP server on %(hostname)s:%(port)s "
                "via [%(transport)s] client with port %(client_port)s.", info)
    finally:
        watch.remove()
    assert sample_value(metrics, "tally_collector_connected") == 1
    assert sample_value(metrics, "tally_collector_reconnections_total") == 1
    said = [r.getMessage() for r in caplog.records if r.name == "collector.broker"]
    assert said[-1] == ("Reconnected to RabbitMQ after 12.5s without a connection "
                        "(2 failed attempts); consuming again")


def test_duplicate_redeliveries_are_one_counted_line(
        metrics: CollectorMetrics, caplog: pytest.LogCaptureFixture) -> None:
    skips = DuplicateSkips(metrics.duplicates_skipped, burst_s=3600)
    skips.install()
    try:
        with caplog.at_level(logging.INFO):
            for n in range(15):
                try:
                    raise RuntimeError(f"Found duplicate message({n}). Skipping it.")
                except RuntimeError:
                    logging.getLogger(AMQP_LOGGER).exception("ignoring duplicate message %s",
                                                             None)
            skips.flush()
    finally:
        skips.remove()
    assert sample_value(metrics, "tally_collector_duplicates_skipped_total") == 15
    assert not [r for r in caplog.records if r.name == AMQP_LOGGER]
    said = [r.getMessage() for r in caplog.records if r.name == "collector.broker"]
    assert len(said) == 1 and said[0].startswith(
        "Skipped 15 notifications RabbitMQ delivered again after a reconnect")


def test_the_collector_exits_when_rabbitmq_refuses_it(conf: cfg.ConfigOpts) -> None:
    """Every start refused (as oslo's is for a wrong password): told to exit once
    first_connection_timeout_s has passed."""
    import oslo_messaging

    transport = oslo_messaging.get_notification_transport(
        conf, url="rabbit://nobody:wrong@127.0.0.1:1/")
    conf.set_override("first_connection_timeout_s", 1.0, group="collector")
    collector = Collector(conf, transport=transport)
    failing: list[Exception | None] = [AccessRefused("refused")] * 1000
    collector._build_listener = lambda: RefusedListener(failing)  # type: ignore[method-assign]
    collector._first_listener_used = True
    collector.start()
    try:
        waited = threading.Event()
        for _ in range(1200):  # a generous minute
            if collector.must_exit() is not None or waited.wait(0.05):
                break
        assert collector.must_exit() is not None
        assert sample_value(collector.metrics, "tally_collector_connected") == 0
        assert sample_value(collector.metrics, "tally_collector_connection_failures_total") > 0
    finally:
        collector.stop()
        transport.cleanup()


def test_unreachable_attempts_before_the_first_connection_are_counted(
        metrics: CollectorMetrics) -> None:
    """oslo retries an unreachable host inside listener.start(): its lines count."""
    starter = ListenerStarter(lambda: RefusedListener([None]), metrics, "rabbit://h/")
    watch = ConnectionWatch(metrics, starter)
    watch.install()
    try:
        for _ in range(3):
            _oslo_line(RABBIT_LOGGER, "Connection failed: %s (retrying in %s seconds)",
                       "[Errno 111] ECONNREFUSED", 2)
    finally:
        watch.remove()
    assert sample_value(metrics, "tally_collector_connection_failures_total") == 3
    assert sample_value(metrics, "tally_collector_connected") == 0
