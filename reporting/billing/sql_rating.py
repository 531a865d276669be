"""Rating as one set-based PostgreSQL query: per-project summaries of a period.

The same semantics as ``reporting.billing.rating`` (tests keep the two equal), in
``NUMERIC`` arithmetic, which is exact for every product of decimals: each interval
overlapping the period is clipped to the period and to *now* and cut at price version
boundaries (a join with the versions' ranges); its rate comes from joins with the
price list's rates as ``VALUES``; the exact amount is
``microseconds × quantity factor × rate × modifier / 3,600,000,000``, rounded
half-even to the cent with integer division (``div``) and its remainder, so the
rounding is exact too.  Unrated pieces count, zero-rated ones bill 0.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import money
from reporting.billing.pricelist import INSTANCE_RESOURCES, PriceVersion

_HOUR_MICROS = 3_600_000_000


def _values(name: str, columns: list[tuple[str, str]], rows: list[tuple[Any, ...]],
            params: dict[str, Any]) -> str:
    """``name(cols) AS (VALUES …)`` with bound parameters; one NULL row when empty."""
    if not rows:
        rows = [tuple(None for _ in columns)]
    rendered = []
    for index, row in enumerate(rows):
        cells = []
        for (column, kind), value in zip(columns, row, strict=True):
            key = f"{name}_{index}_{column}"
            params[key] = value
            cells.append(f"CAST(:{key} AS {kind})")
        rendered.append("(" + ", ".join(cells) + ")")
    names = ", ".join(column for column, _kind in columns)
    return f"{name}({names}) AS (VALUES {', '.join(rendered)})"


def _price_tables(versions: list[PriceVersion], params: dict[str, Any]) -> list[str]:
    ranges: list[tuple[Any, ...]] = [(0, None, versions[0].effective_from if versions else None)]
    flavors: list[tuple[Any, ...]] = []
    by_resources: list[tuple[Any, ...]] = []
    types: list[tuple[Any, ...]] = []
    type_mods: list[tuple[Any, ...]] = []
    state_mods: list[tuple[Any, ...]] = []
    for number, version in enumerate(versions, 1):
        following = versions[number].effective_from if number < len(versions) else None
        ranges.append((number, version.effective_from, following))
        for rtype, rates in version.rates.items():
            if rtype == "instance":
                flavors.extend((number, f, r) for f, r in rates.by_flavor.items())
                if rates.by_resources is not None:
                    by_resources.append((number, *(rates.by_resources.get(m)
                                                   for m in INSTANCE_RESOURCES)))
                continue
            types.append((number, rtype, rates.rate, rates.listener, rates.pool))
            type_mods.extend((number, t, m) for t, m in rates.type_modifiers.items())
        for rtype, states in version.state_modifiers.items():
            state_mods.extend((number, rtype, s, m) for s, m in states.items())
    return [
        _values("v", [("n", "integer"), ("vfrom", "timestamp"), ("vto", "timestamp")],
                ranges, params),
        _values("fr", [("n", "integer"), ("flavor", "text"), ("rate", "numeric")], flavors,
                params),
        _values("br", [("n", "integer"), ("vcpus", "numeric"), ("ram_gb", "numeric"),
                       ("disk_gb", "numeric")], by_resources, params),
        _values("tr", [("n", "integer"), ("rtype", "text"), ("rate", "numeric"),
                       ("listener", "numeric"), ("pool", "numeric")], types, params),
        _values("tm", [("n", "integer"), ("vtype", "text"), ("modifier", "numeric")],
                type_mods, params),
        _values("sm", [("n", "integer"), ("rtype", "text"), ("state", "text"),
                       ("modifier", "numeric")], state_mods, params),
    ]


def _zero_rated(versions: list[PriceVersion], params: dict[str, Any]) -> str:
    """``p.project_id`` is zero-rated by the piece's version (a bound array per version)."""
    cases = []
    for number, version in enumerate(versions, 1):
        if version.zero_rated_projects:
            params[f"zero_{number}"] = sorted(version.zero_rated_projects)
            cases.append(f"WHEN {number} THEN p.project_id = ANY(CAST(:zero_{number} AS text[]))")
    if not cases:
        return "false"
    return f"COALESCE(CASE p.n {' '.join(cases)} END, false)"


def _number(member: str) -> str:
    """A size member as NUMERIC when it is a JSON number, else NULL (``p.j`` is the
    size as jsonb, parsed once per distinct size)."""
    return (f"CASE WHEN jsonb_typeof(p.j -> '{member}') = 'number' "
            f"THEN CAST(p.j ->> '{member}' AS numeric) END")


_BY_RESOURCES = " + ".join(
    f"CASE WHEN br.{m} IS NULL THEN 0 ELSE br.{m} * {_number(m)} END" for m in INSTANCE_RESOURCES
)
# NULL when a named member is missing: the flavor is then unrated, as in Python.
_BY_RESOURCES_OK = " AND ".join(
    f"(br.{m} IS NULL OR {_number(m)} IS NOT NULL)" for m in INSTANCE_RESOURCES
)

# Only constants are interpolated into the text below; values are bound parameters.
# Each interval piece's price per microsecond depends only on (version, type, state,
# size): it is computed once per distinct combination ("units"), then every piece
# costs a multiplication and the exact half-even rounding.
_RATED = f"""
clipped AS (
  SELECT ri.project_id, ri.resource_type, COALESCE(ri.state, '') AS state,
         COALESCE(CAST(ri.size AS text), 'null') AS size_text, v.n,
         GREATEST(ri.start, CAST(:pstart AS timestamp), COALESCE(v.vfrom, '-infinity'))
           AS s,
         LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)), CAST(:cap AS timestamp),
               COALESCE(v.vto, 'infinity')) AS e
  FROM resource_intervals ri
  JOIN v ON COALESCE(v.vfrom, '-infinity') < LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)),
                                                   CAST(:cap AS timestamp))
        AND COALESCE(v.vto, 'infinity') > GREATEST(ri.start, CAST(:pstart AS timestamp))
  WHERE ri.cloud = :cloud AND ri.start < CAST(:cap AS timestamp)
    AND (ri."end" IS NULL OR ri."end" > CAST(:pstart AS timestamp)) {{project_filter}}
),
-- A piece lies within one month, so its length in float seconds is exact to far
-- below a microsecond and rounds to the exact count.
pieces AS (
  SELECT project_id, resource_type, state, size_text, n,
         CAST(round(date_part('epoch', e - s) * 1000000) AS bigint) AS micros
  FROM clipped WHERE e > s
),
-- The distinct (type, state, size) of the intervals, priced once per version.
kinds AS MATERIALIZED (
  SELECT k.n, k.resource_type, k.state, k.size_text, CAST(k.size_text AS jsonb) AS j
  FROM (SELECT DISTINCT resource_type, COALESCE(state, '') AS state,
                        COALESCE(CAST(size AS text), 'null') AS size_text
        FROM resource_intervals ri
        WHERE ri.cloud = :cloud AND ri.start < CAST(:cap AS timestamp)
          AND (ri."end" IS NULL OR ri."end" > CAST(:pstart AS timestamp)) {{project_filter}}
       ) d CROSS JOIN v AS k0
  CROSS JOIN LATERAL (SELECT k0.n, d.resource_type, d.state, d.size_text) AS k
),
units AS MATERIALIZED (
  SELECT p.n, p.resource_type, p.state, p.size_text,
         CASE
           WHEN p.resource_type = 'instance' THEN
             COALESCE(fr.rate, CASE WHEN br.n IS NOT NULL AND {_BY_RESOURCES_OK}
                                    THEN {_BY_RESOURCES} END)
           WHEN p.resource_type = 'loadbalancer' THEN
             tr.rate + COALESCE({_number('listeners')}, 0) * tr.listener
                     + COALESCE({_number('pools')}, 0) * tr.pool
           ELSE tr.rate
         END
         * CASE WHEN p.resource_type IN ('volume', 'image') THEN {_number('size_gb')} ELSE 1 END
         * COALESCE(tm.modifier, 1) * COALESCE(sm.modifier, 1) * 100 AS unit
  FROM kinds p
  LEFT JOIN fr ON fr.n = p.n AND p.resource_type = 'instance' AND fr.flavor = p.j ->> 'flavor'
  LEFT JOIN br ON br.n = p.n AND p.resource_type = 'instance'
  LEFT JOIN tr ON tr.n = p.n AND tr.rtype = p.resource_type
  LEFT JOIN tm ON tm.n = p.n AND p.resource_type = 'volume' AND tm.vtype = p.j ->> 'type'
  LEFT JOIN sm ON sm.n = p.n AND sm.rtype = p.resource_type AND sm.state = p.state
),
lines AS (
  SELECT p.project_id,
         CASE WHEN {{zero_rated}} THEN 0 ELSE p.micros * u.unit END AS scaled,
         NOT ({{zero_rated}}) AND u.unit IS NULL AS unrated
  FROM pieces p
  JOIN units u ON u.n = p.n AND u.resource_type = p.resource_type AND u.state = p.state
              AND u.size_text = p.size_text
),
quotients AS (
  SELECT project_id, unrated, scaled, div(scaled, {_HOUR_MICROS}) AS q FROM lines
),
cents AS (
  SELECT project_id, unrated, q, 2 * (scaled - q * {_HOUR_MICROS}) AS twice_rest
  FROM quotients
)
SELECT project_id,
       COALESCE(SUM(q + CASE WHEN twice_rest > {_HOUR_MICROS}
                               OR (twice_rest = {_HOUR_MICROS} AND mod(q, 2) = 1)
                             THEN 1 ELSE 0 END), 0) AS cents,
       COUNT(*) FILTER (WHERE unrated) AS unrated_lines
FROM cents
GROUP BY project_id
ORDER BY project_id
"""  # noqa: S608


def project_subtotals(
    session: Session, cloud: str, versions: list[PriceVersion], period_start: dt.datetime,
    period_end: dt.datetime, now: dt.datetime,
    after: str | None = None, limit: int | None = None,
) -> dict[str, tuple[Decimal, int]]:
    """``{project: (subtotal, unrated lines)}`` of the projects with a line in the
    period, in project order: those after ``after``, at most ``limit``."""
    params: dict[str, Any] = {"cloud": cloud, "pstart": period_start,
                              "cap": min(period_end, now)}
    project_filter = ""
    if after is not None:
        project_filter = "AND ri.project_id > :after"
        params["after"] = after
    query = ("WITH " + ",\n".join(_price_tables(versions, params)) + ",\n"
             + _RATED.replace("{project_filter}", project_filter)
             .replace("{zero_rated}", _zero_rated(versions, params)))
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    # The planner cannot estimate the CTEs' sizes; hash joins are right for any size.
    for setting in ("enable_nestloop = off", "enable_mergejoin = off", "enable_sort = off",
                    "work_mem = '64MB'"):
        session.execute(sa.text(f"SET LOCAL {setting}"))
    rows = session.execute(sa.text(query), params).all()
    # (A failed query aborts the transaction, and SET LOCAL goes with it.)
    for setting in ("enable_nestloop", "enable_mergejoin", "enable_sort", "work_mem"):
        session.execute(sa.text(f"RESET {setting}"))
    return {
        row.project_id: (money.cents(row.cents), int(row.unrated_lines))
        for row in rows
    }
