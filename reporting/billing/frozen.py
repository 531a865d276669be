"""Frozen statements: what a close stores, and the text it is answered as.

A close freezes, per project of the period, the statement's text without its lines
(``closed_statements.body``; ``lines_at`` says where they go) and its lines as
columns: per line its resource id, event id, its start and length in microseconds
from the period's start, and its kind (``2 × kind + 1`` when zero-rated); per kind
of the period (``closed_kinds``) the version label, type, state, size and price the
rating gave it.  The frozen lines are also the base of later adjustments
(``reporting.billing.adjustments``).  That is every input of the line, so the answer is rebuilt from
stored data alone: ``lines`` by the one line construction of the rating
(``rating.line_of``), ``text`` from each line's kind and columns
(``line_texts.LineForm``, which renders what ``statements.text`` renders of that
line): the same bytes as the statement computed at the close, however the
projection changes later.

A close computes it set-based on PostgreSQL (``reporting.billing.sql_close``) and
here in Python on SQLite (``freeze_in_python``); both write the same rows (a test
keeps the documents equal).  Rows frozen before revision 0015 hold the whole text
(``lines_at`` NULL) and are answered as stored.

A frozen line's amount is rounded when it is rendered, so it is rounded to the minor
units its close recorded (``billing_periods.minor_units``): hundredths for every period
closed before revision 0020, whatever the currency, as it was billed then.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Container, Iterator, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import kinds as kinds_of
from reporting.billing import money, periods, rating, statements
from reporting.billing.kinds import Kind
from reporting.billing.line_texts import LineForm
from reporting.billing.pricelist import PriceVersion, in_effect
from reporting.db.billing_models import BillingPeriod, ClosedKind, ClosedStatement
from reporting.fold import Interval

# {project: (subtotal, unrated lines)} of the frozen lines
Totals = dict[str, tuple[Decimal, int]]


def kind_rows(cloud: str, period: str, kinds: Sequence[Kind]) -> list[dict[str, Any]]:
    """The ``closed_kinds`` rows of a period's kinds."""
    rows = []
    for kind in kinds:
        price = kind.price
        rows.append({
            "cloud": cloud, "period": period, "kind": kind.kid,
            "resource_type": kind.resource_type,
            "state": None if kind.state_null else kind.state, "size": kind.size_json(),
            "price_list_version": kind.label, "unit": kind.unit,
            "rate": None if price.rate is None else money.text(price.rate),
            "modifier": None if price.modifier is None else money.text(price.modifier),
            "factor": None if price.factor is None else kinds_of.decimal_text(price.factor),
            "per_hour": (None if price.per_hour is None
                         else kinds_of.decimal_text(price.per_hour)),
            "unrated": price.reason,
        })
    return rows


def _micros(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def freeze_in_python(session: Session, cloud: str, period: str,
                     versions: Sequence[PriceVersion], now: dt.datetime) -> Totals:
    """Freeze every line of ``period`` with the pure rating (the rows
    ``sql_close.freeze`` writes in one statement); ``body`` is left empty for the
    caller, who renders it with the totals answered."""
    start, end = periods.parse(period)
    ranges = kinds_of.ranges(versions, start, end)
    number = {id(r.version): r.number for r in ranges}  # a version may have several
    items = statements.intervals(session, cloud, start, end)
    pieces = []
    distinct: dict[tuple[str, bool, str, str, str], Any] = {}
    with_terms = {project for r in ranges if r.version is not None for project in r.version.terms}
    for item in items:
        clipped = rating.clip(item.interval, start, end, now)
        if clipped is None:
            continue
        interval = item.interval
        size_text = json.dumps(interval.size, separators=(",", ":"), ensure_ascii=False)
        key = (item.resource_type, interval.state is None, interval.state or "", size_text)
        owner = interval.project_id if interval.project_id in with_terms else ""
        distinct.setdefault((*key, owner), interval.size)
        for piece_start, piece_end, version in in_effect(list(versions), *clipped):
            pieces.append((item, key, piece_start, piece_end, version))
    priced = kinds_of.price([(*k[:4], size, k[4]) for k, size in distinct.items()], ranges)
    by_key = {(k.number, k.project, k.resource_type, k.state_null, k.state, k.size_text): k
              for k in priced}
    rows: dict[str, dict[str, Any]] = {}
    for item, key, piece_start, piece_end, version in sorted(
            pieces, key=lambda p: (p[0].resource_type, p[0].resource_id, p[2])):
        interval = item.interval
        project = rating.term_project(version, interval.project_id) or ""
        kind = by_key[(number[id(version)], project, *key)]
        zero = version is not None and interval.project_id in version.zero_rated_projects
        line = rating.line_of(item.resource_type, item.resource_id, interval, piece_start,
                              piece_end, kind.label, kind.unit, kind.price, zero, kind.places)
        row = rows.setdefault(interval.project_id, {
            "cloud": cloud, "period": period, "project_id": interval.project_id, "body": "",
            "subtotal": money.ZERO, "adjustments_total": money.ZERO,
            "total": money.ZERO, "unrated_lines": 0, "lines_at": 0,
            "line_resource_ids": [], "line_starts": [], "line_lengths": [],
            "line_event_ids": [], "line_kinds": []})
        row["line_resource_ids"].append(item.resource_id)
        row["line_starts"].append(_micros(piece_start - start))
        row["line_lengths"].append(_micros(piece_end - piece_start))
        row["line_event_ids"].append(interval.event_id)
        row["line_kinds"].append(2 * kind.kid + zero)
        if line.amount is None:
            row["unrated_lines"] += 1
        else:
            row["subtotal"] = money.add(row["subtotal"], line.amount)
    if priced:
        session.execute(sa.insert(ClosedKind), kind_rows(cloud, period, priced))
    if rows:
        session.execute(sa.insert(ClosedStatement), list(rows.values()))
    return {project: (row["subtotal"], row["unrated_lines"]) for project, row in rows.items()}


@dataclasses.dataclass(frozen=True)
class FrozenKind:
    """A ``closed_kinds`` row as a line is built from it."""

    resource_type: str
    state: str | None
    size: Any
    label: str | None
    unit: str | None
    price: rating.Price


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def _fraction(text: str | None) -> Fraction | None:
    return None if text is None else Fraction(Decimal(text))


def kinds(session: Session, cloud: str, period: str) -> dict[int, FrozenKind]:
    """The frozen kinds of a closed period, by number."""
    return kinds_of_periods(session, cloud, [period]).get(period, {})


def kinds_of_periods(session: Session, cloud: str, names: Sequence[str]
                     ) -> dict[str, dict[int, FrozenKind]]:
    """The frozen kinds of closed periods, by period and number (one query)."""
    query = sa.select(ClosedKind).where(ClosedKind.cloud == cloud,
                                        ClosedKind.period.in_(list(names)))
    found: dict[str, dict[int, FrozenKind]] = {}
    for row in session.execute(query).scalars():
        found.setdefault(row.period, {})[row.kind] = FrozenKind(
            row.resource_type, row.state, json.loads(row.size), row.price_list_version,
            row.unit, rating.Price(_fraction(row.factor), _decimal(row.rate),
                                   _decimal(row.modifier), row.unrated, _fraction(row.per_hour)))
    return found


def places_of(session: Session, cloud: str, period: str) -> int:
    """The minor units the close of ``period`` rounded to (``billing_periods``)."""
    found = session.get(BillingPeriod, (cloud, period))
    return found.minor_units if found is not None else money.MINOR_PLACES


def lines(session: Session, row: ClosedStatement, resources: Container[str] | None = None,
          known: dict[int, FrozenKind] | None = None, places: int | None = None
          ) -> list[rating.Line]:
    """The frozen lines of a closed statement (of the given resource ids only, if
    any), in statement order; ``known``: the period's ``kinds`` if read already;
    ``places``: the minor units its close recorded, if read already."""
    by_number = known if known is not None else kinds(session, row.cloud, row.period)
    if places is None:
        places = places_of(session, row.cloud, row.period)
    found = []
    for piece in _pieces(row, by_number):
        if resources is not None and piece.resource_id not in resources:
            continue
        kind = piece.kind
        interval = Interval(piece.start, piece.end, row.project_id, kind.state, kind.size,
                            piece.event_id)
        found.append(rating.line_of(kind.resource_type, piece.resource_id, interval,
                                    piece.start, piece.end, kind.label, kind.unit,
                                    kind.price, piece.coded % 2 == 1, places))
    found.sort(key=lambda line: (line.resource_type, line.resource_id, line.start))
    return found


class _Piece(NamedTuple):
    """One frozen line's columns, its kind looked up and its bounds made instants."""

    kind: FrozenKind
    resource_id: str
    start: dt.datetime
    end: dt.datetime
    length: int
    event_id: str
    coded: int  # 2 x kind number, + 1 when zero-rated


def _pieces(row: ClosedStatement, by_number: dict[int, FrozenKind]) -> Iterator[_Piece]:
    start = periods.parse(row.period)[0]
    for resource_id, offset, length, event_id, coded in zip(
            row.line_resource_ids or [], row.line_starts or [], row.line_lengths or [],
            row.line_event_ids or [], row.line_kinds or [], strict=True):
        piece_start = start + dt.timedelta(microseconds=offset)
        yield _Piece(by_number[coded // 2], resource_id, piece_start,
                     piece_start + dt.timedelta(microseconds=length), length, event_id, coded)


def resources(row: ClosedStatement, known: dict[int, FrozenKind]) -> set[tuple[str, str]]:
    """The (resource_type, resource_id) of a closed statement's frozen lines
    (``known``: its period's ``kinds``)."""
    return {(known[coded // 2].resource_type, resource_id) for resource_id, coded in zip(
        row.line_resource_ids or [], row.line_kinds or [], strict=True)}


def text(session: Session, row: ClosedStatement, places: int | None = None,
         known: dict[int, FrozenKind] | None = None) -> str:
    """The exact text a closed statement is answered as (``places``: its close's
    minor units, ``known``: its period's ``kinds``, if read already)."""
    if row.lines_at is None:
        return row.body
    by_number = known if known is not None else kinds(session, row.cloud, row.period)
    if places is None:
        places = places_of(session, row.cloud, row.period)
    # the lines of ``lines``, in its order, rendered from their columns (``line_texts``)
    found = sorted(_pieces(row, by_number),
                   key=lambda piece: (piece.kind.resource_type, piece.resource_id, piece.start))
    forms: dict[int, LineForm] = {}
    rendered = []
    for piece in found:
        form = forms.get(piece.coded)
        if form is None:
            kind = piece.kind
            form = forms[piece.coded] = LineForm.of(kind.resource_type, kind.state, kind.size,
                                                    kind.label, kind.unit, kind.price,
                                                    piece.coded % 2 == 1, places)
        rendered.append(form.text(piece.resource_id, piece.event_id, piece.start, piece.end,
                                  piece.length))
    return row.body[:row.lines_at] + ",".join(rendered) + row.body[row.lines_at:]
