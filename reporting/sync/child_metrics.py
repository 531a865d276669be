"""The metrics a sync run's process moves, carried home to the process that serves them.

A run books its corrections through ingest, which counts them
(``tally_ingest_events_total{source="reconciliation"}``) and dates the newest event
(``tally_events_last_received_timestamp``).  The run's process keeps its metrics in
its own registry (it is started without ``PROMETHEUS_MULTIPROC_DIR``); after each
run it hands back what moved since the last (``Tally``) and the serving process adds
that to its own, which ``/metrics`` answers from — whether one process serves or
gunicorn's workers do.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import REGISTRY, Counter, Gauge

from reporting import metrics

Sample = tuple[str, dict[str, str], float]

# Family name -> metric: what ingest moves.  The run's own counters (tally_sync_*)
# are counted by the serving process itself.
_CARRIED: dict[str, Counter | Gauge] = {
    "tally_ingest_events": metrics.INGEST_EVENTS,
    "tally_ingest_replayed_events": metrics.REPLAYED_EVENTS,
    "tally_events_last_received_timestamp": metrics.EVENTS_LAST_RECEIVED,
}


def collect() -> list[Sample]:
    """In the run's process: the samples of the carried metrics, as they stand."""
    samples: list[Sample] = []
    for family in REGISTRY.collect():
        metric = _CARRIED.get(family.name)
        if metric is None:
            continue
        wanted = family.name + "_total" if isinstance(metric, Counter) else family.name
        samples.extend((family.name, dict(sample.labels), sample.value)
                       for sample in family.samples if sample.name == wanted)
    return samples


class Tally:
    """In the run's process: what the carried metrics moved since the last call."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def since_last(self) -> list[Sample]:
        moved: list[Sample] = []
        for name, labels, value in collect():
            key = (name, tuple(sorted(labels.items())))
            previous = self._last.get(key)
            if previous == value:
                continue
            self._last[key] = value
            counter = isinstance(_CARRIED[name], Counter)
            moved.append((name, labels, value - (previous or 0.0) if counter else value))
        return moved


def add(samples: Iterable[Sample]) -> None:
    """In the serving process: a counter grows by the child's count, a gauge takes the
    child's value (both gauges are instants the child observed last)."""
    for name, labels, value in samples:
        metric = _CARRIED.get(name)
        if isinstance(metric, Counter):
            if value > 0:
                metric.labels(**labels).inc(value)
        elif isinstance(metric, Gauge):
            metric.labels(**labels).set(value)
