"""Prometheus metrics of tally-reporting (docs/reporting-api.md, docs/reconciliation.md).

Under gunicorn every worker is a process: ``tally-reporting`` points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory before any worker imports
prometheus_client, and ``/metrics`` then aggregates every worker's values.  Gauges
say how they aggregate (``multiprocess_mode``).
"""

from __future__ import annotations

import glob
import os
import platform
from collections.abc import Iterable
from importlib import metadata

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as prometheus_multiprocess
from prometheus_client.metrics_core import Metric

INGEST_EVENTS = Counter(
    "tally_ingest_events",
    "Events offered to ingest, by cloud, source and outcome (stored, duplicate, rejected).",
    ["cloud", "source", "outcome"],
)
# Dead-letter replays are counted here and not in INGEST_EVENTS: an event refused,
# then replayed, is one event offered once (the rejected share stays a share of what
# arrived), and a replay that fails again is not a second rejection.
REPLAYED_EVENTS = Counter(
    "tally_ingest_replayed_events",
    "Dead-letter rows replayed into ingest, by cloud and outcome (stored, duplicate, "
    "rejected); not counted in tally_ingest_events_total.",
    ["cloud", "outcome"],
)
EVENTS_LAST_RECEIVED = Gauge(
    "tally_events_last_received_timestamp",
    "Unix time of the newest stored event per cloud.",
    ["cloud"],
    multiprocess_mode="max",
)
SYNC_RUNS = Counter(
    "tally_sync_runs", "Reconciliation runs by cloud and final status.", ["cloud", "status"]
)
SYNC_RESOURCES_RECONCILED = Counter(
    "tally_sync_resources_reconciled",
    "Corrections booked by reconciliation, by cloud and action (created, updated, deleted).",
    ["cloud", "action"],
)
SYNC_RESOURCES_DEFERRED = Counter(
    "tally_sync_resources_deferred",
    "Corrections a run deferred, by cloud and reason (transition, recent).",
    ["cloud", "reason"],
)
SYNC_DELETION_WINDOWS_CLAMPED = Counter(
    "tally_sync_deletion_windows_clamped",
    "Runs whose deleted-servers window was clamped ([sync] deletion_window_max_days, or a "
    "told instant behind the last completed run), by cloud: their instance deletes "
    "before the window are dated at the poll.",
    ["cloud"],
)
SYNC_LAST_COMPLETED = Gauge(
    "tally_sync_last_completed_timestamp",
    "Unix time (wall clock) the newest completed run of a cloud finished.",
    ["cloud"],
    multiprocess_mode="max",
)

BUILD_INFO = Gauge(
    "tally_build_info",
    "Always 1: the Tally version and the Python version serving it.",
    ["version", "python"],
    multiprocess_mode="max",
)
# Labels are bounded: the route is the URL rule (/v1/resources/<platform>/...), never
# the path a client sent; an unknown method is "other"; the status is the code the
# API (or the middleware in front of it) answered.
HTTP_REQUESTS = Histogram(
    "tally_http_request_duration_seconds",
    "Requests the Reporting API answered, by route (the URL rule; \"(unmatched)\" for "
    "a path no rule matches), method and status: _count is the number of requests, "
    "_sum and the buckets their time from arrival to the end of the answer.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0),
)


def tally_version() -> str:
    try:
        return metadata.version("tally")
    except metadata.PackageNotFoundError:  # running from a checkout never installed
        return "unknown"


def record_build_info() -> None:
    """Set ``tally_build_info`` (in the process building the app: gunicorn's master,
    before the fork, or each worker of another WSGI server)."""
    BUILD_INFO.labels(version=tally_version(), python=platform.python_version()).set(1)


def exposition() -> tuple[bytes, str]:
    """The metrics text of this process, or of every worker under multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        SettledFilesCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


class SettledFilesCollector(prometheus_multiprocess.MultiProcessCollector):
    """Every worker's values, leaving out the files a worker is creating right now.

    prometheus_client creates a worker's file and only then sizes it, so a scrape
    that lists the directory at that instant finds a 0-byte file, and the stock
    collector fails the whole scrape on it (prometheus/client_python#1199): /metrics
    answered 500 whenever a worker served its first request of a metric during a
    scrape.  A file shorter than its 8-byte header holds no value yet (the next
    scrape reads it), so it is left out; any other unreadable file still fails.
    """

    def collect(self) -> Iterable[Metric]:
        files = []
        for path in glob.glob(os.path.join(self._path, "*.db")):
            try:
                if os.path.getsize(path) < _MMAP_HEADER_BYTES:
                    continue
            except FileNotFoundError:  # a live gauge's file removed since the listing
                continue
            files.append(path)
        return self.merge(files, accumulate=True)


_MMAP_HEADER_BYTES = 8  # prometheus_client's file header: used length + padding
