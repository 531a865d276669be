"""Benchmark: what the history's monthly partitions keep constant as the history grows.

The shape measured: one cloud whose history grows by ``--per-month`` events a month
(default 100,000) over ``--projects`` projects (default 200); a history of N events is
N / per-month months long (1,000,000 events: 10 months; 10,000,000: 100 months).
Every month ``per-month / 10`` new instances each get 10 events two days apart
(create, 8 resizes, delete; those of the last month stay alive: no delete), so every
event opens an interval.  Each scale is loaded set-based into a fresh database at
head, its partitions created first (``partitions.ensure --since``): one
``INSERT ... SELECT`` over ``generate_series`` each writes ``events``,
``tally_history.event_ids``, ``resource_intervals`` and ``current_resources`` as
ingest would have, then VACUUM (ANALYZE) and a CHECKPOINT: a history of many months
has been vacuumed and checkpointed many times over, and measuring right after a bulk
load measures the load's aftermath instead (pages without hint bits, which each first
read sets and dirties, and the load's dirty buffers, written out by the reads that
evict them), which grows with the load: it made the fold at 10,000,000 events cost
1.6-1.9x the fold at 1,000,000 where the settled databases measure 0.8-1.0x.

Measured at each scale (medians of ``--samples``), and the ratio largest/smallest
scale (target: within 1.5x):

- a late event's fold: ``reporting.ingest.ingest`` of one event of a deleted
  instance of the middle month, dated between its first and second events (the
  instance's 11 events are replayed);
- one project's month of usage (``usage_store.usage_page`` by resource type) of the
  last full month, and, as an extra line, of the first month (which reads the
  partitions of every month after it: ``resource_intervals`` is partitioned by end);
- one resource's lifecycle (``resources.resource_lifecycle``);
- a page of 1,000 inventory rows (``resources.current_inventory`` after a random
  key), and its ratio to a raw keyset SELECT of the same rows (target: within 3x).

Usage, from the checkout (each scale takes the time its load takes: 10,000,000 rows
take many minutes; the machine may be shared, so run the largest once):

    python bench/partitions.py [--scales 1000000,10000000] [--per-month 100000]
                               [--projects 200] [--samples 30]

Needs the PostgreSQL named by TALLY_TEST_PG_URL (loopback default); creates one
database per scale and drops it at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scratch_database import scratch_database  # noqa: E402
from reporting.db import migrations, partitions  # noqa: E402
from reporting.db.engine import make_engine, make_sessionmaker  # noqa: E402
from reporting.ingest import ingest  # noqa: E402
from reporting.queries import resources, usage_store  # noqa: E402
from reporting.queries.resources import InventoryFilter  # noqa: E402
from reporting.queries.usage import UsageFilter  # noqa: E402

CLOUD = "bench"
FIRST = dt.datetime(2020, 1, 1)
EVENTS_EACH = 10

# One row per (resource r, event k): its instant and what it is.
_ROWS = """
SELECT r, k, 'b-' || r || '-' || k AS event_id, 'vm-' || r AS rid, 'p' || (r % :projects) AS project,
       CAST(:first AS timestamp) + make_interval(months => r / :rpm)
         + (r % :rpm) * interval '8 days' / :rpm + k * interval '2 days' AS ts,
       r / :rpm = :months - 1 AS live,
       CASE WHEN k = 0 THEN 'compute.instance.create.end'
            WHEN k = 9 AND r / :rpm < :months - 1 THEN 'compute.instance.delete.end'
            ELSE 'compute.instance.resize.confirm.end' END AS event_type
FROM generate_series(0, :resources - 1) AS r, generate_series(0, 9) AS k
"""

_LOAD = [
    f"""INSERT INTO events (seq, event_id, event_type, platform, cloud, resource_type,
                           resource_id, project_id, timestamp, source, payload, received_at)
    SELECT r * {EVENTS_EACH} + k + 1, event_id, event_type, 'openstack', '{CLOUD}', 'instance',
           rid, project, ts, 'collector',
           CAST('{{"state": "active", "size": {{"vcpus": ' || (1 + k % 4) || '}}}}' AS json),
           ts + interval '1 minute'
    FROM ({_ROWS}) e""",  # noqa: S608
    "INSERT INTO tally_history.event_ids SELECT event_id FROM events",
    "SELECT setval(pg_get_serial_sequence('events', 'seq'), (SELECT max(seq) FROM events))",
    f"""INSERT INTO resource_intervals (platform, cloud, resource_type, resource_id, start, "end",
                                       project_id, state, size, event_id)
    SELECT 'openstack', '{CLOUD}', 'instance', rid, ts,
           CASE WHEN k < 9 THEN ts + interval '2 days' END, project, 'active',
           CAST('{{"vcpus": ' || (1 + k % 4) || '}}' AS json), event_id
    FROM ({_ROWS}) e WHERE event_type <> 'compute.instance.delete.end'""",  # noqa: S608
    f"""INSERT INTO current_resources (platform, cloud, resource_type, resource_id, project_id,
                                      state, size, live, created_at, deleted_at, last_event_at,
                                      last_event_id, last_event_seq, first_event_at)
    SELECT 'openstack', '{CLOUD}', 'instance', rid, project, 'active',
           CAST(CASE WHEN live THEN '{{"vcpus": 2}}' ELSE '{{"vcpus": 1}}' END AS json), live,
           ts - interval '18 days', CASE WHEN NOT live THEN ts END, ts, event_id,
           r * {EVENTS_EACH} + 10, ts - interval '18 days'
    FROM ({_ROWS}) e WHERE k = 9""",  # noqa: S608
]


def _month(index: int) -> dt.datetime:
    return dt.datetime(FIRST.year + (FIRST.month - 1 + index) // 12,
                       (FIRST.month - 1 + index) % 12 + 1, 1)


def load(url: str, count: int, per_month: int, projects: int) -> dict[str, int]:
    months = count // per_month
    rpm = per_month // EVENTS_EACH
    engine = make_engine(url)
    try:
        partitions.ensure(engine, 1, _month(months - 1), since=FIRST)
        params = {"projects": projects, "first": FIRST, "rpm": rpm, "months": months,
                  "resources": months * rpm}
        with engine.begin() as conn:
            for statement in _LOAD:
                conn.execute(sa.text(statement), params)
        with engine.connect() as conn:
            settled = conn.execution_options(isolation_level="AUTOCOMMIT")
            settled.execute(sa.text("VACUUM (ANALYZE)"))
            settled.execute(sa.text("CHECKPOINT"))
    finally:
        engine.dispose()
    return {"months": months, "rpm": rpm}


def timed(action: Callable[[], Any], samples: int) -> float:
    costs = []
    for _ in range(samples):
        start = time.perf_counter()
        action()
        costs.append(time.perf_counter() - start)
    return statistics.median(costs)


def measure(url: str, shape: dict[str, int], projects: int, samples: int) -> dict[str, float]:
    months, rpm = shape["months"], shape["rpm"]
    rng = random.Random(7)
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    found: dict[str, float] = {}
    middle = (months // 2) * rpm
    late_ids = iter(range(middle, middle + rpm))

    def late_fold() -> None:
        r = next(late_ids)
        at = _month(months // 2) + (r % rpm) * dt.timedelta(days=8) / rpm + dt.timedelta(days=1)
        item = {"event_id": f"late-{r}", "event_type": "compute.instance.resize.confirm.end",
                "platform": "openstack", "cloud": CLOUD, "resource_type": "instance",
                "resource_id": f"vm-{r}", "project_id": f"p{r % projects}",
                "timestamp": at.isoformat() + "Z", "source": "collector",
                "payload": {"state": "active"}}
        (result,) = ingest(factory, [item], require_size_schema=False)
        if result.status != "stored":
            raise SystemExit(f"late event not stored: {result}")

    found["late event's fold"] = timed(late_fold, samples)

    def usage(month: int) -> Callable[[], Any]:
        def run() -> None:
            with factory() as session:
                usage_store.usage_page(
                    session, UsageFilter(cloud=CLOUD, project_id=f"p{rng.randrange(projects)}"),
                    "resource_type", _month(month), _month(month + 1), None, 1000)
        return run

    found["one project's month of usage (last full month)"] = timed(usage(months - 2), samples)
    found["one project's month of usage (first month; extra)"] = timed(usage(0), samples)

    def lifecycle() -> None:
        with factory() as session:
            key = ("openstack", CLOUD, "instance", f"vm-{rng.randrange(months * rpm)}")
            if len(resources.resource_lifecycle(session, key)) < 9:
                raise SystemExit(f"{key}: no lifecycle")

    found["one resource's lifecycle"] = timed(lifecycle, samples)

    starts = [f"vm-{rng.randrange(months * rpm)}" for _ in range(samples)]
    # The raw SELECT starts its index scan at the key, as the page's own does.
    raw = sa.text(
        "SELECT * FROM current_resources WHERE cloud = :cloud AND resource_type = 'instance' "
        "AND (platform, resource_id) > ('openstack', :after) "
        "ORDER BY platform, resource_id LIMIT 1000")
    page_costs, raw_costs = [], []
    for after in starts:  # alternately, so a neighbour's load falls on both alike
        with factory() as session:
            start = time.perf_counter()
            rows = resources.current_inventory(
                session, InventoryFilter(cloud=CLOUD, resource_type="instance"),
                ("openstack", CLOUD, "instance", after), 1000)
            page_costs.append(time.perf_counter() - start)
        with factory() as session:
            start = time.perf_counter()
            same = session.execute(raw, {"cloud": CLOUD, "after": after}).all()
            raw_costs.append(time.perf_counter() - start)
        if [row.resource_id for row in rows] != [row.resource_id for row in same]:
            raise SystemExit("the page and the raw SELECT differ")
    found["a page of 1,000 inventory rows"] = statistics.median(page_costs)
    found["  its raw keyset SELECT"] = statistics.median(raw_costs)
    engine.dispose()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", default=os.environ.get(
        "TALLY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--scales", default="1000000,10000000")
    parser.add_argument("--per-month", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    scales = [int(text) for text in args.scales.split(",")]
    if any(scale % args.per_month or scale // args.per_month < 3 for scale in scales):
        parser.error("every scale must be a multiple of --per-month, 3 months at least")
    if args.per_month % EVENTS_EACH:
        parser.error(f"--per-month must be a multiple of {EVENTS_EACH}")
    results: dict[int, dict[str, float]] = {}
    for scale in scales:
        with scratch_database(args.pg_url, "tally_bench_partitions") as url:
            migrations.upgrade(url)
            start = time.perf_counter()
            shape = load(url, scale, args.per_month, args.projects)
            print(f"{scale:,} events: {shape['months']} months loaded in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            results[scale] = measure(url, shape, args.projects, args.samples)
            for name, cost in results[scale].items():
                print(f"  {name}: {cost * 1000:.2f} ms", flush=True)
    small, large = results[scales[0]], results[scales[-1]]
    print(f"\nmedians of {args.samples}; {args.per_month:,} events a month, "
          f"{args.projects} projects; ratio {scales[-1]:,} / {scales[0]:,} events:")
    for name in small:
        if name.startswith("  "):
            continue
        print(f"  {name}: {small[name] * 1000:.2f} ms -> {large[name] * 1000:.2f} ms, "
              f"ratio {large[name] / small[name]:.2f}")
    for scale in scales:
        page = results[scale]["a page of 1,000 inventory rows"]
        raw = results[scale]["  its raw keyset SELECT"]
        print(f"  page / raw keyset SELECT at {scale:,} events: {page / raw:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
