"""The closed-history part of ``bench/statements.py``: statements and summaries of
clouds with 1 to 12 closed months, late facts after each close, measured after a
large month of another cloud was received (see that script's docstring)."""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from reporting import ingest as ingesting
from reporting.billing import adjustments, closing, periods, service, statements, versions

# The bench's flavors: (name, vcpus, ram_gb, disk_gb).
FLAVORS = [("m1.small", 1, 2, 20), ("m1.medium", 2, 4, 40), ("m1.large", 4, 8, 80),
           ("m1.xlarge", 8, 16, 160)]


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def describe(resources: int) -> str:
    return (f"{len(HISTORY_CLOSES)} clouds of {resources} instances over {HISTORY_PROJECTS} "
            f"projects, {', '.join(map(str, HISTORY_CLOSES))} months closed, {HISTORY_LATE} "
            "late events after each close")


def _history_events(cloud: str, resources: int, month: dt.datetime, rng: random.Random,
                    counter: Any) -> list[dict[str, Any]]:
    """A month of a history cloud: each instance created in the first month, then a
    state change or a resize every ten days or so."""
    items = []
    for n in range(resources):
        for day in (1 + (n % 9), 11 + (n % 9), 21 + (n % 7)):
            when = month.replace(day=day, hour=n % 24, minute=n % 60)
            first = month == HISTORY_START and day == 1 + (n % 9)
            items.append(_history_event(
                cloud, counter, n, when,
                "compute.instance.create.end" if first else "compute.instance.update",
                {"state": rng.choice(["active", "shutoff"]),
                 "size": FLAVORS_SIZES[(n + day) % len(FLAVORS_SIZES)]}))
    return items


def _history_event(cloud: str, counter: Any, n: int, when: dt.datetime, event_type: str,
                   payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": f"{cloud}-{next(counter)}", "event_type": event_type,
        "platform": "openstack", "cloud": cloud, "resource_type": "instance",
        "resource_id": f"h{n}", "project_id": f"hp{n % HISTORY_PROJECTS:02d}",
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "source": "collector",
        "payload": payload,
    }


HISTORY_PROJECTS, HISTORY_CLOSES, HISTORY_LATE = 40, (1, 2, 4, 8, 12), 10
HISTORY_START, HISTORY_NOW = dt.datetime(2026, 1, 1), dt.datetime(2027, 6, 1)
FLAVORS_SIZES = [{"vcpus": f[1], "ram_gb": f[2], "disk_gb": f[3], "flavor": f[0]}
                 for f in FLAVORS]


def _months(count: int) -> list[dt.datetime]:
    months = [HISTORY_START]
    while len(months) < count:
        months.append(periods.parse(periods.name_of(months[-1]))[1])
    return months


def build(factory: Any, resources: int) -> None:
    """Clouds ``history-N`` with N months closed one by one, each after the next
    month's events arrived, and HISTORY_LATE late events about earlier closed months
    after each close."""
    for closes in HISTORY_CLOSES:
        cloud, rng, counter = f"history-{closes}", random.Random(closes), iter(range(10**9))
        months = _months(closes + 1)
        ingest(factory, _history_events(cloud, resources, months[0], rng, counter))
        for number in range(1, closes + 1):
            ingest(factory, _history_events(cloud, resources, months[number], rng, counter))
            result = closing.close(factory, cloud, periods.name_of(months[number - 1]),
                                   "bench", HISTORY_NOW)
            assert result.created
            ingest(factory, [
                _history_event(cloud, counter, rng.randrange(resources),
                               months[rng.randrange(number)].replace(
                                   day=15, hour=rng.randrange(24)),
                               "compute.instance.update", {"state": "shutoff"})
                for _ in range(HISTORY_LATE)])


def measure(factory: Any) -> list[tuple[int, float, float, float]]:
    """Per history cloud, medians of 5 of: every project's summary of its first open
    month, one statement, and the pending adjustments alone."""
    found = []
    for closes in HISTORY_CLOSES:
        cloud, target = f"history-{closes}", periods.name_of(_months(closes + 1)[-1])
        summary, statement, pending = [], [], []
        for _ in range(5):
            with factory() as session:
                seconds, _page = _timed(lambda s=session, c=cloud, t=target: (
                    service.summaries(s, c, t, None, 1000, HISTORY_NOW)))
                summary.append(seconds)
                seconds, _text = _timed(lambda s=session, c=cloud, t=target: (
                    service.statement_text(s, c, "hp00", t, HISTORY_NOW)))
                statement.append(seconds)
                closed = statements.closed_periods(session, cloud)
                timeline = versions.timeline(session, cloud)
                seconds, adjusted = _timed(lambda s=session, c=cloud, t=target, p=closed,
                                           v=timeline: (
                    adjustments.pending(s, c, t, p, v, HISTORY_NOW)))
                pending.append(seconds)
        found.append((closes, statistics.median(summary), statistics.median(statement),
                      statistics.median(pending)))
        print(f"  {closes:2d} closed months: summaries of {target} {found[-1][1] * 1000:.0f} ms,"
              f" a statement {found[-1][2] * 1000:.0f} ms, the pending adjustments alone "
              f"{found[-1][3] * 1000:.0f} ms ({len(adjusted)} adjustments of "
              f"{len({a.source_period for a in adjusted})} closed months)", flush=True)
    return found


def ingest(factory: Any, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 1000):
        results = ingesting.ingest(factory, items[start:start + 1000],
                                   require_size_schema=False)
        bad = [r for r in results if r.status != "stored"]
        assert not bad, bad[:3]
