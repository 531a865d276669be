"""Stored price list versions: add one, list them, and a cloud's price timeline.

A cloud's timeline is the ``default`` list's versions up to the first version of the
cloud's own list, then the cloud's own versions: a cloud without a list of its own
(yet) is priced by ``default``.  Versions are never edited or removed, and a new one
may not take effect before the end of a closed period it would price (a closed
statement never changes): a ``default`` version never prices a cloud from the first
version of the cloud's own list on, and no version prices past the next version of
its own list.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import format_timestamp, parse_timestamp
from reporting.billing import accounts, periods, pricelist
from reporting.billing.pricelist import DEFAULT_LIST, PriceListError, PriceVersion
from reporting.db.account_models import BillingAccount
from reporting.db.billing_models import BillingPeriod, PriceListVersion
from reporting.db.models import ResourceType


class VersionConflict(ValueError):
    """A valid document that cannot be added given what is stored (409)."""


def label(name: str, number: int) -> str:
    return f"{name}/{number}"


def render(row: PriceListVersion) -> dict[str, Any]:
    return {
        "version": label(row.name, row.number),
        "number": row.number,
        "effective_from": format_timestamp(row.effective_from),
        "currency": row.currency,
        "created_at": format_timestamp(row.created_at),
        "created_by": row.created_by,
        "document": row.document,
    }


def rows(session: Session, name: str) -> list[PriceListVersion]:
    query = (
        sa.select(PriceListVersion)
        .where(PriceListVersion.name == name)
        .order_by(PriceListVersion.effective_from)
    )
    return list(session.execute(query).scalars())


def _parsed(row: PriceListVersion) -> PriceVersion:
    return pricelist.parse(row.document, label(row.name, row.number))


def timeline(session: Session, cloud: str) -> list[PriceVersion]:
    """The versions pricing ``cloud``, by ``effective_from``, each cut where one of its
    project terms begins or ends, and where one of its account terms begins or stops
    pricing a project of the cloud a membership puts in the account
    (``pricelist.expand``)."""
    own = [_parsed(row) for row in rows(session, cloud)] if cloud != DEFAULT_LIST else []
    shared = [_parsed(row) for row in rows(session, DEFAULT_LIST)]
    if own:
        shared = [v for v in shared if v.effective_from < own[0].effective_from]
    found = shared + own
    # the memberships are read only when a version has account terms (the common case
    # has none, and its timeline is what it always was)
    members = (accounts.of_cloud(session, cloud)
               if any(version.account_terms for version in found) else [])
    # cut at the dates of the versions' terms (one version, several pieces)
    return pricelist.expand(found, members)


def _next(froms: list[dt.datetime], moment: dt.datetime) -> dt.datetime | None:
    return min((when for when in froms if when > moment), default=None)


def _priced_until(name: str, cloud: str, effective_from: dt.datetime,
                  froms: dict[str, list[dt.datetime]]) -> tuple[bool, dt.datetime | None]:
    """Whether a new version of list ``name`` from ``effective_from`` would price
    ``cloud``, and until when (None: for ever): a ``default`` version prices a cloud
    only before the first version of the cloud's own list, and every version only
    until the next version of its own list."""
    until = _next(froms.get(name, []), effective_from)
    if name != DEFAULT_LIST:
        return True, until
    own = froms.get(cloud, []) if cloud != DEFAULT_LIST else []
    if own:
        first_own = min(own)
        if first_own <= effective_from:
            return False, None
        until = first_own if until is None else min(until, first_own)
    return True, until


def _closed_priced(session: Session, name: str, effective_from: dt.datetime
                   ) -> tuple[str, str] | None:
    """The newest closed period (period, cloud) a new version of list ``name`` from
    ``effective_from`` would price, if any (any cloud's for ``default``)."""
    froms: dict[str, list[dt.datetime]] = {}
    for list_name, when in session.execute(
            sa.select(PriceListVersion.name, PriceListVersion.effective_from)):
        froms.setdefault(list_name, []).append(when)
    query = sa.select(BillingPeriod.cloud, BillingPeriod.period)
    if name != DEFAULT_LIST:
        query = query.where(BillingPeriod.cloud == name)
    found: tuple[dt.datetime, str, str] | None = None
    for cloud, period in session.execute(query):
        start, end = periods.parse(period)
        prices, until = _priced_until(name, cloud, effective_from, froms)
        if not prices or effective_from >= end:
            continue
        if (until is None or start < until) and (found is None or end > found[0]):
            found = (end, period, cloud)
    return None if found is None else (found[1], found[2])


def _carried_forward(session: Session, name: str, document: dict[str, Any],
                     version: PriceVersion) -> dict[str, Any]:
    """``document`` as stored: one that omits ``zero_rated_projects`` carries the
    projects of the version in effect just before it (the list's, or for a cloud's list
    the ``default`` version pricing the cloud then), so adding a version never starts
    billing a zero-rated project silently; ``[]`` says otherwise explicitly.  One that
    omits ``project_terms`` (``account_terms``) carries that version's terms still in
    force (``{}`` clears them).  Stored filled in, so the version says what it prices
    and older versions never change."""
    before = [v for v in timeline(session, name) if v.effective_from < version.effective_from]
    stored = dict(document)
    if "zero_rated_projects" not in document:
        stored["zero_rated_projects"] = sorted(before[-1].zero_rated_projects) if before else []
    for member in ("project_terms", "account_terms"):
        if member not in document and before and getattr(before[-1], member):
            stored[member] = _carried_terms(session, before[-1].label,
                                            version.effective_from, member)
            try:
                pricelist.parse(stored)
            except PriceListError as exc:
                raise PriceListError(
                    f"the {member} carried forward from {before[-1].label} do not fit this "
                    f"version ({exc}); state {member} in the version (an empty object "
                    "clears them)") from None
    return stored


def _carried_terms(session: Session, previous: str, since: dt.datetime,
                   member: str = "project_terms") -> dict[str, Any]:
    """The project (``member``: or account) terms of version ``previous`` (label) in
    force at or after ``since``, from ``since`` on: a new version never drops a
    project's or an account's terms silently."""
    list_name, number = previous.rsplit("/", 1)
    row = session.execute(sa.select(PriceListVersion).where(
        PriceListVersion.name == list_name, PriceListVersion.number == int(number))).scalar_one()
    carried: dict[str, Any] = {}
    for owner, terms in (row.document.get(member) or {}).items():
        kept = []
        for term in terms:
            until = term.get("until")
            if until is not None and parse_timestamp(until).replace(tzinfo=None) <= since:
                continue
            start = term.get("from")
            if start is None or parse_timestamp(start).replace(tzinfo=None) < since:
                term = {**term, "from": format_timestamp(since)}
            kept.append(term)
        if kept:
            carried[owner] = kept
    return carried


def _schemas(session: Session, names: Iterable[str]) -> dict[str, list[tuple[str, Any]]]:
    """The registered size schemas of the resource types ``names``, per type."""
    wanted = sorted(names)
    found: dict[str, list[tuple[str, Any]]] = {}
    if not wanted:
        return found
    query = (sa.select(ResourceType.resource_type, ResourceType.platform,
                       ResourceType.size_schema)
             .where(ResourceType.resource_type.in_(wanted))
             .order_by(ResourceType.resource_type, ResourceType.platform))
    for row in session.execute(query):
        found.setdefault(row.resource_type, []).append((row.platform, row.size_schema))
    return found


def check_accounts(session: Session, version: PriceVersion) -> None:
    """Refuse account terms naming an account that does not exist: they would price no
    project, silently (accounts are never removed, so a stored version's stay known)."""
    named = sorted(version.account_terms)
    if not named:
        return
    known = set(session.execute(sa.select(BillingAccount.account_id)
                                .where(BillingAccount.account_id.in_(named))).scalars())
    for account in named:
        if account not in known:
            raise PriceListError(f"account_terms.{account}: there is no account {account} "
                                 "(add it with POST /v1/accounts first)")


def add(session: Session, name: str, document: Any, who: str, now: dt.datetime
        ) -> PriceListVersion:
    """Validate and store a new version of list ``name`` (caller commits).

    Raises PriceListError (invalid document) or VersionConflict."""
    stored = session.execute(sa.select(PriceListVersion.currency).limit(1)).scalar()
    version = pricelist.parse_new(document, stored)
    pricelist.check_registered(version, _schemas(session, pricelist.sized_types(version)))
    check_accounts(session, version)
    other = session.execute(
        sa.select(PriceListVersion).where(PriceListVersion.currency != version.currency).limit(1)
    ).scalar()
    if other is not None:
        # default and the clouds' own lists share one timeline per cloud: one currency.
        raise PriceListError(
            f"currency {version.currency} differs from {other.currency} of version "
            f"{label(other.name, other.number)}; every price list uses one currency"
        )
    existing = rows(session, name)
    for row in existing:
        if row.effective_from == version.effective_from:
            raise VersionConflict(
                f"version {label(row.name, row.number)} already takes effect at "
                f"{format_timestamp(row.effective_from)}; versions are never edited"
            )
    closed = _closed_priced(session, name, version.effective_from)
    if closed is not None:
        raise VersionConflict(
            f"effective_from falls before the end of closed period {closed[0]} of cloud "
            f"{closed[1]}, which this version would price; a closed statement never changes"
        )
    number = max((row.number for row in existing), default=0) + 1
    document = _carried_forward(session, name, document, version)
    row = PriceListVersion(
        name=name, number=number, effective_from=version.effective_from,
        currency=version.currency, document=document, created_at=now, created_by=who,
    )
    session.add(row)
    session.flush()
    return row
