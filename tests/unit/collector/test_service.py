"""The assembled collector: prefetch and executor defaults, metrics endpoint, start and stop."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import oslo_messaging
import pytest
import requests
import requests_mock
from oslo_config import cfg

from collector import opts
from collector.service import Collector
from tally_common.env_aliases import apply_env_aliases


@pytest.fixture
def rabbit_transport(conf: cfg.ConfigOpts) -> Iterator[Any]:
    # Building the transport and the listener does not connect.
    transport = oslo_messaging.get_notification_transport(
        conf, url="rabbit://guest:guest@127.0.0.1:1/")
    yield transport
    transport.cleanup()


def test_prefetch_is_bounded_by_default(conf: cfg.ConfigOpts, rabbit_transport: Any) -> None:
    conf.set_override("listener_batch_size", 150, group="collector")
    collector = Collector(conf, transport=rabbit_transport)
    try:
        assert conf.oslo_messaging_rabbit.rabbit_qos_prefetch_count == 300
    finally:
        collector.buffer.close()


def test_an_operator_prefetch_is_kept(conf: cfg.ConfigOpts, rabbit_transport: Any) -> None:
    conf.set_override("rabbit_qos_prefetch_count", 7, group="oslo_messaging_rabbit")
    collector = Collector(conf, transport=rabbit_transport)
    try:
        assert conf.oslo_messaging_rabbit.rabbit_qos_prefetch_count == 7
    finally:
        collector.buffer.close()


def test_start_serves_metrics_and_stop_is_clean(conf: cfg.ConfigOpts) -> None:
    conf.set_override("metrics_bind", "127.0.0.1:0", group="collector")
    conf.set_override("pool", f"unit-{uuid.uuid4().hex[:8]}", group="collector")
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    apply_env_aliases(conf, {"TALLY_OSC_CLOUD": "env-cloud"})
    collector = Collector(conf, transport=transport)
    try:
        assert collector.cloud == "env-cloud"
        collector.start()
        assert collector.metrics_server is not None
        text = requests.get(f"http://127.0.0.1:{collector.metrics_server.port}/metrics",
                            timeout=5).text
        for name in ("tally_collector_buffer_depth", "tally_collector_buffer_oldest_age_seconds",
                     "tally_collector_parked_depth", "tally_collector_backpressure"):
            assert f"\n{name} " in text
    finally:
        collector.stop()
        transport.cleanup()
    assert collector.stopping.is_set()


def test_a_few_executor_threads_by_default(conf: cfg.ConfigOpts, rabbit_transport: Any) -> None:
    collector = Collector(conf, transport=rabbit_transport)
    try:
        assert conf.executor_thread_pool_size == 4
    finally:
        collector.buffer.close()


def test_an_operator_executor_pool_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "collector.conf"
    config.write_text("[DEFAULT]\nexecutor_thread_pool_size = 7\n"
                      f"[collector]\ncloud = os-unit\nbuffer_dir = {tmp_path / 'buffer'}\n"
                      "reporting_url = http://reporting.test:8779\nmetrics_bind =\n"
                      "auth_strategy = noauth\n")
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf(["--config-file", str(config)], project="tally-unit-test", default_config_files=[])
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    collector = Collector(conf, transport=transport)
    try:
        assert conf.executor_thread_pool_size == 7
    finally:
        collector.buffer.close()
        transport.cleanup()


def test_the_collector_checks_its_cloud_at_start(conf: cfg.ConfigOpts) -> None:
    conf.set_override("pool", f"unit-{uuid.uuid4().hex[:8]}", group="collector")
    transport = oslo_messaging.get_notification_transport(conf, url="fake:")
    with requests_mock.Mocker(real_http=False) as mock:
        mock.get("http://reporting.test:8779/v1/clouds", json={"clouds_file": True, "items": []})
        mock.post("http://reporting.test:8779/v1/events", status_code=503)
        collector = Collector(conf, transport=transport)
        try:
            collector.start()
            assert collector.cloud_check_done.wait(120)  # only a guard against a hang
            assert collector.metrics.registry.get_sample_value(
                "tally_collector_cloud_known", {"cloud": "os-unit"}) == 0
        finally:
            collector.stop()
            transport.cleanup()
