"""Fixtures of the collector unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from oslo_config import cfg

from collector import opts
from collector.buffer import EventBuffer
from collector.metrics import CollectorMetrics


@pytest.fixture
def conf(tmp_path: Path) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project="tally-unit-test", default_config_files=[])
    conf.set_override("cloud", "os-unit", group="collector")
    conf.set_override("buffer_dir", str(tmp_path / "buffer"), group="collector")
    conf.set_override("reporting_url", "http://reporting.test:8779", group="collector")
    conf.set_override("auth_strategy", "noauth", group="collector")
    conf.set_override("metrics_bind", "", group="collector")
    return conf


@pytest.fixture
def buffer(tmp_path: Path) -> Iterator[EventBuffer]:
    buf = EventBuffer(str(tmp_path / "buf"), max_items=1_000_000)
    yield buf
    buf.close()


@pytest.fixture
def metrics() -> CollectorMetrics:
    return CollectorMetrics()


def sample_value(metrics: CollectorMetrics, name: str, labels: dict[str, str] | None = None) -> float:
    value = metrics.registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value


class FakeClock:
    """A clock a test moves by hand (``clock.now += 0.5``)."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
