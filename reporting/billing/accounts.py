"""Billing accounts: add one, list them, put a cloud's project in one from an instant.

A membership says that from ``effective_from`` on, until the project's next
membership, the project of that cloud belongs to the account.  Memberships are never
edited or removed (a project moves by a later one), and one may not take effect
before the end of a closed period of its cloud that it would change: an account's
statement of a closed period never changes, as a project's does not.  A project with
no membership in force belongs to no account: it is billed on its own statement only
(a sync may book it into its keystone domain's account: ``default_accounts``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.billing import periods
from reporting.billing.pricelist import ACCOUNT_ID, Membership
from reporting.db.account_models import AccountMembership, BillingAccount
from reporting.db.billing_models import BillingPeriod

_TEXT_LIMIT = 255
_DESCRIPTION_LIMIT = 4096


class AccountError(ValueError):
    """An invalid account or membership document (400)."""


class AccountConflict(ValueError):
    """A valid document that cannot be stored given what is stored (409)."""


class UnknownAccount(LookupError):
    """No account of that id (404)."""


@dataclasses.dataclass(frozen=True)
class Stretch:
    """A time ``[start, end)`` within a period during which ``project_id`` of
    ``cloud`` belongs to the account, from membership ``number``."""

    cloud: str
    project_id: str
    number: int
    start: dt.datetime
    end: dt.datetime


def _storable(value: str) -> bool:
    return "\x00" not in value and not any("\ud800" <= c <= "\udfff" for c in value)


def _only(document: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise AccountError(f"{what} has unknown member(s): {', '.join(unknown)}")


def _name(document: dict[str, Any], member: str, limit: int = _TEXT_LIMIT) -> str:
    value = document.get(member)
    if not isinstance(value, str) or not value or len(value) > limit or not _storable(value):
        raise AccountError(f"{member} must be 1 to {limit} storable characters")
    return value


def account_id(value: str) -> str:
    if not ACCOUNT_ID.match(value):  # a short name safe in a path
        raise AccountError("account_id must be 1 to 255 letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit")
    return value


def render(row: BillingAccount) -> dict[str, Any]:
    return {"account_id": row.account_id, "description": row.description,
            "created_at": format_timestamp(row.created_at), "created_by": row.created_by}


def render_membership(row: AccountMembership) -> dict[str, Any]:
    return {"account_id": row.account_id, "cloud": row.cloud, "project_id": row.project_id,
            "number": row.number, "effective_from": format_timestamp(row.effective_from),
            "created_at": format_timestamp(row.created_at), "created_by": row.created_by}


def add(session: Session, document: dict[str, Any], who: str, now: dt.datetime
        ) -> BillingAccount:
    """Store a new account (caller commits); an id already used is a conflict."""
    _only(document, {"account_id", "description"}, "the account")
    name = account_id(_name(document, "account_id"))
    description = document.get("description", "")
    if not isinstance(description, str) or len(description) > _DESCRIPTION_LIMIT or (
            not _storable(description)):
        raise AccountError(f"description must be text of at most {_DESCRIPTION_LIMIT} "
                           "storable characters")
    if session.get(BillingAccount, name) is not None:
        raise AccountConflict(f"account {name} exists already; accounts are never edited")
    row = BillingAccount(account_id=name, description=description, created_at=now,
                         created_by=who)
    session.add(row)
    session.flush()
    return row


def get(session: Session, name: str) -> BillingAccount:
    row = session.get(BillingAccount, name)
    if row is None:
        raise UnknownAccount(f"no account {name}")
    return row


def listed(session: Session, after: str | None, limit: int) -> list[BillingAccount]:
    query = sa.select(BillingAccount).order_by(BillingAccount.account_id).limit(limit)
    if after is not None:
        query = query.where(BillingAccount.account_id > after)
    return list(session.execute(query).scalars())


def project_memberships(session: Session, cloud: str, project_id: str
                        ) -> list[AccountMembership]:
    """A project's memberships, by ``effective_from``."""
    model = AccountMembership
    query = (sa.select(model).where(model.cloud == cloud, model.project_id == project_id)
             .order_by(model.effective_from))
    return list(session.execute(query).scalars())


def memberships_of(session: Session, name: str) -> list[AccountMembership]:
    """The memberships naming account ``name``, by cloud, project and instant."""
    model = AccountMembership
    query = (sa.select(model).where(model.account_id == name)
             .order_by(model.cloud, model.project_id, model.effective_from))
    return list(session.execute(query).scalars())


def _closed_overlapping(session: Session, cloud: str, start: dt.datetime,
                        end: dt.datetime | None) -> str | None:
    """The latest closed period of ``cloud`` overlapping ``[start, end)``, if any."""
    query = sa.select(BillingPeriod.period).where(BillingPeriod.cloud == cloud)
    found = None
    for period in session.execute(query).scalars():
        period_start, period_end = periods.parse(period)
        if period_end > start and (end is None or period_start < end):
            found = max(found or period, period)
    return found


def add_membership(session: Session, name: str, document: dict[str, Any], who: str,
                   now: dt.datetime) -> AccountMembership:
    """Put ``document``'s project in account ``name`` from its ``effective_from`` on
    (caller commits).  Raises UnknownAccount, AccountError or AccountConflict."""
    get(session, name)
    _only(document, {"cloud", "project_id", "effective_from"}, "the membership")
    cloud = _name(document, "cloud")
    project_id = _name(document, "project_id")
    try:
        effective_from = parse_timestamp(document.get("effective_from"))  # type: ignore[arg-type]
    except TimestampError:
        raise AccountError("effective_from must be an RFC 3339 timestamp with an offset, "
                           "e.g. 2026-10-15T00:00:00Z") from None
    effective_from = effective_from.replace(tzinfo=None)
    existing = project_memberships(session, cloud, project_id)
    for row in existing:
        if row.effective_from == effective_from:
            raise AccountConflict(
                f"membership {row.number} of project {project_id} of cloud {cloud} already "
                f"takes effect at {format_timestamp(effective_from)}; memberships are never "
                "edited")
    later = [row.effective_from for row in existing if row.effective_from > effective_from]
    closed = _closed_overlapping(session, cloud, effective_from, min(later, default=None))
    if closed is not None:
        raise AccountConflict(
            f"effective_from falls before the end of closed period {closed} of cloud {cloud}, "
            "whose account statements this membership would change; a closed statement "
            "never changes")
    row = AccountMembership(
        cloud=cloud, project_id=project_id,
        number=max((r.number for r in existing), default=0) + 1, account_id=name,
        effective_from=effective_from, created_at=now, created_by=who)
    session.add(row)
    session.flush()
    return row


def stretches(session: Session, name: str, start: dt.datetime, end: dt.datetime
              ) -> list[Stretch]:
    """The times within ``[start, end)`` each project belongs to account ``name``,
    by cloud, project and start: each membership naming it lasts until the project's
    next membership."""
    found: list[Stretch] = []
    projects = sorted({(r.cloud, r.project_id) for r in memberships_of(session, name)})
    for cloud, project_id in projects:
        rows = project_memberships(session, cloud, project_id)
        for index, row in enumerate(rows):
            if row.account_id != name:
                continue
            until = rows[index + 1].effective_from if index + 1 < len(rows) else None
            piece_start = max(row.effective_from, start)
            piece_end = end if until is None else min(until, end)
            if piece_start < piece_end:
                found.append(Stretch(cloud, project_id, row.number, piece_start, piece_end))
    return found


def of_cloud(session: Session, cloud: str) -> list[Membership]:
    """Every project's memberships of ``cloud`` as dated stretches (each lasts until
    the project's next), by project and instant: what prices a project with its
    account's terms (``pricelist.expand``)."""
    model = AccountMembership
    rows = session.execute(sa.select(model.project_id, model.account_id, model.effective_from)
                           .where(model.cloud == cloud)
                           .order_by(model.project_id, model.effective_from)).all()
    found: list[Membership] = []
    for index, row in enumerate(rows):
        following = rows[index + 1] if index + 1 < len(rows) else None
        end = (following.effective_from
               if following is not None and following.project_id == row.project_id else None)
        found.append(Membership(row.project_id, row.account_id, row.effective_from, end))
    return found


def _in_force(rows: Sequence[AccountMembership], now: dt.datetime
              ) -> dict[tuple[str, str], AccountMembership]:
    """Per (cloud, project), the membership in force at ``now`` (the last one begun)."""
    current: dict[tuple[str, str], AccountMembership] = {}
    for row in sorted(rows, key=lambda r: r.effective_from):
        if row.effective_from <= now:
            current[(row.cloud, row.project_id)] = row
    return current


def held_now(session: Session, name: str, now: dt.datetime) -> frozenset[str]:
    """The ids of the projects account ``name`` holds at ``now`` (of any cloud)."""
    model = AccountMembership
    named = sa.select(model.cloud, model.project_id).where(model.account_id == name)
    rows = session.execute(sa.select(model).where(
        sa.tuple_(model.cloud, model.project_id).in_(named))).scalars().all()
    return frozenset(row.project_id for row in _in_force(rows, now).values()
                     if row.account_id == name)


def holding_now(session: Session, project_id: str, now: dt.datetime) -> list[str]:
    """The accounts holding project ``project_id`` at ``now``, one per cloud at most."""
    model = AccountMembership
    rows = session.execute(sa.select(model).where(model.project_id == project_id)).scalars().all()
    return sorted({row.account_id for row in _in_force(rows, now).values()})
