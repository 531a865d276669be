"""One project's statement while late facts of other projects are pending.

The shape (``bench/statements.py`` after its rounds): the month before the loaded one
(2026-09, where about 15 % of the resources start) is closed, then ``late`` resources
of other projects get a late event each, dated in that closed month and received after
its close: a change to a third state (neither its own nor the next event's, which
the fold would merge) an hour into their first September interval.  The interval is split there, as the fold splits it (the bench folds a sample of those
resources' stored histories and compares).  Their adjustments are pending on October,
the open month.

Measured, alternately ``rounds`` times: the floor (one SQL query reading the project's
intervals overlapping October, every column a statement line needs), and
``reporting.billing.service.statement_text`` of that project for October, as
``GET /v1/statements?cloud&period&project_id`` computes it, for a project with usage
and none of the late resources and for a project without usage.  The reference: the
cloud's pending adjustments (``adjustments.pending`` without a project), what one
project's statement computed before it read only its own facts.
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import time
from typing import Any

import sqlalchemy as sa

from reporting import fold
from reporting.billing import adjustments, closing, service, statements, versions
from reporting.db import writes

CLOSED = "2026-09"

_PICK = """
CREATE TEMPORARY TABLE late_pick AS
SELECT * FROM (
  SELECT DISTINCT ON (ri.resource_id) ri.platform, ri.cloud, ri.resource_type,
         ri.resource_id, ri.start, ri."end", ri.project_id, ri.state, ri.size, ri.event_id,
         ri.start + interval '1 hour' AS at,
         CASE ri.resource_type WHEN 'instance' THEN 'paused' WHEN 'volume' THEN 'reserved'
                               ELSE 'PENDING_UPDATE' END AS flipped
  FROM resource_intervals ri
  WHERE ri.cloud = :cloud AND ri.start < TIMESTAMP '2026-09-30 23:00'
    AND ri.project_id <> ALL(:spared)
  ORDER BY ri.resource_id, ri.start
) first_september ORDER BY resource_id LIMIT :late
"""

_WRITE = [
    """
    INSERT INTO events (event_id, event_type, platform, cloud, resource_type, resource_id,
                        project_id, timestamp, source, payload, received_at)
    SELECT 'late-' || resource_id, 'bench.update', platform, cloud, resource_type,
           resource_id, project_id, at, 'collector',
           CAST('{"state": "' || flipped || '", "size": ' || CAST(size AS text) || '}' AS json),
           TIMESTAMP '2026-12-02'
    FROM late_pick ORDER BY resource_id
    """,
    """
    UPDATE resource_intervals ri SET "end" = lp.at
    FROM late_pick lp WHERE ri.event_id = lp.event_id AND ri.resource_id = lp.resource_id
    """,
    """
    INSERT INTO resource_intervals (platform, cloud, resource_type, resource_id, start, "end",
                                    project_id, state, size, event_id)
    SELECT platform, cloud, resource_type, resource_id, at, "end", project_id, flipped, size,
           'late-' || resource_id
    FROM late_pick
    """,
]

_FLOOR = """
SELECT resource_type, resource_id, start, "end", project_id, state, size, event_id
FROM resource_intervals
WHERE cloud = :cloud AND project_id = :project AND start < :pend
  AND ("end" IS NULL OR "end" > :pstart)
"""


def _timed(action: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def prepare(engine: sa.Engine, factory: Any, cloud: str, spared: list[str], late: int,
            now: dt.datetime) -> list[tuple[str, str]]:
    """Close 2026-09 and make ``late`` resources outside the projects ``spared`` late
    in it."""
    seconds, _ = _timed(lambda: closing.close(
        factory, cloud, CLOSED, "bench", now, closing.Acceptance(partial_history=True)))
    print(f"  {CLOSED} closed in {seconds:.1f} s", flush=True)
    with engine.begin() as conn:
        conn.execute(sa.text(_PICK), {"cloud": cloud, "spared": spared, "late": late})
        for statement in _WRITE:
            conn.execute(sa.text(statement))
        picked = [(r.resource_type, r.resource_id) for r in conn.execute(sa.text(
            "SELECT resource_type, resource_id FROM late_pick ORDER BY resource_id"))]
        conn.execute(sa.text("DROP TABLE late_pick"))
        conn.execute(sa.text("ANALYZE events"))
        conn.execute(sa.text("ANALYZE resource_intervals"))
    _check_fold(factory, cloud, picked)
    outside = spared[0] if len(spared) == 1 else f"{len(spared)} projects ({', '.join(spared)})"
    print(f"  {len(picked)} resources outside {outside} got a late event dated in {CLOSED}",
          flush=True)
    return picked


def _check_fold(factory: Any, cloud: str, picked: list[tuple[str, str]]) -> None:
    with factory() as session:
        for rtype, rid in random.Random(3).sample(picked, min(20, len(picked))):
            key = ("openstack", cloud, rtype, rid)
            _state, folded = fold.fold(writes.of(session).histories(session, [key])[key])
            stored = session.execute(sa.text(
                'SELECT start, "end", project_id, state, event_id FROM resource_intervals '
                "WHERE resource_id = :id ORDER BY start"), {"id": rid}).all()
            assert [(i.start, i.end, i.project_id, i.state, i.event_id) for i in folded] == [
                tuple(row) for row in stored], f"{rid} differs from its fold"


def measure(engine: sa.Engine, factory: Any, cloud: str, period: str, projects: list[str],
            now: dt.datetime, rounds: int) -> None:
    """Print each project's statement time, its floor and their ratio (medians)."""
    pstart, pend = statements.period_bounds(period)
    with factory() as session:
        closed = statements.closed_periods(session, cloud)
        timeline = versions.timeline(session, cloud)
        reference = [_timed(lambda: adjustments.pending(session, cloud, period, closed,
                                                        timeline, now))
                     for _ in range(3)]
        everyone = reference[-1][1]
    print(f"  the cloud's pending adjustments: {len(everyone)} adjustments of "
          f"{len({(a.resource_type, a.resource_id) for a in everyone})} resources in "
          f"{statistics.median(s for s, _ in reference) * 1000:.0f} ms (median of 3): what "
          "one project's statement computed before reading only its own facts", flush=True)
    for project in projects:
        floors, costs = [], []
        for _ in range(rounds):
            with engine.connect() as conn:
                seconds, rows = _timed(lambda p=project: conn.execute(sa.text(_FLOOR), {
                    "cloud": cloud, "project": p, "pstart": pstart, "pend": pend}).all())
            floors.append(seconds)
            with factory() as session:
                seconds, answered = _timed(lambda p=project, s=session: service.statement_text(
                    s, cloud, p, period, now))
            costs.append(seconds)
        floor, cost = statistics.median(floors), statistics.median(costs)
        ratio = statistics.median(c / f for c, f in zip(costs, floors, strict=True))
        assert f'"project_id":"{project}"' in answered
        print(f"  {project} ({len(rows)} intervals): floor {floor * 1000:.1f} ms, statement "
              f"{cost * 1000:.1f} ms = {cost / floor:.1f} x floor; median of the rounds' "
              f"ratios {ratio:.1f} (target <= 50 ms)", flush=True)
