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

``project_lines`` rates one project's lines for its statement (one query of its
intervals cut at the version ranges; the kinds found among them in Python).
``project_totals`` is the per-project summaries' query (with the sums of the tier
groups, ``reporting.billing.tiers``); ``reporting.billing.sql_close`` freezes a closed
period with the same pieces.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import kinds as kinds_of
from reporting.billing import money, tiers
from reporting.billing.kinds import Kind, VersionRange
from reporting.billing.line_texts import LineForm
from reporting.billing.pricelist import PriceVersion, minor_units_of
from reporting.billing.statements import ProjectLines

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
      FROM resource_intervals ri WHERE {_OVERLAP}{{only}}
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


def cut(params: dict[str, Any], periods: Sequence[VersionRange]) -> str:
    """The ``FROM`` of every interval cut at the version ranges ``periods``: ``ri`` the
    interval, ``v.n`` the range of a piece, ``p.s``/``p.e`` its bounds (clipped to the
    period and to *now*, ``:pstart`` and ``:cap``), ``d.m`` its length in
    microseconds (``pieces`` keeps those with ``p.e > p.s``)."""
    version_rows = [(r.number, _bound(r.start, "-infinity"), _bound(r.end, "infinity"))
                    for r in periods]
    version_values = values("v", [("n", "integer"), ("vfrom", "timestamp"),
                                  ("vto", "timestamp")], version_rows, params)
    return f"""FROM resource_intervals ri
JOIN {version_values}
  ON v.vfrom < LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)), CAST(:cap AS timestamp))
 AND v.vto > GREATEST(ri.start, CAST(:pstart AS timestamp))
CROSS JOIN LATERAL (
  SELECT GREATEST(ri.start, CAST(:pstart AS timestamp), v.vfrom) AS s,
         LEAST(COALESCE(ri."end", CAST(:cap AS timestamp)), CAST(:cap AS timestamp), v.vto) AS e
) AS p
CROSS JOIN LATERAL (
  SELECT CAST(round(date_part('epoch', p.e - p.s) * 1000000) AS bigint) AS m
) AS d"""  # noqa: S608 - constants and bound parameters only


def pieces(params: dict[str, Any], periods: Sequence[VersionRange], kinds: Sequence[Kind],
           max_micros: int) -> str:
    """The ``FROM … WHERE`` of every piece: ``ri`` the interval, ``v.n`` its version
    range, ``p.s``/``p.e`` its bounds, ``t`` not NULL when the range has terms for its
    project, ``k`` its kind (NULL: a kind not priced), ``z`` not NULL when its project
    is zero-rated by its version."""
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
{cut(params, periods)}
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


# The intervals of the projects ``:only`` (an array) alone.
_ONLY = " AND ri.project_id = ANY(CAST(:only AS text[]))"


def distinct_kinds(session: Session, params: dict[str, Any],
                   periods: Sequence[VersionRange] = ()) -> list[kinds_of.Distinct]:
    """The period's ``(type, state_null, state, size_text, size, project)``: project
    ``''`` for every project without terms in ``periods``, each project with some
    apart (so only the kinds that occur in it are priced for it); of the projects
    ``params["only"]`` alone if given."""
    bound = dict(params)
    projects = sorted({project for r in periods if r.version is not None
                       for project in r.version.terms})
    cls = _NO_TERMS
    if projects:  # one array, however many projects (``pieces``)
        bound["tp"] = projects
        cls = "CASE WHEN ri.project_id = ANY(CAST(:tp AS text[])) " \
              "THEN ri.project_id ELSE '' END"
    query = _DISTINCT_KINDS.format(cls=cls, only=_ONLY if "only" in params else "")
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
    period, in project order: those after ``after``, at most ``limit`` (the lines'
    own amounts: ``project_totals`` adds their tier groups' sums)."""
    return project_totals(session, cloud, versions, period_start, period_end, now, after,
                          limit, with_tiers=False)[0]


def project_totals(
    session: Session, cloud: str, versions: list[PriceVersion], period_start: dt.datetime,
    period_end: dt.datetime, now: dt.datetime,
    after: str | None = None, limit: int | None = None, with_tiers: bool = True,
    projects: Sequence[str] | None = None,
) -> tuple[dict[str, tuple[Decimal, int]], TierSums]:
    """``project_subtotals`` and, in the same query, the sums of those projects' tier
    groups (``TierSums``): the pieces are grouped per project and kind, then the
    kinds of a tier group summed × their factors (and modifiers).  Of ``projects``
    alone if given (a closed period's projects whose tier lines late facts change,
    ``adjustments``)."""
    cap = min(period_end, now)
    if cap <= period_start:
        return {}, {}
    base: dict[str, Any] = {"cloud": cloud, "pstart": period_start, "cap": cap}
    if projects is not None:
        base["only"] = list(projects)
    periods = kinds_of.ranges(versions, period_start, cap)
    with local_settings(session, SETTINGS):
        distinct = distinct_kinds(session, base, periods)
        for _attempt in range(_ATTEMPTS):
            params = dict(base)
            kinds = kinds_of.price(distinct, periods)
            tiered, described = (tier_kinds(kinds, periods, versions, period_end)
                                 if with_tiers else ([], {}))
            after_filter = _ONLY if projects is not None else ""
            if after is not None:
                after_filter += ' AND ri.project_id COLLATE "C" > :after'
                params["after"] = after
            sums = f"""
       SUM({BIG_CENTS}) FILTER (WHERE z.n IS NULL AND k.big) AS big_cents,
       SUM({NUMERIC_CENTS}) FILTER (WHERE z.n IS NULL AND NOT k.big) AS numeric_cents,
       COUNT(*) FILTER (WHERE z.n IS NULL AND k.kid IS NOT NULL AND k.big IS NULL) AS unrated,
       COUNT(*) FILTER (WHERE k.kid IS NULL) AS unknown"""
            rated = f"{pieces(params, periods, kinds, max_micros(period_start, cap))} {after_filter}"
            if not tiered:
                query = f"""
SELECT ri.project_id AS project_id, CAST(NULL AS integer) AS gid, {sums},
       CAST(NULL AS numeric) AS q, CAST(NULL AS numeric) AS w
{rated}
GROUP BY ri.project_id"""  # noqa: S608 - constants and bound parameters only
            else:
                query = f"""
SELECT s.project_id, g.gid, SUM(s.big_cents) AS big_cents,
       SUM(s.numeric_cents) AS numeric_cents, SUM(s.unrated) AS unrated,
       SUM(s.unknown) AS unknown, SUM(s.m * g.qa) AS q, SUM(s.m * g.wa) AS w
FROM (SELECT ri.project_id AS project_id, k.kid, {sums},
             SUM(d.m) FILTER (WHERE z.n IS NULL) AS m
      {rated}
      GROUP BY 1, 2) AS s
LEFT JOIN {tier_values(tiered, params)} ON g.kid = s.kid
GROUP BY 1, 2"""  # noqa: S608 - constants and bound parameters only
            rows = session.execute(sa.text(query), params).all()
            if not any(row.unknown for row in rows):
                break
            distinct = distinct_kinds(session, base, periods)  # ingest added kinds meanwhile
        else:
            raise RuntimeError(f"the kinds of {cloud} kept changing while rating it")
    cents: dict[str, int] = collections.defaultdict(int)
    unrated: dict[str, int] = collections.defaultdict(int)
    for row in rows:
        cents[row.project_id] += int(row.big_cents or 0) + int(row.numeric_cents or 0)
        unrated[row.project_id] += int(row.unrated)
    places = minor_units_of(versions)
    page = sorted(cents)[:limit] if limit is not None else sorted(cents)
    chosen = set(page)
    found: TierSums = {}
    for row in rows:
        if row.gid is not None and row.q is not None and row.project_id in chosen:
            add_sums(found, row.project_id, row.gid, row.q, row.w, described)
    return ({project: (money.minor(cents[project], places), unrated[project])
             for project in page}, found)

TierSums = dict[tiers.GroupKey, tuple[Any, str | None, Fraction, Fraction]]
# How each tier group was numbered in a query: group -> (type, label, priced, unit).
Described = dict[int, tuple[str, str, Any, str | None]]


def tier_kinds(kinds: Sequence[Kind], periods: Sequence[VersionRange],
               versions: Sequence[PriceVersion], period_end: dt.datetime
               ) -> tuple[list[tuple[int, int, str, str]], Described]:
    """The kinds a tier group holds, as ``(kid, group, factor, factor × modifier)``
    rows (exact decimal texts), and how each group is priced: the group
    ``tiers.entry`` puts a line of the kind in, as the pure rating's
    ``tiers.tier_lines`` does (rated kinds only; the queries leave the zero-rated
    pieces out)."""
    types = tiers.tiered_types(v for v in versions if v.effective_from < period_end)
    pieces_of = {period.number: period.version for period in periods}
    groups: dict[tuple[Any, ...], int] = {}
    described: Described = {}
    rows = []
    for kind in kinds:
        version = pieces_of.get(kind.number)
        price = kind.price
        if (version is None or kind.resource_type not in types or price.per_hour is None
                or price.factor is None or price.modifier is None):
            continue
        priced = tiers.entry(kind.resource_type, kind.size, kind.project or None, version)
        if priced is None:
            continue
        assert kind.label is not None
        # a group per (type, label, flavor, volume type) and, for a project with terms
        # there, of that project only (its kinds are its own)
        key = (kind.project, kind.resource_type, kind.label, priced[3] or "", priced[4] or "")
        if key not in groups:
            groups[key] = len(groups) + 1
            described[groups[key]] = (kind.resource_type, kind.label, priced, kind.unit)
        rows.append((kind.kid, groups[key], kinds_of.decimal_text(price.factor),
                     kinds_of.decimal_text(price.factor * Fraction(price.modifier))))
    return rows, described


def tier_values(rows: Sequence[tuple[int, int, str, str]], params: dict[str, Any]) -> str:
    """``tier_kinds``' rows as ``(VALUES …) AS g(kid, gid, qa, wa)``."""
    return values("g", [("kid", "integer"), ("gid", "integer"), ("qa", "numeric"),
                        ("wa", "numeric")], rows, params)


def add_sums(sums: TierSums, project: str, gid: int, micro_quantity: Decimal,
             micro_weighted: Decimal, described: Described) -> None:
    """Add a group's sums over some pieces of ``project`` (Σ microseconds × factor, and
    × modifier, as the database sums them exactly) to ``sums`` (the group's key: a
    version cut where a project's terms begin holds pieces of the same group)."""
    resource_type, label, priced, unit = described[gid]
    key = (project, resource_type, label, priced[3] or "", priced[4] or "")
    quantity = Fraction(micro_quantity) / money.MICROS_PER_HOUR
    weighted = Fraction(micro_weighted) / money.MICROS_PER_HOUR
    if key in sums:
        earlier = sums[key]
        sums[key] = (earlier[0], earlier[1], earlier[2] + quantity, earlier[3] + weighted)
    else:
        sums[key] = (priced, unit, quantity, weighted)



# One project's pieces, each as the columns its kind and its text are found from: one
# row of arrays, in no order (Python sorts them as the pure rating does).  One
# project's intervals are few: one query, the kinds priced from what it answers.
_PROJECT_PIECES = """
SELECT array_agg(ri.resource_type) AS rtypes, array_agg(ri.resource_id) AS rids,
       array_agg(ri.event_id) AS eids, array_agg(p.s) AS starts, array_agg(p.e) AS ends,
       array_agg(d.m) AS lengths, array_agg(v.n) AS ranges, array_agg(ri.state) AS states,
       array_agg(COALESCE(CAST(ri.size AS text), 'null')) AS sizes
{cut}
WHERE {overlap} AND ri.project_id = :project AND p.e > p.s"""


def project_lines(session: Session, cloud: str, project: str, versions: list[PriceVersion],
                  period_start: dt.datetime, period_end: dt.datetime, now: dt.datetime
                  ) -> ProjectLines:
    """Every line of ``project`` in the period: its intervals cut at the version ranges
    in the database (``cut``), each piece priced by its kind (``kinds``, each priced
    once by the pure rating's code) and rendered by it (``line_texts``): what
    ``rating.rate_intervals`` of its intervals, rendered, subtotalled and grouped in
    tier lines (``tiers.tier_lines``), answers."""
    cap = min(period_end, now)
    if cap <= period_start:
        return ProjectLines([], money.ZERO, 0, [])
    params: dict[str, Any] = {"cloud": cloud, "pstart": period_start, "cap": cap,
                              "project": project}
    periods = kinds_of.ranges(versions, period_start, cap)
    row = session.execute(sa.text(_PROJECT_PIECES.format(
        cut=cut(params, periods), overlap=_OVERLAP)), params).one()
    if row.rids is None:
        return ProjectLines([], money.ZERO, 0, [])
    rtypes, rids, eids, starts, ends = row.rtypes, row.rids, row.eids, row.starts, row.ends
    lengths, numbers, states, sizes = row.lengths, row.ranges, row.states, row.sizes
    # the project's own kinds where a range has terms for it (``kinds.price``)
    by_number = {r.number: r.version for r in periods}
    owner = project if any(v is not None and project in v.terms
                           for v in by_number.values()) else ""
    keys = [(rtypes[i], states[i] is None, states[i] or "", sizes[i])
            for i in range(len(rids))]
    priced = kinds_of.price([(*key, json.loads(key[3]), owner) for key in set(keys)], periods)
    kind_of = {(k.number, k.project, k.resource_type, k.state_null, k.state, k.size_text): k
               for k in priced}
    term = {n: project if v is not None and project in v.terms else ""
            for n, v in by_number.items()}
    zero = {n: v is not None and project in v.zero_rated_projects
            for n, v in by_number.items()}
    forms: dict[tuple[int, bool], LineForm] = {}
    texts = []
    units: dict[int, int] = collections.defaultdict(int)  # minor units by places
    unrated = 0
    micros: dict[int, int] = collections.defaultdict(int)  # rated non-zero, by kind
    for index in sorted(range(len(rids)), key=lambda i: (rtypes[i], rids[i], starts[i])):
        number, length = numbers[index], lengths[index]
        kind = kind_of[(number, term[number], *keys[index])]
        form = forms.get((kind.kid, zero[number]))
        if form is None:
            form = forms[(kind.kid, zero[number])] = LineForm.of(
                kind.resource_type, None if kind.state_null else kind.state, kind.size,
                kind.label, kind.unit, kind.price, zero[number], kind.places)
        texts.append(form.text(rids[index], eids[index], starts[index], ends[index], length))
        amount = form.units(length)
        if amount is None:
            unrated += 1
        else:
            units[form.places] += amount
            if not zero[number]:
                micros[kind.kid] += length
    subtotal = money.total(money.minor(count, places) for places, count in units.items())
    tiered, described = tier_kinds(priced, periods, versions, period_end)
    sums: TierSums = {}
    for kid, group, quantity, weighted in tiered:
        if kid in micros:
            add_sums(sums, project, group, money.multiply(Decimal(micros[kid]),
                                                          Decimal(quantity)),
                     money.multiply(Decimal(micros[kid]), Decimal(weighted)), described)
    return ProjectLines(texts, subtotal, unrated, tiers.from_sums(sums, versions))
