"""Benchmark: every project's statement summary of a month, closing the month, and
statements under a long closed history.

The shape measured: a month of 100,000 resources over 1,000 projects with 20 events
each (2,000,000 events, about 1.1 million statement lines in October 2026) on
PostgreSQL, in a fresh database:

1. load the month set-based, straight into the tables ingest writes (not through the
   API, which would take hours here): ``--resources`` resources over ``--projects``
   projects, ``--events`` events each.  One ``INSERT … SELECT`` over
   ``generate_series`` each writes ``events``, ``resource_intervals`` and
   ``current_resources``; every event carries the whole state and size and changes
   the state, so the intervals are exactly what the fold makes of those events (the
   bench checks a sample of resources by folding their stored histories with
   ``reporting.fold``);
2. the floor: one hand-written SQL query summing, per project, the interval
   overlaps with the month × the rate of the interval's type, flavor, volume type and
   state (no price versions, no per-line rounding, no unrated lines: the least any
   statement summary can cost), run as PostgreSQL plans it (in parallel);
3. summaries: ``reporting.billing.service.summaries`` for every project (one page of
   1,000), as ``GET /v1/statements?cloud&period`` computes it;
4. close: ``reporting.billing.closing.close`` of the month (every project's statement
   frozen; the close's rows are deleted between rounds).  The first round also checks
   a sample of frozen statements byte for byte against the pure rating's.

The machine may be shared, so each round measures the floor right before each of
the two workloads, and the bench prints the medians of ``--rounds`` rounds and the
median of the rounds' ratios (targets: summaries <= 2x the floor, close <= 3x).

5. history: before the month is loaded, five small clouds of ``--history`` instances
   get 2 to 13 months of events through the ingest code, one month at a time, and 1,
   2, 4, 8 and 12 of those months closed one by one (each after the next month's
   events arrived), with 10 late events about earlier closed months after each
   close.  At the end (the big month's two million receipts arrived after all those
   closes) it times each cloud's summaries and one statement of its first open month,
   and the pending adjustments alone (medians of 5): the adjustments cost the late
   facts, so they grow neither with the closed periods nor with the receipts since.

6. one project's statement with late facts pending elsewhere (``bench/late_elsewhere.py``,
   after the rounds): 2026-09 is closed, ``--late`` resources of other projects get a
   late event dated in it, and a project's October statement (one with usage, one
   without) is timed against the SQL floor of reading that project's intervals,
   alternately (medians of ``--rounds`` x 4; target <= 50 ms, whatever the cloud's
   pending late facts).

``--shape accounts-tiers`` (``bench/accounts_tiers.py``; the default ``plain`` is the
shape above) measures the same month priced with tiers, its projects in billing
accounts: instances priced per flavor with graduated tiers over the project's hours of
the month, volumes per volume type with volume tiers over its GB-hours; the 1,000
projects in 100 accounts by dated memberships, ten of them moving to the next account
on 2026-10-16.  Its floor (steps 2 to 4) sums the overlaps per project and tier group
and prices each group's sums with the tiers' function in the same query (hashed
groups, no JIT: ``accounts_tiers.FLOOR``); the close's sample check includes the
frozen tier lines; step 6 spares the measured account's projects (those of ``a000``)
of the late resources and also times that account's October statement, as
``GET /v1/accounts/a000/statement`` computes it, against the SQL floor of reading its
members' intervals within their memberships (medians of ``--rounds`` x 2).

Usage, from the checkout:

    python bench/statements.py [--resources 100000] [--projects 1000] [--events 20]
                               [--rounds 5] [--history 400] [--late 3000]
                               [--shape plain|accounts-tiers] [--keep]

Needs the PostgreSQL named by TALLY_TEST_PG_URL (loopback default); creates its own
database and drops it at the end (``--keep`` leaves it, and says its name).
"""

from __future__ import annotations

import argparse
import contextlib
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

from bench import accounts_tiers, closed_history, late_elsewhere  # noqa: E402
from bench.scratch_database import scratch_database  # noqa: E402
from reporting import fold  # noqa: E402
from reporting.billing import (  # noqa: E402
    closing,
    periods,
    rating,
    service,
    statements,
    tiers,
    versions,
)
from reporting.db import engine as db_engine  # noqa: E402
from reporting.db import migrations, writes  # noqa: E402

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
            _state, intervals = fold.fold(writes.of(session).histories(session, [key])[key])
            stored = session.execute(sa.text(
                'SELECT start, "end", project_id, state, event_id FROM resource_intervals '
                "WHERE resource_id = :id ORDER BY start"), {"id": f"r{r}"}).all()
            folded = [(i.start, i.end, i.project_id, i.state, i.event_id) for i in intervals]
            assert folded == [tuple(row) for row in stored], f"r{r} differs from its fold"
    print("  a sample of 50 resources: stored intervals == fold of stored events")


_CLOSE_TABLES = ("billing_periods", "closed_statements", "closed_kinds",
                 "closed_resource_amounts")


def _check_frozen(factory: Any, projects: int, count: int = 5) -> None:
    """A sample of the frozen statements == the statements the pure rating renders
    of the same intervals (no event arrived since the close)."""
    start, end = periods.parse(PERIOD)
    with factory() as session:
        timeline = versions.timeline(session, CLOUD)
        closed = statements.closed_periods(session, CLOUD)[PERIOD]
        for project in random.Random(2).sample(range(projects), count):
            project_id = f"p{project:04d}"
            lines = rating.rate_intervals(
                statements.intervals(session, CLOUD, start, end, project_id), timeline,
                start, end, NOW)
            expected = statements.text(statements.document(
                cloud=CLOUD, project_id=project_id, period=PERIOD,
                currency_code=statements.currency(timeline, end), closed=True,
                computed_at=closed.closed_at, lines=lines, adjustments=[],
                tier_lines=tiers.tier_lines(lines, timeline, closed.minor_units)))
            answered = service.statement_text(session, CLOUD, project_id, PERIOD, NOW)
            assert answered == expected, f"{project_id}: the frozen statement differs"
    print(f"  a sample of {count} frozen statements == the pure rating's, byte for byte")


def _round(engine: sa.Engine, factory: Any, check: bool, floor_sql: str) -> dict[str, float]:
    pstart, pend = dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1)
    timings: dict[str, float] = {}

    def floor() -> tuple[float, int]:
        with engine.begin() as conn:
            if floor_sql is accounts_tiers.FLOOR:
                for setting in accounts_tiers.FLOOR_SETTINGS:
                    conn.execute(sa.text(setting))
            seconds, rows = _timed(lambda: conn.execute(sa.text(floor_sql), {
                "cloud": CLOUD, "pstart": pstart, "pend": pend}).all())
        return seconds, len(rows)

    timings["floor_s"], projects = floor()
    with factory() as session:
        timings["summaries"], (items, more) = _timed(lambda: service.summaries(
            session, CLOUD, PERIOD, None, 1000, NOW))
    assert len(items) == projects and not more, (len(items), projects, more)
    timings["floor_c"], _ = floor()
    timings["close"], result = _timed(lambda: closing.close(factory, CLOUD, PERIOD, "bench", NOW))
    assert result.created and result.frozen == projects
    if check:
        _check_frozen(factory, projects)
    with engine.begin() as conn:
        for table in _CLOSE_TABLES:
            conn.execute(sa.text(f"DELETE FROM {table} WHERE period = :p"),  # noqa: S608
                         {"p": PERIOD})
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resources", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--history", type=int, default=400,
                        help="instances of the closed-history cloud (0: skip it)")
    parser.add_argument("--late", type=int, default=3_000,
                        help="late resources pending elsewhere for one project's statement "
                             "(0: skip it)")
    parser.add_argument("--shape", choices=("plain", "accounts-tiers"), default="plain",
                        help="plain: the price list without tiers, no accounts; "
                             "accounts-tiers: tiers on instances and volumes, the projects "
                             "in billing accounts (bench/accounts_tiers.py)")
    parser.add_argument("--keep", action="store_true", help="leave the database in place")
    args = parser.parse_args()
    scratch = contextlib.ExitStack()
    url = scratch.enter_context(scratch_database(PG_URL, "tally_bench_statements",
                                                 keep=args.keep))
    engine = db_engine.make_engine(url)
    try:
        migrations.upgrade(url)
        factory = db_engine.make_sessionmaker(engine)
        with factory() as session:
            tiered = args.shape == "accounts-tiers"
            versions.add(session, "default", accounts_tiers.prices(PRICES) if tiered
                         else PRICES, "bench", NOW)
            session.commit()
        floor_sql = accounts_tiers.FLOOR if tiered else _FLOOR
        if args.history:
            # first, so that the month loaded next is received after their closes
            print(f"history: {closed_history.describe(args.history)} ...", flush=True)
            seconds, _ = _timed(lambda: closed_history.build(factory, args.history))
            print(f"  ingested and closed in {seconds:.0f} s", flush=True)
        print(f"loading {args.resources} resources x {args.events} events over "
              f"{args.projects} projects ...", flush=True)
        _load(engine, args)
        _check_sample(factory, args)
        account = None
        if tiered:
            with factory() as session:
                added = accounts_tiers.add_accounts(session, CLOUD, args.projects, NOW)
                session.commit()
                # the account of p0005, which moves to the next one on 2026-10-16
                account = accounts_tiers.account_of(5, args.projects)
                spared = accounts_tiers.members(session, account)
            print(f"  {accounts_tiers.ACCOUNTS} accounts, {added} memberships; account "
                  f"{account} holds {len(spared)} projects in {PERIOD}", flush=True)
        rounds = []
        for round_number in range(args.rounds):
            rounds.append(_round(engine, factory, round_number == 0, floor_sql))
            r = rounds[-1]
            print(f"  round {round_number + 1}: floor {r['floor_s']:.2f} s, summaries "
                  f"{r['summaries']:.2f} s ({r['summaries'] / r['floor_s']:.2f}x); floor "
                  f"{r['floor_c']:.2f} s, close {r['close']:.2f} s "
                  f"({r['close'] / r['floor_c']:.2f}x)", flush=True)
        if rounds:
            floors = [r[k] for r in rounds for k in ("floor_s", "floor_c")]
            base = statistics.median(floors)
            what = ("overlaps summed per tier group, priced by the tiers"
                    if tiered else "overlaps x rates")
            print(f"floor (one SQL sum of {what}): {base:.2f} s (median of "
                  f"{len(floors)} runs in {args.rounds} rounds)")
            for label, key, floor_key, target in (
                    ("summaries of every project", "summaries", "floor_s", 2),
                    ("close of the month", "close", "floor_c", 3)):
                median = statistics.median(r[key] for r in rounds)
                ratio = statistics.median(r[key] / r[floor_key] for r in rounds)
                print(f"{label}: {median:.2f} s = {median / base:.2f} x floor; median of "
                      f"the rounds' ratios {ratio:.2f} (target <= {target})")
        if args.late:
            print(f"one project's statement, {args.late} late resources pending elsewhere:",
                  flush=True)
            # none of them in the measured project, nor (accounts) in the measured account
            late_elsewhere.prepare(engine, factory, CLOUD, spared if account else ["p0001"],
                                   args.late, NOW)
            late_elsewhere.measure(engine, factory, CLOUD, PERIOD, ["p0001", "p-none"], NOW,
                                   max(1, args.rounds) * 4)
            if account is not None:
                accounts_tiers.measure_account(engine, factory, CLOUD, PERIOD, account, NOW,
                                               max(1, args.rounds) * 2)
        if args.history:
            print(f"history, after {args.events * args.resources} later receipts of another "
                  "cloud:", flush=True)
            closed_history.measure(factory)
    finally:
        engine.dispose()
        scratch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
