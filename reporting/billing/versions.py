"""Stored price list versions: add one, list them, and a cloud's price timeline.

A cloud's timeline is the ``default`` list's versions up to the first version of the
cloud's own list, then the cloud's own versions: a cloud without a list of its own
(yet) is priced by ``default``.  Versions are never edited or removed, and a new one
may not take effect inside a period already closed (a closed statement never changes).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import periods, pricelist
from reporting.billing.pricelist import DEFAULT_LIST, PriceListError, PriceVersion
from reporting.db.billing_models import BillingPeriod, PriceListVersion


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
    """The versions pricing ``cloud``, by ``effective_from``."""
    own = [_parsed(row) for row in rows(session, cloud)] if cloud != DEFAULT_LIST else []
    shared = [_parsed(row) for row in rows(session, DEFAULT_LIST)]
    if own:
        shared = [v for v in shared if v.effective_from < own[0].effective_from]
    return shared + own


def _latest_closed_end(session: Session, name: str) -> tuple[dt.datetime, str, str] | None:
    """End of the newest closed period the list ``name`` may price (any cloud for
    ``default``), with that period and cloud."""
    query = sa.select(BillingPeriod.cloud, BillingPeriod.period)
    if name != DEFAULT_LIST:
        query = query.where(BillingPeriod.cloud == name)
    found = None
    for cloud, period in session.execute(query):
        end = periods.parse(period)[1]
        if found is None or end > found[0]:
            found = (end, period, cloud)
    return found


def add(session: Session, name: str, document: Any, who: str, now: dt.datetime
        ) -> PriceListVersion:
    """Validate and store a new version of list ``name`` (caller commits).

    Raises PriceListError (invalid document) or VersionConflict."""
    version = pricelist.parse(document)
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
    closed = _latest_closed_end(session, name)
    if closed is not None and version.effective_from < closed[0]:
        raise VersionConflict(
            f"effective_from falls before the end of closed period {closed[1]} of cloud "
            f"{closed[2]}; a closed statement never changes"
        )
    number = max((row.number for row in existing), default=0) + 1
    row = PriceListVersion(
        name=name, number=number, effective_from=version.effective_from,
        currency=version.currency, document=document, created_at=now, created_by=who,
    )
    session.add(row)
    session.flush()
    return row
