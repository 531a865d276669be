"""The collector's metric helpers."""

from __future__ import annotations

from collector.metrics import CollectorMetrics, _at_most_every
from tests.unit.collector.conftest import sample_value


def test_a_cached_gauge_reads_at_most_once_per_interval() -> None:
    reads = []

    def read() -> float:
        reads.append(1)
        return float(len(reads))

    hourly = _at_most_every(3600, read)
    assert [hourly(), hourly(), hourly()] == [1.0, 1.0, 1.0]
    always = _at_most_every(0, read)
    assert [always(), always()] == [2.0, 3.0]


def test_buffer_depth_is_read_at_every_scrape(metrics: CollectorMetrics) -> None:
    depth = [5.0]
    metrics.watch_buffer(lambda: depth[0], lambda: 7.0, lambda: 1.0)
    assert sample_value(metrics, "tally_collector_buffer_depth") == 5.0
    depth[0] = 6.0
    assert sample_value(metrics, "tally_collector_buffer_depth") == 6.0
    assert sample_value(metrics, "tally_collector_buffer_oldest_age_seconds") == 7.0
    assert sample_value(metrics, "tally_collector_parked_depth") == 1.0
