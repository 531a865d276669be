"""An account's statement of a period: one section per stretch of time a member
project belonged to the account in the period, each the project's statement
restricted to that stretch (``docs/statements.md``, "Billing accounts").

A section's lines are the project's lines (computed for an open period, frozen for a
closed one) clipped to the stretch: a line crossing the instant the project moved is
split there, each part's quantity and exact amount in proportion to its length (a
line's price is the same over all of it), then rounded on its own like any line.  A
section of the whole open period needs no clipping: its lines are those of the
project's statement, rated set-based where the database can.  The
adjustments booked on (or pending for) the period belong to the section starting at
the period's start: to the account holding the project when the period began.
The tier lines of the project's period (``reporting.billing.tiers``) go with them.
The credits and charges booked by hand on the account's period of each cloud
(``reporting.billing.manual_lines``) follow the sections, and count in the totals of
their currency.  The discount in force at the period's start
(``reporting.billing.discounts``) takes its percent off the usage of every currency,
then the minimum commitment in force then (``reporting.billing.commitments``) tops
up the discounted usage of its currency, both before them.  A cloud whose period is
not billable (open and wholly before the cloud's first observation,
``reporting.billing.observed``) has no section: its lines would bill only the
survivors, and the period can never be closed there; the statement names it instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import (
    accounts,
    adjustments,
    commitments,
    currencies,
    discounts,
    frozen,
    manual_lines,
    money,
    observed,
    periods,
    rating,
    tiers,
)
from reporting.billing import statements as project_statements
from reporting.billing.pricelist import PriceVersion
from reporting.billing.versions import timeline
from reporting.db import writes
from reporting.db.account_models import AccountCommitment, AccountDiscount, AccountLine
from reporting.db.billing_models import BillingPeriod, ClosedStatement


def _micros(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def clip(line: rating.Line, start: dt.datetime, end: dt.datetime) -> rating.Line | None:
    """The part of ``line`` within ``[start, end)``, None when there is none."""
    if line.start == line.end:
        return line if start <= line.start < end else None
    piece_start, piece_end = max(line.start, start), min(line.end, end)
    if piece_start >= piece_end:
        return None
    if (piece_start, piece_end) == (line.start, line.end):
        return line
    share = Fraction(_micros(piece_end - piece_start), _micros(line.end - line.start))
    return dataclasses.replace(
        line, start=piece_start, end=piece_end, quantity=line.quantity * share,
        exact_amount=None if line.exact_amount is None else line.exact_amount * share)


@dataclasses.dataclass
class _Project:
    """What a section is cut from: the project's lines and adjustments of the period."""

    closed: BillingPeriod | None
    currency: str | None
    places: int
    lines: list[rating.Line]
    legacy_lines: list[dict[str, Any]] | None  # a close before lines were frozen apart
    adjustments: list[dict[str, Any]]
    tiers: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # the lines already rendered, for a section of the whole period only (no clipping)
    whole: list[dict[str, Any]] | None = None
    number: int | None = None  # the closed statement's number in its cloud


def _project(session: Session, cloud: str, project_id: str, period: str,
             closed: dict[str, BillingPeriod], versions: list[PriceVersion],
             now: dt.datetime, whole: bool = False) -> _Project:
    """The project's lines, adjustments and tier lines of the period, from its own
    facts: its intervals, and the late facts of the resources it could be adjusted for
    (``adjustments.pending`` of the project), never the cloud's.  For a section of the
    ``whole`` period, an open period's lines are those of the project's statement,
    rated set-based where the database can (the write seam's ``project_lines``)."""
    start, end = periods.parse(period)
    if period in closed:
        record = closed[period]
        row = session.get(ClosedStatement, (cloud, period, project_id))
        if row is None:
            return _Project(record, record.currency, record.minor_units, [], None, [])
        envelope = json.loads(row.body)  # the envelope of a frozen statement is JSON too
        legacy = envelope["lines"] if row.lines_at is None else None
        lines = [] if legacy is not None else frozen.lines(session, row,
                                                           places=record.minor_units)
        return _Project(record, envelope["currency"], record.minor_units, lines, legacy,
                        envelope["adjustments"], envelope.get("tiers", []), number=row.number)
    currency = project_statements.currency(versions, end)
    places = currencies.places(currency)
    found = adjustments.pending(session, cloud, period, closed, versions, now, project_id)
    booked = [a.as_dict(places) for a in found]
    if whole:
        rated = writes.of(session).project_lines(session, cloud, project_id, versions,
                                                 start, end, now)
        # each text is the JSON of the line's dict (decimals as strings): read back whole
        return _Project(None, currency, places, [], None, booked,
                        [tier.as_dict() for tier in rated.tier_lines],
                        [json.loads(text) for text in rated.texts])
    lines = rating.rate_intervals(
        project_statements.intervals(session, cloud, start, min(end, now), project_id),
        versions, start, end, now)
    return _Project(None, currency, places, lines, None, booked,
                    [tier.as_dict() for tier in tiers.tier_lines(lines, versions)])


def _legacy_within(lines: list[dict[str, Any]], stretch: accounts.Stretch,
                   period: str) -> list[dict[str, Any]]:
    """A statement closed before its lines were frozen apart keeps its lines whole: a
    membership never changes a closed period, so a stretch covers all of it (a
    statement of adjustments only is stored whole too, without lines)."""
    if lines and (stretch.start, stretch.end) != periods.parse(period):
        raise RuntimeError(f"a membership splits closed period {period} of {stretch.cloud}")
    return lines


def _amount(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def section(stretch: accounts.Stretch, period: str, project: _Project) -> dict[str, Any]:
    start = periods.parse(period)[0]
    if project.legacy_lines is not None:
        rendered = _legacy_within(project.legacy_lines, stretch, period)
    elif project.whole is not None:
        rendered = project.whole
    else:
        kept = [clip(line, stretch.start, stretch.end) for line in project.lines]
        rendered = [line.as_dict() for line in kept if line is not None]
    at_start = stretch.start == start
    booked = project.adjustments if at_start else []
    # The tier lines price the project's whole period: with its adjustments, they go to
    # the account holding the project when the period began.
    tier_lines = project.tiers if at_start else []
    subtotal = money.total(a for a in (_amount(x["amount"]) for x in [*rendered, *tier_lines])
                           if a is not None)
    adjustments_total = money.total(Decimal(a["amount"]) for a in booked)
    places = project.places
    return {
        "cloud": stretch.cloud, "project_id": stretch.project_id,
        "membership": stretch.number,
        "from": format_timestamp(stretch.start), "to": format_timestamp(stretch.end),
        "status": "closed" if project.closed is not None else "open",
        # which closed statement the section is cut from, for the invoicing system
        **({"number": project.number} if project.number is not None else {}),
        "currency": project.currency, "places": places,
        "lines": rendered, **({"tiers": tier_lines} if tier_lines else {}),
        "adjustments": booked,
        "subtotal": money.money(subtotal, places),
        "adjustments_total": money.money(adjustments_total, places),
        "total": money.money(money.add(subtotal, adjustments_total), places),
        "unrated_lines": sum(1 for x in rendered if x["unrated"] is not None),
    }


def _totals(sections: list[dict[str, Any]], booked: list[AccountLine],
            commitment: AccountCommitment | None,
            discount: AccountDiscount | None = None) -> list[dict[str, Any]]:
    """The account's totals per currency (an account may span clouds priced in
    different currencies; amounts of two currencies are never added): its sections',
    less the discount in force (on every currency's usage: each total carries
    ``discount``), the top-up of the commitment in force on the discounted usage (in
    its currency only: the total of that currency carries ``commitment``, present even
    with no usage in it) and its credits and charges (``manual_total``, each in its own
    currency), which count after the discount and the commitment."""
    by_currency: dict[str | None, list[dict[str, Any]]] = {}
    for item in sections:
        by_currency.setdefault(item["currency"], []).append(item)
    lines_in: dict[str | None, list[AccountLine]] = {}
    for line in booked:
        by_currency.setdefault(line.currency, [])
        lines_in.setdefault(line.currency, []).append(line)
    if commitment is not None:
        by_currency.setdefault(commitment.currency, [])
    found = []
    for code in sorted(by_currency, key=lambda c: (c is not None, c or "")):
        items = by_currency[code]
        mine = lines_in.get(code, [])
        committed = commitment if commitment is not None and commitment.currency == code else None
        places = max([item["places"] for item in items] + [x.minor_units for x in mine]
                     + ([committed.minor_units] if committed is not None else []))
        sums = {name: money.total(Decimal(item[name]) for item in items)
                for name in ("subtotal", "adjustments_total", "total")}
        sums["manual_total"] = money.total(manual_lines.signed(x) for x in mine)
        total: dict[str, Any] = {"currency": code, **{
            name: money.money(sums[name], places) for name in ("subtotal", "adjustments_total")}}
        if discount is not None:
            off = discounts.apply(discount, sums["total"], places)
            sums["total"] = money.add(sums["total"], off.amount)
            total["discount"] = discounts.render_applied(off, places)
        if committed is not None:
            applied = commitments.apply(committed, sums["total"])
            sums["total"] = money.add(sums["total"], applied.shortfall)
            total["commitment"] = commitments.render_applied(applied, places)
        sums["total"] = money.add(sums["total"], sums["manual_total"])
        found.append({**total,
                      **{name: money.money(sums[name], places) for name in (
                          "manual_total", "total")},
                      "unrated_lines": sum(item["unrated_lines"] for item in items)})
    return found


def document(session: Session, name: str, period: str, now: dt.datetime) -> dict[str, Any]:
    """Account ``name``'s statement of ``period`` (UnknownAccount if there is none)."""
    account = accounts.get(session, name)
    start, end = periods.parse(period)
    closed_of: dict[str, dict[str, BillingPeriod]] = {}
    not_billable: dict[str, str] = {}
    # Read once per cloud and per project, however many stretches: a cloud's timeline
    # with account terms reads its memberships, and a project that left the account
    # and came back in the period has two sections cut from the same lines.
    timelines: dict[str, list[PriceVersion]] = {}
    projects: dict[tuple[str, str], _Project] = {}
    sections = []
    for stretch in accounts.stretches(session, account.account_id, start, end):
        cloud = stretch.cloud
        if cloud not in closed_of:
            closed_of[cloud] = project_statements.closed_periods(session, cloud)
            reason = observed.not_billable(session, cloud, period)
            if reason is not None:
                not_billable[cloud] = reason
        if cloud in not_billable:
            continue
        key = (cloud, stretch.project_id)
        if key not in projects:
            if period not in closed_of[cloud] and cloud not in timelines:
                timelines[cloud] = timeline(session, cloud)
            # a project in the account all period has that one section (memberships
            # of a project never overlap): its lines need no clipping
            projects[key] = _project(session, cloud, stretch.project_id, period,
                                     closed_of[cloud], timelines.get(cloud, []), now,
                                     whole=(stretch.start, stretch.end) == (start, end))
        sections.append(section(stretch, period, projects[key]))
    booked = manual_lines.of_period(session, account.account_id, period)
    clouds = {item["cloud"] for item in sections} | {line.cloud for line in booked}
    for cloud in clouds - set(closed_of):
        closed_of[cloud] = project_statements.closed_periods(session, cloud)
    settled = bool(clouds) and all(period in closed_of[cloud] for cloud in clouds)
    # A statement every section and line of which is closed never changes (no line is
    # booked on a closed period): dated by its last close.
    computed_at = (max(closed_of[cloud][period].closed_at for cloud in clouds)
                   if settled else now)
    totals = _totals(sections, booked, commitments.in_force(session, account.account_id, start),
                     discounts.in_force(session, account.account_id, start))
    for item in sections:
        del item["places"]
    return {
        "account_id": account.account_id, "period": period,
        "status": "closed" if settled else "open", "provisional": not settled,
        "computed_at": format_timestamp(computed_at),
        # only when some cloud's period is not billable: every other statement is what
        # it was before the rule
        **({"not_billable": [{"cloud": cloud, "reason": not_billable[cloud]}
                             for cloud in sorted(not_billable)]} if not_billable else {}),
        "projects": sections,
        "manual_lines": [manual_lines.render(line) for line in booked], "totals": totals,
    }
