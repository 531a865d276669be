"""The accounts-and-tiers shape of ``bench/statements.py`` (``--shape accounts-tiers``).

The same month of resources, priced by a version with tiers, its projects grouped in
billing accounts:

- the price version: every instance flavor of the plain shape with **graduated** tiers
  of its own (its plain rate up to 2,000 hours of the project's month, 90 % of it up to
  5,000, 75 % above; ``custom`` stays priced by its resources, untiered), shut-off
  instances still at half (so the modified quantity is not the quantity); volumes
  priced **per volume type** with **volume** tiers (``ssd`` and ``hdd`` each their own
  steps over the project's GB-hours); the other types as in the plain shape;
- ``ACCOUNTS`` accounts (``a000`` …), each holding ``projects / ACCOUNTS`` projects
  from 2026-09-01 by an explicit dated membership (project ``p`` in account
  ``p // (projects / ACCOUNTS)``), and one project in 97 moving to the next account on
  2026-10-16 by a second membership, so those accounts' October statements hold
  a section cut at the move.

The floor of the summaries (``FLOOR``): one hand-written SQL query doing the same work
at least cost: per project and tier group (an instance flavor with tiers, a volume
type) the sums of the quantity ``Q`` and of quantity x modifier ``W`` of the interval
overlaps with the month, then the tiers' price function inline (``P(Q)`` graduated:
each slice at its rate; volume: ``Q`` x the rate of the tier reached), the group owing
``P(Q) / Q x W``; the untiered types' overlaps x rates summed alongside; one sum per
project.  No price versions, no per-line rounding, no zero-rated or unrated lines, no
tier line rendered: the least any summary of these prices can cost.  It runs as
PostgreSQL plans it (in parallel) but for two settings that make it cheaper
(``FLOOR_SETTINGS``): hashed groups (PostgreSQL estimates two hundred times too many
(project, group) pairs and sorts the month on disk instead, about half again as long)
and no JIT compilation (longer than the query gains).

The floor of one account's statement (``ACCOUNT_FLOOR``): one SQL query reading every
column a statement line needs of the intervals of the account's members overlapping
October within the stretches their memberships give (the stretches by a window over
the memberships), as the floor of one project's statement reads that project's.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import time
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import account_statements, accounts

ACCOUNTS = 100
MOVED = dt.datetime(2026, 10, 16)
JOINED = dt.datetime(2026, 9, 1)

# (flavor, plain rate): graduated up to 2,000 h at the rate, 5,000 h at 90 %, then 75 %.
_FLAVOR_RATES = [("m1.small", "0.020"), ("m1.medium", "0.040"), ("m1.large", "0.080"),
                 ("m1.xlarge", "0.160")]
_STEPS = [("2000", Decimal("1")), ("5000", Decimal("0.9")), (None, Decimal("0.75"))]
# Volume types: volume tiers over the project's GB-hours.
VOLUME_TIERS = {
    "ssd": [("100000", "0.00015"), ("250000", "0.00013"), (None, "0.00011")],
    "hdd": [("100000", "0.00010"), (None, "0.00008")],
}


def flavor_tiers() -> dict[str, list[tuple[str | None, str]]]:
    return {flavor: [(up_to, str((Decimal(rate) * share).normalize())) for up_to, share
                     in _STEPS] for flavor, rate in _FLAVOR_RATES}


def _tiers(steps: list[tuple[str | None, str]]) -> list[dict[str, Any]]:
    return [{"up_to": up_to, "rate": rate} for up_to, rate in steps]


def prices(plain: dict[str, Any]) -> dict[str, Any]:
    """The plain shape's version with tiers on instances (per flavor) and volumes (per
    volume type)."""
    document = json.loads(json.dumps(plain))
    document["rates"]["instance"]["by_flavor"] = {
        flavor: {"mode": "graduated", "tiers": _tiers(steps)}
        for flavor, steps in flavor_tiers().items()}
    document["rates"]["volume"] = {"per": "gb_hour", "by_volume_type": {
        name: {"mode": "volume", "tiers": _tiers(steps)}
        for name, steps in VOLUME_TIERS.items()}}
    return document


def account_of(project: int, projects: int) -> str:
    return f"a{project * ACCOUNTS // projects:03d}"


def moves(project: int) -> bool:
    return project % 97 == 5


def add_accounts(session: Session, cloud: str, projects: int, now: dt.datetime) -> int:
    """The accounts and their memberships, through ``reporting.billing.accounts``
    (caller commits); answers the memberships added."""
    for number in range(ACCOUNTS):
        accounts.add(session, {"account_id": f"a{number:03d}"}, "bench", now)
    added = 0
    for project in range(projects):
        project_id, home = f"p{project:04d}", account_of(project, projects)
        stamp = JOINED.strftime("%Y-%m-%dT%H:%M:%SZ")
        accounts.add_membership(session, home, {
            "cloud": cloud, "project_id": project_id, "effective_from": stamp}, "bench", now)
        added += 1
        if moves(project):
            later = f"a{(int(home[1:]) + 1) % ACCOUNTS:03d}"
            accounts.add_membership(session, later, {
                "cloud": cloud, "project_id": project_id,
                "effective_from": MOVED.strftime("%Y-%m-%dT%H:%M:%SZ")}, "bench", now)
            added += 1
    return added


def members(session: Session, name: str) -> list[str]:
    """Every project the account holds some time of October."""
    start, end = dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1)
    return sorted({s.project_id for s in accounts.stretches(session, name, start, end)})


def _graduated(q: str, steps: list[tuple[str | None, str]]) -> str:
    parts, below = [], "0"
    for up_to, rate in steps:
        top = q if up_to is None else f"LEAST({q}, {up_to})"
        parts.append(f"{rate} * GREATEST({top} - {below}, 0)")
        if up_to is not None:
            below = up_to
    return " + ".join(parts)


def _volume(q: str, steps: list[tuple[str | None, str]]) -> str:
    cases = " ".join(f"WHEN {q} <= {up_to} THEN {rate}" for up_to, rate in steps
                     if up_to is not None)
    return f"{q} * CASE {cases} ELSE {steps[-1][1]} END"


def _floor() -> str:
    tiered = flavor_tiers()
    priced = " ".join(
        f"WHEN 'instance:{flavor}' THEN ({_graduated('g.q', steps)}) / NULLIF(g.q, 0) * g.w"
        for flavor, steps in tiered.items()) + " " + " ".join(
        f"WHEN 'volume:{name}' THEN ({_volume('g.q', steps)}) / NULLIF(g.q, 0) * g.w"
        for name, steps in VOLUME_TIERS.items())
    flavors = ", ".join(f"'{flavor}'" for flavor in tiered)
    return f"""
SELECT g.project_id, SUM(CASE g.rtype || ':' || g.name {priced} ELSE g.plain END) AS amount
FROM (
  SELECT o.project_id, o.rtype, o.name,
         SUM(o.s * CASE o.rtype WHEN 'volume' THEN CAST(o.size ->> 'size_gb' AS numeric)
                                ELSE 1 END) / 3600 AS q,
         SUM(o.s * CASE o.rtype WHEN 'volume' THEN CAST(o.size ->> 'size_gb' AS numeric)
                                WHEN 'instance' THEN CASE o.state WHEN 'shutoff' THEN 0.5
                                                                  ELSE 1 END
                                ELSE 1 END) / 3600 AS w,
         SUM(o.s * CASE o.rtype
               WHEN 'instance' THEN CASE WHEN o.name IN ({flavors}) THEN 0 ELSE
                 (CAST(o.size ->> 'vcpus' AS numeric) * 0.010
                  + CAST(o.size ->> 'ram_gb' AS numeric) * 0.005)
                 * CASE o.state WHEN 'shutoff' THEN 0.5 ELSE 1 END END
               WHEN 'volume' THEN 0
               WHEN 'image' THEN CAST(o.size ->> 'size_gb' AS numeric) * 0.00005
               WHEN 'floating_ip' THEN 0.005
               ELSE 0.030 + CAST(o.size ->> 'listeners' AS numeric) * 0.005
                    + CAST(o.size ->> 'pools' AS numeric) * 0.005
             END) / 3600 AS plain
  FROM (SELECT ri.project_id, ri.resource_type AS rtype, ri.state, ri.size,
               CASE ri.resource_type WHEN 'instance' THEN ri.size ->> 'flavor'
                                     WHEN 'volume' THEN ri.size ->> 'type' ELSE '' END AS name,
               EXTRACT(EPOCH FROM LEAST(COALESCE(ri."end", :pend), :pend)
                                  - GREATEST(ri.start, :pstart)) AS s
        FROM resource_intervals ri
        WHERE ri.cloud = :cloud AND ri.start < :pend
          AND (ri."end" IS NULL OR ri."end" > :pstart)) AS o
  GROUP BY 1, 2, 3
) AS g
GROUP BY g.project_id
"""  # noqa: S608 - constants only


# The floor's plan: hashed groups (PostgreSQL estimates far too many of them and
# sorts the month instead, on disk), without JIT compilation (longer than the query).
FLOOR_SETTINGS = ("SET LOCAL jit = off", "SET LOCAL enable_sort = off")

FLOOR = _floor()

ACCOUNT_FLOOR = """
WITH m AS (
  SELECT project_id, account_id, effective_from AS f,
         LEAD(effective_from) OVER (PARTITION BY cloud, project_id
                                    ORDER BY effective_from) AS t
  FROM account_memberships
  WHERE cloud = :cloud AND project_id IN (
    SELECT project_id FROM account_memberships WHERE account_id = :account AND cloud = :cloud)
)
SELECT ri.resource_type, ri.resource_id, GREATEST(ri.start, m.f, :pstart) AS s,
       LEAST(COALESCE(ri."end", :pend), COALESCE(m.t, :pend), :pend) AS e, ri.project_id,
       ri.state, ri.size, ri.event_id
FROM m CROSS JOIN LATERAL (  -- each member's intervals by its index, as a statement's
  SELECT * FROM resource_intervals ri
  WHERE ri.cloud = :cloud AND ri.project_id = m.project_id
    AND ri.start < LEAST(COALESCE(m.t, :pend), :pend)
    AND (ri."end" IS NULL OR ri."end" > GREATEST(m.f, :pstart))
) AS ri
WHERE m.account_id = :account AND m.f < :pend AND (m.t IS NULL OR m.t > :pstart)
"""


def _timed(action: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def measure_account(engine: sa.Engine, factory: Any, cloud: str, period: str, name: str,
                    now: dt.datetime, rounds: int) -> dict[str, float]:
    """One account's statement of ``period`` (``account_statements.document`` and its
    JSON text, as ``GET /v1/accounts/{id}/statement`` answers it) against
    ``ACCOUNT_FLOOR``, alternately; prints and answers the medians."""
    pstart, pend = dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1)
    floors, costs = [], []
    for _ in range(rounds):
        with engine.connect() as conn:
            seconds, rows = _timed(lambda: conn.execute(sa.text(ACCOUNT_FLOOR), {
                "cloud": cloud, "account": name, "pstart": pstart, "pend": pend}).all())
        floors.append(seconds)
        with factory() as session:
            seconds, text = _timed(lambda s=session: json.dumps(
                account_statements.document(s, name, period, now), separators=(",", ":"),
                ensure_ascii=False))
        costs.append(seconds)
    document = json.loads(text)
    sections = document["projects"]
    floor, cost = statistics.median(floors), statistics.median(costs)
    ratio = statistics.median(c / f for c, f in zip(costs, floors, strict=True))
    print(f"  account {name} ({len(sections)} sections, "
          f"{sum(len(s['lines']) for s in sections)} lines, "
          f"{sum(len(s.get('tiers', [])) for s in sections)} tier lines; floor reads "
          f"{len(rows)} intervals): floor {floor * 1000:.1f} ms, statement "
          f"{cost * 1000:.1f} ms = {cost / floor:.1f} x floor; median of the rounds' "
          f"ratios {ratio:.1f}", flush=True)
    return {"floor": floor, "statement": cost, "ratio": ratio}
