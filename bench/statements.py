"""Benchmark: every project's statement summary of a month, and closing the month.

One run on a fresh PostgreSQL database:

1. load a month of a large cloud set-based, straight into the tables ingest writes
   (not through the API, which would take hours here): ``--resources`` resources
   (default 100,000) over ``--projects`` projects (1,000), ``--events`` events each
   (20: 2,000,000 events).  One ``INSERT … SELECT`` over ``generate_series`` each
   writes ``events``, ``resource_intervals`` and ``current_resources``; every event
   carries the whole state and size and changes the state, so the intervals are
   exactly what the fold makes of those events (the bench checks a sample of
   resources by folding their stored histories with ``reporting.fold``);
2. the floor: one hand-written SQL query summing, per project, the interval
   overlaps with the month × the rate of the interval's type, flavor, volume type and
   state (no price versions, no per-line rounding, no unrated lines: the least any
   statement summary can cost);
3. summaries: ``reporting.billing.service.summaries`` for every project (one page of
   1,000), as ``GET /v1/statements?cloud&period`` computes it;
4. close: ``reporting.billing.closing.close`` of the month (every project's statement
   frozen with its lines; the close's rows are deleted between rounds).

It prints the median of ``--rounds`` timings of each and the ratios to the floor
(targets: summaries <= 2x, close <= 3x).  Usage, from the checkout:

    python bench/statements.py [--resources 100000] [--projects 1000] [--events 20]
                               [--rounds 3]

Needs the PostgreSQL named by TALLY_TEST_PG_URL (loopback default); creates and
drops its own database.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporting import fold, projection  # noqa: E402
from reporting.billing import closing, service, versions  # noqa: E402
from reporting.db import engine as db_engine  # noqa: E402
from reporting.db import migrations  # noqa: E402

PG_URL = os.environ.get("TALLY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
CLOUD, PERIOD = "bench", "2026-10"
NOW = dt.datetime(2026, 12, 15)
FLAVORS = [("m1.small", 1, 2, 20, "0.020"), ("m1.medium", 2, 4, 40, "0.040"),
           ("m1.large", 4, 8, 80, "0.080"), ("m1.xlarge", 8, 16, 160, "0.160")]
PRICES: dict[str, Any] = {
    "effective_from": "2026-01-01T00:00:00Z", "currency": "EUR",
    "zero_rated_projects": [f"p{n:04d}" for n in range(0, 1000, 100)],
    "rates": {
        "instance": {"per": "hour", "by_flavor": {f[0]: f[4] for f in FLAVORS},
                     "by_resources": {"vcpus": "0.010", "ram_gb": "0.005"}},
        "volume": {"per": "gb_hour", "rate": "0.00010", "type_modifiers": {"ssd": "1.5"}},
        "floating_ip": {"per": "hour", "rate": "0.005"},
        "image": {"per": "gb_hour", "rate": "0.00005"},
        "loadbalancer": {"per": "hour", "rate": "0.030", "listener": "0.005", "pool": "0.005"},
    },
    "state_modifiers": {"instance": {"shutoff": "0.5"}},
}

# One row per (resource r, event k): its type, instant, state and size.  Resources
# start between 2026-09-25 and 2026-11-04; events come every 36 hours; a third of
# the resources are deleted by their last event, the others stay live.
_EVENT_ROWS = """
WITH base AS (
  SELECT r, k,
         CASE WHEN r % 20 < 12 THEN 'instance' WHEN r % 20 < 16 THEN 'volume'
              WHEN r % 20 < 18 THEN 'floating_ip' WHEN r % 20 < 19 THEN 'image'
              ELSE 'loadbalancer' END AS rtype,
         TIMESTAMP '2026-09-25' + make_interval(secs => (r * 7919) % (40 * 86400))
           + make_interval(hours => 36 * k) AS ts,
         'p' || lpad(((r * 31) % :projects)::text, 4, '0') AS project,
         k % 2 = 0 AS even
  FROM generate_series(0, :resources - 1) AS r, generate_series(0, :events - 1) AS k
)
SELECT r, k, rtype, ts, project,
       CASE WHEN k = :events - 1 AND r % 3 = 0 THEN 'bench.delete'
            WHEN k = 0 THEN 'bench.create' ELSE 'bench.update' END AS event_type,
       CASE rtype WHEN 'instance' THEN CASE WHEN even THEN 'active' ELSE 'shutoff' END
                  WHEN 'volume' THEN CASE WHEN even THEN 'available' ELSE 'in-use' END
                  ELSE CASE WHEN even THEN 'ACTIVE' ELSE 'DOWN' END END AS state,
       CASE rtype
         WHEN 'instance' THEN (ARRAY[
           '{"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}',
           '{"vcpus": 2, "ram_gb": 4, "disk_gb": 40, "flavor": "m1.medium"}',
           '{"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}',
           '{"vcpus": 8, "ram_gb": 16, "disk_gb": 160, "flavor": "m1.xlarge"}',
           '{"vcpus": 3, "ram_gb": 6, "disk_gb": 30, "flavor": "custom"}'])[1 + (r + k / 4) % 5]
         WHEN 'volume' THEN '{"size_gb": ' || (10 * (1 + (r + k) % 10)) || ', "type": "'
           || CASE WHEN r % 2 = 0 THEN 'ssd' ELSE 'hdd' END || '"}'
         WHEN 'floating_ip' THEN '{"ip_version": 4}'
         WHEN 'image' THEN '{"size_gb": ' || (1 + r % 7) || '.5}'
         ELSE '{"listeners": ' || (1 + k % 3) || ', "pools": ' || (1 + r % 2) || '}'
       END AS size
FROM base
"""

_LOAD = [
    # events, in (resource, event) receipt order
    """
    INSERT INTO events (event_id, event_type, platform, cloud, resource_type, resource_id,
                        project_id, timestamp, source, payload, received_at)
    SELECT 'b-' || r || '-' || k, event_type, 'openstack', :cloud, rtype, 'r' || r, project,
           ts, 'collector',
           CAST(CASE WHEN event_type = 'bench.delete' THEN '{}'
                ELSE '{"state": "' || state || '", "size": ' || size || '}' END AS json),
           TIMESTAMP '2026-12-01'
    FROM (""" + _EVENT_ROWS + """) e ORDER BY r, k
    """,  # noqa: S608
    # the lifecycle: one interval per event but the delete, to the next event
    """
    INSERT INTO resource_intervals (platform, cloud, resource_type, resource_id, start, "end",
                                    project_id, state, size, event_id)
    SELECT 'openstack', :cloud, rtype, 'r' || r, ts,
           CASE WHEN k < :events - 1 THEN ts + interval '36 hours' END,
           project, state, CAST(size AS json), 'b-' || r || '-' || k
    FROM (""" + _EVENT_ROWS + """) e
    WHERE event_type <> 'bench.delete'
    """,  # noqa: S608
    # the current row: the last event's state
    """
    INSERT INTO current_resources (platform, cloud, resource_type, resource_id, project_id,
                                   state, size, live, created_at, deleted_at, last_event_at,
                                   last_event_id, last_event_seq)
    SELECT 'openstack', :cloud, e.rtype, 'r' || e.r, e.project,
           CASE WHEN e.event_type = 'bench.delete' THEN p.state ELSE e.state END,
           CAST(CASE WHEN e.event_type = 'bench.delete' THEN p.size ELSE e.size END AS json),
           e.event_type <> 'bench.delete',
           e.ts - make_interval(hours => 36 * (:events - 1)),
           CASE WHEN e.event_type = 'bench.delete' THEN e.ts END, e.ts,
           'b-' || e.r || '-' || e.k, ev.seq
    FROM (""" + _EVENT_ROWS + """) e
    JOIN (""" + _EVENT_ROWS + """) p ON p.r = e.r AND p.k = e.k - 1
    JOIN events ev ON ev.event_id = 'b-' || e.r || '-' || e.k
    WHERE e.k = :events - 1
    """,  # noqa: S608
]

# The floor: overlaps x rates, summed per project, in one statement.
_FLOOR = """
SELECT ri.project_id,
       SUM(EXTRACT(EPOCH FROM LEAST(COALESCE(ri."end", :pend), :pend) - GREATEST(ri.start, :pstart))
           / 3600 *
           CASE ri.resource_type
             WHEN 'instance' THEN
               CASE ri.size ->> 'flavor' WHEN 'm1.small' THEN 0.020 WHEN 'm1.medium' THEN 0.040
                    WHEN 'm1.large' THEN 0.080 WHEN 'm1.xlarge' THEN 0.160
                    ELSE CAST(ri.size ->> 'vcpus' AS numeric) * 0.010
                         + CAST(ri.size ->> 'ram_gb' AS numeric) * 0.005 END
               * CASE ri.state WHEN 'shutoff' THEN 0.5 ELSE 1 END
             WHEN 'volume' THEN CAST(ri.size ->> 'size_gb' AS numeric) * 0.00010
               * CASE ri.size ->> 'type' WHEN 'ssd' THEN 1.5 ELSE 1 END
             WHEN 'image' THEN CAST(ri.size ->> 'size_gb' AS numeric) * 0.00005
             WHEN 'floating_ip' THEN 0.005
             ELSE 0.030 + CAST(ri.size ->> 'listeners' AS numeric) * 0.005
                        + CAST(ri.size ->> 'pools' AS numeric) * 0.005
           END) AS amount
FROM resource_intervals ri
WHERE ri.cloud = :cloud AND ri.start < :pend AND (ri."end" IS NULL OR ri."end" > :pstart)
GROUP BY ri.project_id
"""


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _load(engine: sa.Engine, args: argparse.Namespace) -> None:
    params = {"cloud": CLOUD, "resources": args.resources, "projects": args.projects,
              "events": args.events}
    with engine.begin() as conn:
        for statement in _LOAD:
            seconds, _ = _timed(lambda s=statement: conn.execute(sa.text(s), params))
            print(f"  loaded in {seconds:.1f} s", flush=True)
    with engine.begin() as conn:
        conn.execute(sa.text("ANALYZE"))
        counts = conn.execute(sa.text(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM resource_intervals), "
            "(SELECT count(*) FROM current_resources)")).one()
    print(f"  {counts[0]} events, {counts[1]} intervals, {counts[2]} resources")


def _check_sample(factory: Any, args: argparse.Namespace) -> None:
    """The loaded intervals are the fold of the loaded events (a sample of resources)."""
    with factory() as session:
        for r in random.Random(1).sample(range(args.resources), 50):
            rtype = session.execute(sa.text(
                "SELECT resource_type FROM current_resources WHERE resource_id = :id"),
                {"id": f"r{r}"}).scalar_one()
            key = ("openstack", CLOUD, rtype, f"r{r}")
            _state, intervals = fold.fold(projection.history(session, key))
            stored = session.execute(sa.text(
                'SELECT start, "end", project_id, state, event_id FROM resource_intervals '
                "WHERE resource_id = :id ORDER BY start"), {"id": f"r{r}"}).all()
            folded = [(i.start, i.end, i.project_id, i.state, i.event_id) for i in intervals]
            assert folded == [tuple(row) for row in stored], f"r{r} differs from its fold"
    print("  a sample of 50 resources: stored intervals == fold of stored events")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resources", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    name = f"tally_bench_statements_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    engine = db_engine.make_engine(url)
    try:
        migrations.upgrade(url)
        factory = db_engine.make_sessionmaker(engine)
        print(f"loading {args.resources} resources x {args.events} events over "
              f"{args.projects} projects ...", flush=True)
        _load(engine, args)
        _check_sample(factory, args)
        with factory() as session:
            versions.add(session, "default", PRICES, "bench", NOW)
            session.commit()
        floor, summaries, close = [], [], []
        pstart, pend = dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1)
        for round_number in range(args.rounds):
            with engine.connect() as conn:
                seconds, rows = _timed(lambda c=conn: c.execute(sa.text(_FLOOR), {
                    "cloud": CLOUD, "pstart": pstart, "pend": pend}).all())
            floor.append(seconds)
            with factory() as session:
                seconds, (items, more) = _timed(lambda s=session: service.summaries(
                    s, CLOUD, PERIOD, None, 1000, NOW))
            summaries.append(seconds)
            assert len(items) == len(rows) and not more, (len(items), len(rows), more)
            seconds, result = _timed(lambda: closing.close(factory, CLOUD, PERIOD, "bench", NOW))
            assert result.created
            close.append(seconds)
            with engine.begin() as conn:
                for table in ("billing_periods", "closed_statements", "closed_resource_amounts"):
                    conn.execute(sa.text(f"DELETE FROM {table} WHERE period = :p"),  # noqa: S608
                                 {"p": PERIOD})
            print(f"  round {round_number + 1}: floor {floor[-1]:.2f} s, summaries "
                  f"{summaries[-1]:.2f} s, close {close[-1]:.2f} s", flush=True)
        base = statistics.median(floor)
        print(f"floor (one SQL sum of overlaps x rates): {base:.2f} s (median of {args.rounds})")
        print(f"summaries of every project: {statistics.median(summaries):.2f} s = "
              f"{statistics.median(summaries) / base:.2f} x floor (target <= 2)")
        print(f"close of the month: {statistics.median(close):.2f} s = "
              f"{statistics.median(close) / base:.2f} x floor (target <= 3)")
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
