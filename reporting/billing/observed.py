"""Where a cloud's history begins: its first observation (``docs/statements.md``).

A reconciled cloud is first observed by its first completed sync run: the run lists
everything alive, so from its instant (``sync_runs.started_at``, the instant it
listed the cloud as of) the history holds every resource.  Before it, the history is
whatever the run dated back (creates at the platform's creation instants): the
survivors only.  A cloud that is collected but not reconciled (no completed run) is
first observed by the first notification the collector heard of it: the earliest
``timestamp`` of its events with ``source = collector``.  A month ending at or before
the first observation is not billable; a month it falls inside is closed only when
the admin accepts the partial history explicitly.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import periods
from reporting.db.billing_models import BillingPeriod
from reporting.db.models import Event, SyncRun


class BeforeHistory(ValueError):
    """A month that ends at or before the cloud's first observation (409)."""


def _first_run(session: Session, cloud: str) -> dt.datetime | None:
    return session.execute(
        sa.select(sa.func.min(SyncRun.started_at))
        .where(SyncRun.cloud == cloud, SyncRun.status == "completed")
    ).scalar()


def first_observation(session: Session, cloud: str) -> tuple[dt.datetime, str] | None:
    """The instant ``cloud``'s history begins and what observed it then (None: nothing
    has observed it yet)."""
    run = _first_run(session, cloud)
    if run is not None:
        return run, "its first completed sync run"
    heard = session.execute(
        sa.select(sa.func.min(Event.timestamp))
        .where(Event.cloud == cloud, Event.source == "collector")
    ).scalar()
    return None if heard is None else (heard, "the first notification the collector heard")


def observed_before(session: Session, cloud: str, end: dt.datetime) -> bool:
    """Whether ``cloud`` was first observed before ``end`` (cheap: one existence test
    once a run completed, else one collector event dated before ``end``)."""
    run = _first_run(session, cloud)
    if run is not None:
        return run < end
    return session.execute(
        sa.select(Event.seq).where(Event.cloud == cloud, Event.source == "collector",
                                   Event.timestamp < end).limit(1)
    ).first() is not None


def before_history_reason(cloud: str, period: str,
                          first: tuple[dt.datetime, str] | None) -> str:
    if first is None:
        return (f"period {period} of {cloud} is not billable: nothing has observed the cloud "
                "yet (no completed sync run, no notification from the collector)")
    return (f"period {period} of {cloud} is not billable: it ends before the cloud's history "
            f"begins at {format_timestamp(first[0])} ({first[1]}); a statement of it would "
            "bill only the resources that survived until then")


def require_observed(session: Session, cloud: str, period: str, end: dt.datetime) -> None:
    """Raise BeforeHistory when ``period`` (ending at ``end``) is wholly before the
    cloud's first observation."""
    if not observed_before(session, cloud, end):
        raise BeforeHistory(before_history_reason(cloud, period,
                                                  first_observation(session, cloud)))


def not_billable(session: Session, cloud: str, period: str) -> str | None:
    """Why ``period`` of ``cloud`` is not billable (None: it is): open and wholly before
    the cloud's first observation.  An account's statement has no section there, and
    whether it is closed is decided without it (``reporting.billing.account_terms``)."""
    if session.get(BillingPeriod, (cloud, period)) is not None:
        return None
    if observed_before(session, cloud, periods.parse(period)[1]):
        return None
    return before_history_reason(cloud, period, first_observation(session, cloud))
