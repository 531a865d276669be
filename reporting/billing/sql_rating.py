"""Rating as set-based PostgreSQL: every line of a period rated in the database.

The same semantics as ``reporting.billing.rating`` (tests keep the two equal): each
interval overlapping the period is clipped to the period and to *now* and cut at
price version boundaries (a join with the versions' ranges, bound as ``VALUES``);
each piece joins its kind (``reporting.billing.kinds``: priced once in Python by the
pure rating's own code) and costs a multiplication and an exact half-even rounding
to the currency's minor unit.  Zero-rated pieces bill 0, unrated ones count.

The kinds are found by a first query, so a kind written between the two statements
(a concurrent ingest, outside a snapshot) finds no match: the rating counts such
pieces and prices the new kinds again.

``project_subtotals`` is the per-project summaries' query; ``reporting.billing.
sql_close`` freezes a closed period with the same pieces.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import kinds as kinds_of
from reporting.billing import money
from reporting.billing.kinds import Kind, VersionRange
from reporting.billing.pricelist import PriceVersion, minor_units_of

_ATTEMPTS = 5  # kinds re-priced at most this often when ingest adds some meanwhile

# The intervals of the cloud overlapping [pstart, cap).
_OVERLAP = ('ri.cloud = :cloud AND ri.start < CAST(:cap AS timestamp) '
            'AND (ri."end" IS NULL OR ri."end" > CAST(:pstart AS timestamp))')

# The period's kinds; a project with terms in a version range (``tp``) has its own.
_DISTINCT_KINDS = f"""
SELECT d.rtype, d.state_null, d.state, d.size_text, CAST(d.size_text AS json) AS size, d.cls
FROM (SELECT ri.resource_type AS rtype, ri.state IS NULL AS state_null,
             COALESCE(ri.state, '') AS state,
             COALESCE(CAST(ri.size AS text), 'null') AS size_text, {{cls}} AS cls
      FROM resource_intervals ri WHERE {_OVERLAP}
      GROUP BY 1, 2, 3, 4, 5) AS d
"""  # noqa: S608 - constants only
# Without project terms (the common case) every kind is every project's.
_NO_TERMS = "CAST('' AS text)"


def values(name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]],
           params: dict[str, Any]) -> str:
    """``(VALUES …) AS name(cols)`` with bound parameters; one NULL row when empty.
    Inline (not a CTE), so a parallel plan can join it in its workers."""
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
    return f"(VALUES {', '.join(rendered)}) AS {name}({names})"


def _bound(moment: dt.datetime | None, infinity: str) -> dt.datetime | str:
    return infinity if moment is None else moment


def pieces(params: dict[str, Any], periods: Sequence[VersionRange], kinds: Sequence[Kind],
           max_micros: int) -> str:
    """The ``FROM … WHERE`` of every piece: ``ri`` the interval, ``v.n`` its version
    range, ``p.s``/``p.e`` its bounds, ``t`` not NULL when the range has terms for its
    project, ``k`` its kind (NULL: a kind not priced), ``z`` not NULL when its project
    is zero-rated by its version."""
    version_rows = [(r.number, _bound(r.start, "-infinity"), _bound(r.end, "infinity"))
                    for r in periods]
    kind_rows = []
    for kind in kinds:
        per_micro = kind.minor_per_micro()
        big = None if per_micro is None else kind.integer_safe(max_micros)
        kind_rows.append((
            kind.kid, kind.number, kind.project, kind.resource_type, kind.state_null,
            kind.state,
            kind.size_text, big,
            per_micro.numerator if per_micro is not None and big else None,
            per_micro.denominator if per_micro is not None and big else None,
            per_micro.numerator if per_micro is not None and not big else None,
            per_micro.denominator if per_micro is not None and not big else None,
        ))
    zero_rows = sorted({(r.number, project) for r in periods if r.version is not None
                        for project in r.version.zero_rated_projects})
    version_values = values("v", [("n", "integer"), ("vfrom", "timestamp"),
                                  ("vto", "timestamp")], version_rows, params)
    kind_values = values("k", [
        ("kid", "integer"), ("n", "integer"), ("cls", "text"), ("rtype", "text"),
        ("state_null", "boolean"),
        ("state", "text"), ("size_text", "text"), ("big", "boolean"), ("ca", "bigint"),
        ("cb", "bigint"), ("nca", "numeric"), ("ncb", "numeric")], kind_rows, params)
    zero_values = values("z", [("n", "integer"), ("project_id", "text")], zero_rows, params)
    term_rows = sorted({(r.number, project) for r in periods if r.version is not None
                        for project in r.version.terms})
    # Without terms (the common case) the pieces join no terms at all.  With them, two
    # arrays: an account's terms may price thousands of member projects per range, more
    # than a statement's bound parameters could hold one by one.
    term_join = term_kind = ""
    if term_rows:
        params["t_n"] = [number for number, _project in term_rows]
        params["t_project"] = [project for _number, project in term_rows]
        term_join = ("LEFT JOIN unnest(CAST(:t_n AS integer[]), CAST(:t_project AS text[])) "
                     "AS t(n, project_id) ON t.n = v.n AND t.project_id = ri.project_id")
        term_kind = "AND k.cls = COALESCE(t.project_id, '') "
    return f"""
FROM resource_intervals ri
JOIN {version_values}
  ON v.vfrom < LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)), CAST(:cap AS timestamp))
 AND v.vto > GREATEST(ri.start, CAST(:pstart AS timestamp))
CROSS JOIN LATERAL (
  SELECT GREATEST(ri.start, CAST(:pstart AS timestamp), v.vfrom) AS s,
         LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)), CAST(:cap AS timestamp), v.vto) AS e
) AS p
CROSS JOIN LATERAL (
  SELECT CAST(round(date_part('epoch', p.e - p.s) * 1000000) AS bigint) AS m
) AS d
{term_join}
LEFT JOIN {kind_values}
  ON k.n = v.n {term_kind}AND k.rtype = ri.resource_type AND k.state_null = (ri.state IS NULL)
 AND k.state = COALESCE(ri.state, '') AND k.size_text = COALESCE(CAST(ri.size AS text), 'null')
LEFT JOIN {zero_values} ON z.n = v.n AND z.project_id = ri.project_id
WHERE {_OVERLAP} AND p.e > p.s"""  # noqa: S608 - constants and bound parameters only


# A piece's amount in minor units (cents, yen, fils), exactly: round_half_even(m * ca / cb) as
# (2 m ca + cb) div (2 cb), less one on an exact half that rounded up to odd.  A piece
# lies within one month, so its length in float seconds is exact to far below a
# microsecond and rounds to the exact count (``d.m``).
def _rounded(a: str, b: str, div: str, mod: str) -> str:
    t = f"(2 * d.m * {a} + {b})"
    q = f"{div}({t}, 2 * {b})"
    return (f"({q} - CASE WHEN {mod}({t}, 2 * {b}) = 0 AND {mod}({q}, 2) = 1 "
            "THEN 1 ELSE 0 END)")


BIG_CENTS = _rounded("k.ca", "k.cb", "int8div", "int8mod")
NUMERIC_CENTS = _rounded("k.nca", "k.ncb", "div", "mod")


# JIT compiled these statements longer (about 1.5 s) than they run.  The planner
# cannot estimate the joins with the bound VALUES (it took a month's million pieces
# for forty thousand and joined the kinds by nested loops, 15 s instead of 1): hash
# joins are right for any size; only the join with the version ranges, an
# inequality, stays a nested loop (over their two or three rows).
SETTINGS = [("jit", "off"), ("enable_nestloop", "off")]


@contextmanager
def local_settings(session: Session, settings: Sequence[tuple[str, str]]) -> Iterator[None]:
    """``SET LOCAL`` for the statements inside (a failed statement aborts the
    transaction, and the settings go with it)."""
    for name, value in settings:
        session.execute(sa.text(f"SET LOCAL {name} = {value}"))
    yield
    for name, _value in settings:
        session.execute(sa.text(f"RESET {name}"))


def distinct_kinds(session: Session, params: dict[str, Any],
                   periods: Sequence[VersionRange] = ()) -> list[kinds_of.Distinct]:
    """The period's ``(type, state_null, state, size_text, size, project)``: project
    ``''`` for every project without terms in ``periods``, each project with some
    apart (so only the kinds that occur in it are priced for it)."""
    bound = dict(params)
    projects = sorted({project for r in periods if r.version is not None
                       for project in r.version.terms})
    cls = _NO_TERMS
    if projects:  # one array, however many projects (``pieces``)
        bound["tp"] = projects
        cls = "CASE WHEN ri.project_id = ANY(CAST(:tp AS text[])) " \
              "THEN ri.project_id ELSE '' END"
    query = _DISTINCT_KINDS.format(cls=cls)
    rows = session.execute(sa.text(query), bound).all()
    return [(r.rtype, r.state_null, r.state, r.size_text, r.size, r.cls) for r in rows]


def max_micros(pstart: dt.datetime, cap: dt.datetime) -> int:
    span = cap - pstart
    return (span.days * 86_400 + span.seconds) * 1_000_000 + span.microseconds


def project_subtotals(
    session: Session, cloud: str, versions: list[PriceVersion], period_start: dt.datetime,
    period_end: dt.datetime, now: dt.datetime,
    after: str | None = None, limit: int | None = None,
) -> dict[str, tuple[Decimal, int]]:
    """``{project: (subtotal, unrated lines)}`` of the projects with a line in the
    period, in project order: those after ``after``, at most ``limit``."""
    cap = min(period_end, now)
    if cap <= period_start:
        return {}
    base: dict[str, Any] = {"cloud": cloud, "pstart": period_start, "cap": cap}
    periods = kinds_of.ranges(versions, period_start, cap)
    with local_settings(session, SETTINGS):
        distinct = distinct_kinds(session, base, periods)
        for _attempt in range(_ATTEMPTS):
            params = dict(base)
            kinds = kinds_of.price(distinct, periods)
            after_filter = ""
            if after is not None:
                after_filter = 'AND ri.project_id COLLATE "C" > :after'
                params["after"] = after
            query = f"""
SELECT ri.project_id AS project_id,
       SUM({BIG_CENTS}) FILTER (WHERE z.n IS NULL AND k.big) AS big_cents,
       SUM({NUMERIC_CENTS}) FILTER (WHERE z.n IS NULL AND NOT k.big) AS numeric_cents,
       COUNT(*) FILTER (WHERE z.n IS NULL AND k.kid IS NOT NULL AND k.big IS NULL) AS unrated,
       COUNT(*) FILTER (WHERE k.kid IS NULL) AS unknown
{pieces(params, periods, kinds, max_micros(period_start, cap))} {after_filter}
GROUP BY ri.project_id"""  # noqa: S608 - constants and bound parameters only
            rows = session.execute(sa.text(query), params).all()
            if not any(row.unknown for row in rows):
                break
            distinct = distinct_kinds(session, base, periods)  # ingest added kinds meanwhile
        else:
            raise RuntimeError(f"the kinds of {cloud} kept changing while rating it")
    found = {
        row.project_id: (money.minor(int(row.big_cents or 0) + int(row.numeric_cents or 0),
                                     minor_units_of(versions)),
                         int(row.unrated))
        for row in rows
    }
    page = sorted(found)[:limit] if limit is not None else sorted(found)
    return {project: found[project] for project in page}
