"""Default billing accounts: a project no membership names joins the account its
platform groups it in (keystone's domain, ``adapter_config`` ``accounts_by_domain``),
booked by the sync as ordinary memberships (``docs/statements.md``, "Billing
accounts").

Such a membership takes effect at the end of the cloud's last closed period, or,
before any close, at the start of the month of the cloud's first observation: it
never changes a closed statement, and it covers every open month of the project's
history.  A project with any membership (an operator's, or one booked here before)
is never touched again: an operator moves it with a membership of their own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import accounts, locks, observed, periods
from reporting.db import writes
from reporting.db.account_models import AccountMembership, BillingAccount
from reporting.db.billing_models import BillingPeriod

# created_by of what this module books.
BOOKED_BY = "tally-sync (default account)"


def takes_effect(session: Session, cloud: str, at: dt.datetime) -> dt.datetime:
    """When a default membership of ``cloud`` booked at ``at`` takes effect."""
    closed = session.execute(
        sa.select(BillingPeriod.period).where(BillingPeriod.cloud == cloud)).scalars()
    ends = [periods.parse(name)[1] for name in closed]
    if ends:
        return max(ends)
    first = observed.first_observation(session, cloud)
    moment = min(first[0], at) if first is not None else at
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def assign(factory: sessionmaker[Session], cloud: str,
           defaults: Mapping[str, tuple[str, str]], problems: list[str],
           at: dt.datetime, now: dt.datetime) -> dict[str, Any]:
    """Book the default membership of every project of ``defaults`` (project id ->
    (account id, description)) that no membership names yet; returns what was done,
    for the run's stats."""
    report: dict[str, Any] = {"projects_listed": len(defaults), "accounts_added": [],
                              "memberships_added": 0, "errors": list(problems)}
    with factory() as session, session.begin():
        seam = writes.of(session)
        seam.begin_write(session)
        # A close and a membership exclude each other (reporting.api.accounts).
        seam.xact_lock(session, locks.PRICES_KEY)
        held = set(session.execute(
            sa.select(AccountMembership.project_id).where(AccountMembership.cloud == cloud)
        ).scalars())
        todo = {project: named for project, named in defaults.items() if project not in held}
        if not todo:
            return report
        start = takes_effect(session, cloud, at)
        refused: set[str] = set()
        for account, description in sorted(set(todo.values())):
            try:
                accounts.account_id(account)
            except accounts.AccountError as exc:
                refused.add(account)
                report["errors"].append(f"the default account {account!r} of {description} "
                                        f"cannot be named so: {exc}")
                continue
            if session.get(BillingAccount, account) is None:
                session.add(BillingAccount(account_id=account, description=description,
                                           created_at=now, created_by=BOOKED_BY))
                report["accounts_added"].append(account)
        session.flush()
        for project, (account, _description) in sorted(todo.items()):
            if account in refused:
                continue
            session.add(AccountMembership(
                cloud=cloud, project_id=project, number=1, account_id=account,
                effective_from=start, created_at=now, created_by=BOOKED_BY))
            report["memberships_added"] += 1
    return report
