"""A close's frozen lines, set-based on PostgreSQL (``reporting.billing.frozen`` says
what is frozen; ``frozen.freeze_in_python`` is the same in Python).

In the close's snapshot: one query finds the period's kinds and Python prices them
(``reporting.billing.kinds``); one statement then rates every piece
(``sql_rating.pieces``) and writes per project its frozen lines, subtotal and unrated
count (``closed_statements``), answering the totals; the caller renders each
project's text around its lines from them.  Nothing per line travels to Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import frozen, money, periods, sql_rating
from reporting.billing import kinds as kinds_of
from reporting.billing.pricelist import PriceVersion, minor_units_of
from reporting.db.billing_models import ClosedKind

# The pieces are grouped per project by a sort, in bounded memory whatever the
# month's size (the planner's estimate of their number is far too low to choose well);
# the frozen columns are compressed with lz4 where the server has it, a third of the
# close's time with the default pglz.
_SETTINGS = [*sql_rating.SETTINGS, ("enable_hashagg", "off"), ("work_mem", "'64MB'")]
_LZ4 = sa.text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
               "WHERE name = 'default_toast_compression'")

_FREEZE = """
INSERT INTO closed_statements (cloud, period, project_id, body, subtotal, adjustments_total,
                               total, unrated_lines, lines_at, line_resource_ids,
                               line_starts, line_lengths, line_event_ids, line_kinds)
SELECT :cloud, :period, l.project_id COLLATE "C", '',
       (COALESCE(SUM(l.bc), 0) + COALESCE(SUM(l.nc), 0)) * CAST(:minor AS numeric), 0, 0,
       COUNT(*) FILTER (WHERE l.unrated), 0, array_agg(l.rid), array_agg(l.so), array_agg(l.m),
       array_agg(l.eid), array_agg(l.kz)
FROM (
  SELECT ri.project_id, ri.resource_id AS rid, ri.event_id AS eid,
         CAST(round(date_part('epoch', p.s - CAST(:pstart AS timestamp)) * 1000000)
              AS bigint) AS so,
         d.m, 2 * k.kid + CASE WHEN z.n IS NULL THEN 0 ELSE 1 END AS kz,
         CASE WHEN z.n IS NOT NULL THEN 0 WHEN k.big THEN {big} END AS bc,
         CASE WHEN z.n IS NULL AND NOT k.big THEN {numeric} END AS nc,
         z.n IS NULL AND k.kid IS NOT NULL AND k.big IS NULL AS unrated
  {pieces}
  OFFSET 0  -- each piece's columns computed before the sort, which then moves only them
) AS l
GROUP BY l.project_id COLLATE "C"
RETURNING project_id, subtotal, unrated_lines,
          array_position(line_kinds, NULL) IS NOT NULL AS unknown, {tier_sums} AS tier_sums
"""
# Per project, its tier groups' sums from its frozen lines (their kinds and lengths):
# "group:Σ micros × factor:Σ micros × factor × modifier" of each group, space-separated
# (pieces of a zero-rated project, an odd kind code, are in none).
_TIER_SUMS = """(
SELECT string_agg(s.gid || ':' || s.q || ':' || s.w, ' ')
FROM (SELECT g.gid, SUM(u.m * g.qa) AS q, SUM(u.m * g.wa) AS w
      FROM unnest(line_kinds, line_lengths) AS u(kz, m)
      JOIN {groups} ON g.kid = u.kz / 2
      WHERE u.kz % 2 = 0
      GROUP BY g.gid) AS s)"""


def freeze(session: Session, cloud: str, period: str, versions: Sequence[PriceVersion]
           ) -> tuple[frozen.Totals, sql_rating.TierSums]:
    """Freeze every line of ``period`` (the session is the close's snapshot, so the
    kinds found are all the pieces'); answers each project's subtotal and unrated
    lines, and the sums of its tier groups (``sql_rating.TierSums``), read from the
    lines as they are frozen."""
    start, end = periods.parse(period)
    # the sums are in minor units: one of them is 0.01 (EUR), 1 (JPY) or 0.001 (KWD)
    params = {"cloud": cloud, "period": period, "pstart": start, "cap": end,
              "minor": money.text(money.minor(1, minor_units_of(versions)))}
    ranges = kinds_of.ranges(versions, start, end)
    with sql_rating.local_settings(session, sql_rating.SETTINGS):
        kinds = kinds_of.price(sql_rating.distinct_kinds(session, params, ranges), ranges)
    if kinds:
        session.execute(sa.insert(ClosedKind), frozen.kind_rows(cloud, period, kinds))
    tiered, described = sql_rating.tier_kinds(kinds, ranges, versions, end)
    statement = _FREEZE.format(
        big=sql_rating.BIG_CENTS, numeric=sql_rating.NUMERIC_CENTS,
        pieces=sql_rating.pieces(params, ranges, kinds, sql_rating.max_micros(start, end)),
        tier_sums=_TIER_SUMS.format(groups=sql_rating.tier_values(tiered, params))
        if tiered else "CAST(NULL AS text)")
    settings = list(_SETTINGS)
    if session.execute(_LZ4).scalar():
        settings.append(("default_toast_compression", "lz4"))
    with sql_rating.local_settings(session, settings):
        rows = session.execute(sa.text(statement), params).all()
    if any(row.unknown for row in rows):
        # The kinds were read in the same snapshot: a piece without one is a bug.
        raise RuntimeError(f"a line of {cloud} {period} has a kind the close did not price")
    sums: sql_rating.TierSums = {}
    for row in rows:
        for group in (row.tier_sums or "").split():
            gid, quantity, weighted = group.split(":")
            sql_rating.add_sums(sums, row.project_id, int(gid), Decimal(quantity),
                                Decimal(weighted), described)
    return ({row.project_id: (Decimal(row.subtotal), int(row.unrated_lines)) for row in rows},
            sums)
