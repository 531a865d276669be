"""The delivery's options read once into a DeliveryConfig, and the values checked there."""

from __future__ import annotations

from pathlib import Path

import pytest
from oslo_config import cfg

from collector.api_client import events_url, read_token
from collector.buffer import EventBuffer
from collector.delivery import Delivery
from collector.delivery_config import DeliveryConfig
from collector.errors import ConfigurationError
from collector.metrics import CollectorMetrics
from tally_common.service_auth import BearerClient


def test_every_option_reaches_the_config(conf: cfg.ConfigOpts, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc123\n")
    for name, value in [("reporting_url", "http://api.test:8779/"), ("token_file", str(token)),
                        ("batch_size", 300), ("delivery_concurrency", 3),
                        ("request_timeout_s", 7.0), ("retry_initial_delay_s", 0.2),
                        ("retry_max_delay_s", 9.0), ("batch_linger_s", 0.4),
                        ("idle_poll_s", 0.3), ("auth_strategy", "token")]:
        conf.set_override(name, value, group="collector")
    config = DeliveryConfig.from_conf(conf)
    assert config == DeliveryConfig(
        url="http://api.test:8779/v1/events", batch_size=300, concurrency=3,
        timeout=7.0, initial_delay=0.2, max_delay=9.0, linger=0.4, idle_poll=0.3)
    assert isinstance(config.client, BearerClient)
    assert config.client.base_url == "http://api.test:8779"
    assert config.client._session().headers["Authorization"] == "Bearer abc123"


def test_the_options_defaults(conf: cfg.ConfigOpts) -> None:
    config = DeliveryConfig.from_conf(conf)
    assert (config.token, config.batch_size, config.concurrency, config.timeout,
            config.initial_delay, config.max_delay, config.linger, config.idle_poll) == (
        None, 1000, 2, 30.0, 0.5, 60.0, 0.25, 1.0)


def test_delivery_concurrency_option(conf: cfg.ConfigOpts) -> None:
    assert conf.collector.delivery_concurrency == 2
    conf.set_override("delivery_concurrency", 5, group="collector")
    assert DeliveryConfig.from_conf(conf).concurrency == 5
    with pytest.raises(ValueError):
        conf.set_override("delivery_concurrency", 0, group="collector")


def test_a_bad_value_fails_when_the_delivery_is_built(
    conf: cfg.ConfigOpts, tmp_path: Path, buffer: EventBuffer, metrics: CollectorMetrics
) -> None:
    conf.set_override("token_file", str(tmp_path / "missing"), group="collector")
    conf.set_override("auth_strategy", "token", group="collector")
    with pytest.raises(ConfigurationError, match="token_file"):
        Delivery.from_conf(conf, buffer, metrics)


@pytest.mark.parametrize("url", ["", "127.0.0.1:8779", "ftp://host/", "http://", "http://h:99999"])
def test_malformed_reporting_url(url: str) -> None:
    with pytest.raises(ConfigurationError, match="reporting_url"):
        events_url(url)


def test_events_url() -> None:
    assert events_url("http://127.0.0.1:8779/") == "http://127.0.0.1:8779/v1/events"
    assert events_url("https://api.example/tally") == "https://api.example/tally/v1/events"


def test_read_token(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  abc123\n")
    assert read_token(str(path)) == "abc123"
    assert read_token(None) is None
    path.write_text("\n")
    with pytest.raises(ConfigurationError, match="empty"):
        read_token(str(path))
    with pytest.raises(ConfigurationError, match="token_file"):
        read_token(str(tmp_path / "missing"))
