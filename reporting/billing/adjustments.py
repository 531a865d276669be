"""Adjustments: what later facts changed in closed periods.

A closed period Q froze, per project, its statement's lines at its ingestion cutoff
(``reporting.billing.frozen``; before revision 0015, the amount per resource,
``closed_resource_amounts``): what it billed each resource.  A fact received after that
cutoff and dated before Q's end may change what Q computes now.  Per project and
resource: ``amount = recomputed(Q) - frozen(Q) - adjustments already booked for Q``,
with the ids of the events received after the last booking that caused it.  It
belongs on the statement of the first open period after Q; that period's close books
it (``billing_adjustments``), and a still later fact makes the next adjustment.

Only resources with such late events can differ (the fold is causal in time and
closed periods' price versions never change), and only those with a late event
received after the last close that booked Q's adjustments: that close made frozen +
booked equal the truth of its snapshot for every resource.  Closes are serialised and
each one's snapshot follows the previous one's commit, so cutoffs grow in close
order, and the last close among the periods from Q up to the open period is one that
booked Q's adjustments (or Q's own): its cutoff, the largest of them, is where Q's
late facts start.  Those periods all precede the open one, so one range of the events
index per month of history finds every closed period's late facts at once: the cost
is the late facts, whatever the number of closed periods or the length of history.
There is no lookback limit.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.billing import frozen, money, periods, rating, tiers
from reporting.billing.pricelist import PriceVersion
from reporting.billing.statements import Adjustment, ResourceRef, intervals_of
from reporting.db import writes
from reporting.db.billing_models import (
    BillingPeriod,
    BookedAdjustment,
    ClosedKind,
    ClosedResourceAmount,
    ClosedStatement,
)
from reporting.db.models import Event, ResourceInterval

_CHUNK = 400
_ZERO = Decimal("0.00")
# A resource as the event index knows it: (platform, resource_type, resource_id).
_Resource = tuple[str, str, str]


def first_open_after(period: str, closed: Mapping[str, object]) -> str:
    """The first period after ``period`` that is not closed."""
    following = periods.following(period)
    while following in closed:
        following = periods.following(following)
    return following


def sources(target: str, closed: Mapping[str, BillingPeriod]) -> list[BillingPeriod]:
    """The closed periods whose adjustments belong on ``target``'s statement."""
    return [
        closed[name] for name in sorted(closed)
        if name < target and first_open_after(name, closed) == target
    ]


def settled(source: BillingPeriod, target: str, closed: Mapping[str, BillingPeriod]) -> int:
    """The receipt up to which ``source``'s adjustments are booked: the largest cutoff
    of the closed periods from ``source`` up to ``target`` (see the module's text)."""
    return max(row.cutoff_seq for name, row in closed.items() if source.period <= name < target)


def _events_of(session: Session, cloud: str, resources: Sequence[_Resource], after_seq: int,
               before: dt.datetime) -> dict[ResourceRef, list[tuple[int, str, dt.datetime]]]:
    """The events of ``resources`` received after ``after_seq`` and dated before
    ``before``, in receipt order (``ix_events_resource_order``)."""
    found: dict[ResourceRef, list[tuple[int, str, dt.datetime]]] = collections.defaultdict(list)
    for chunk in _chunks(resources):
        query = sa.select(Event.resource_type, Event.resource_id, Event.seq, Event.event_id,
                          Event.timestamp).where(
            Event.cloud == cloud,
            sa.tuple_(Event.platform, Event.resource_type, Event.resource_id).in_(chunk),
            Event.seq > after_seq, Event.timestamp < before,
        )
        for row in session.execute(query):
            found[(row.resource_type, row.resource_id)].append(
                (row.seq, row.event_id, row.timestamp))
    for events in found.values():
        events.sort()
    return found


def _chunks(items: Sequence[Any]) -> list[list[Any]]:
    return [list(items[index:index + _CHUNK]) for index in range(0, len(items), _CHUNK)]


def _by_resource(session: Session, model: Any, cloud: str, column: str, names: list[str],
                 refs: list[ResourceRef]) -> list[Any]:
    """The rows of ``model`` of ``refs`` whose ``column`` (a period) is in ``names``."""
    rows: list[Any] = []
    for chunk in _chunks(refs):
        query: Any = sa.select(model).where(
            model.cloud == cloud, getattr(model, column).in_(names),
            sa.tuple_(model.resource_type, model.resource_id).in_(chunk),
        )
        rows.extend(session.execute(query).scalars())
    return rows


def _frozen_base(session: Session, cloud: str, wanted: Mapping[str, set[ResourceRef]],
                 projects: Mapping[ResourceRef, set[str]], closed: Mapping[str, BillingPeriod]
                 ) -> dict[tuple[str, str, ResourceRef], Decimal]:
    """What the frozen lines billed the resources ``wanted`` per closed period, per
    (period, project); a line's project is one its resource's events named
    (``projects``), so only those statements are read."""
    pairs = sorted({(name, project) for name, refs in wanted.items() for ref in refs
                    for project in projects.get(ref, {""})})
    ids = {rid for refs in wanted.values() for _rtype, rid in refs}
    rows: list[ClosedStatement] = []
    for chunk in _chunks(pairs):
        query = sa.select(ClosedStatement).where(
            ClosedStatement.cloud == cloud, ClosedStatement.lines_at.is_not(None),
            sa.tuple_(ClosedStatement.period, ClosedStatement.project_id).in_(chunk))
        rows.extend(session.execute(query).scalars())
    kinds = frozen.kinds_of_periods(session, cloud, sorted({row.period for row in rows}))
    base: dict[tuple[str, str, ResourceRef], Decimal] = collections.defaultdict(lambda: _ZERO)
    for row in rows:
        for line in frozen.lines(session, row, ids, kinds[row.period],
                                 closed[row.period].minor_units):
            ref = (line.resource_type, line.resource_id)
            if ref in wanted[row.period] and line.amount is not None:
                key = (row.period, row.project_id, ref)
                base[key] = money.add(base[key], line.amount)
    return base


def _projects_of(session: Session, cloud: str, resources: Sequence[_Resource]
                 ) -> dict[ResourceRef, set[str]]:
    """Every project the events of each of ``resources`` name (and the empty one)."""
    found: dict[ResourceRef, set[str]] = collections.defaultdict(lambda: {""})
    for chunk in _chunks(resources):
        query = sa.select(Event.resource_type, Event.resource_id, Event.project_id).distinct(
        ).where(Event.cloud == cloud,
                sa.tuple_(Event.platform, Event.resource_type, Event.resource_id).in_(chunk))
        for row in session.execute(query):
            found[(row.resource_type, row.resource_id)].add(row.project_id)
    return found


def _adjustments(
    session: Session, cloud: str, late: Mapping[str, Sequence[_Resource]],
    closed: Mapping[str, BillingPeriod], versions: list[PriceVersion], now: dt.datetime,
    project_id: str | None,
) -> list[Adjustment]:
    """The adjustments of the closed periods ``late`` names, each for its resources with
    a late fact not booked yet (one project's, if given): a fixed number of queries for
    all of them, whatever their number."""
    names = sorted(late)
    resources = sorted({resource for found in late.values() for resource in found})
    refs = sorted({(rtype, rid) for _platform, rtype, rid in resources})
    bounds = {name: periods.parse(name) for name in names}
    first, last = bounds[names[0]][0], bounds[names[-1]][1]
    history = _events_of(session, cloud, resources,
                         min(closed[name].cutoff_seq for name in names), last)
    items = intervals_of(session, cloud, first, last, resources)
    wanted = {name: {(rtype, rid) for _platform, rtype, rid in late[name]} for name in names}
    projects = _projects_of(session, cloud, resources)
    base = _frozen_base(session, cloud, wanted, projects, closed)
    for legacy in _by_resource(session, ClosedResourceAmount, cloud, "period", names, refs):
        key = (legacy.period, legacy.project_id, (legacy.resource_type, legacy.resource_id))
        base[key] = money.add(base[key], legacy.amount)
    booked_until: dict[tuple[str, ResourceRef], int] = {}
    for booked in _by_resource(session, BookedAdjustment, cloud, "source_period", names, refs):
        ref = (booked.resource_type, booked.resource_id)
        key = (booked.source_period, booked.project_id, ref)
        base[key] = money.add(base[key], booked.amount)
        until = (booked.source_period, ref)
        booked_until[until] = max(booked_until.get(until, 0), booked.cutoff_seq)
    result: list[Adjustment] = []
    for name in names:
        source = closed[name]
        start, end = bounds[name]
        recomputed: dict[tuple[str, ResourceRef], Decimal] = collections.defaultdict(
            lambda: _ZERO)
        mine = [item for item in items
                if (item.resource_type, item.resource_id) in wanted[name]]
        # recomputed in the minor units the period was closed in, as its frozen lines
        for line in rating.rate_intervals(mine, versions, start, end, now,
                                          source.minor_units):
            if line.amount is not None:
                line_key = (line.project_id, (line.resource_type, line.resource_id))
                recomputed[line_key] = money.add(recomputed[line_key], line.amount)
        frozen_here = {(project, ref): amount for (period, project, ref), amount in base.items()
                       if period == name and ref in wanted[name]}
        for project, ref in sorted(set(recomputed) | set(frozen_here)):
            if project_id is not None and project != project_id:
                continue
            amount = money.subtract(recomputed[(project, ref)],
                                    frozen_here.get((project, ref), _ZERO))
            if amount == 0:
                continue
            events = [(seq, event_id) for seq, event_id, when in history.get(ref, [])
                      if seq > source.cutoff_seq and when < end]
            since = booked_until.get((name, ref), source.cutoff_seq)
            causes = [event_id for seq, event_id in events if seq > since] or [
                event_id for _seq, event_id in events
            ]
            result.append(Adjustment(name, project, ref[0], ref[1], amount, causes))
        result.extend(_tier_adjustments(session, cloud, source, wanted[name], projects, history,
                                        versions, now, project_id))
    return result


def _tier_adjustments(
    session: Session, cloud: str, source: BillingPeriod, late: set[ResourceRef],
    projects: Mapping[ResourceRef, set[str]],
    history: Mapping[ResourceRef, list[tuple[int, str, dt.datetime]]],
    versions: list[PriceVersion], now: dt.datetime, project_id: str | None,
) -> list[Adjustment]:
    """The adjustments of the tier lines (``tiers``) of closed period ``source`` that
    its late resources ``late`` change: per project their events name and tiered type
    they are of, the tier line recomputed now − frozen − booked, as for a resource.  A
    tier line depends only on its project's lines of its type, so it changes only
    when one of those resources has a late fact.  A fixed number of queries for all
    those projects: their tier lines now summed set-based where the database can
    (``tier_lines_of``), their frozen statements, their booked tier adjustments."""
    start, end = periods.parse(source.period)
    types = tiers.tiered_types(v for v in versions if v.effective_from < end)
    touched = sorted(ref for ref in late if ref[0] in types)
    if not touched:
        return []
    owners = sorted({project for ref in touched for project in projects.get(ref, ())
                     if project and (project_id is None or project == project_id)})
    if not owners:
        return []
    # a tier line's adjustments name its version's label (and a volume type's tiers
    # that type too) as the resource id, which no resource's id can be (it holds a "/")
    ids = sorted(tiers.adjusted_ids(v for v in versions if v.effective_from < end))
    late_of: dict[str, list[ResourceRef]] = collections.defaultdict(list)
    for ref in touched:
        for project in projects.get(ref, ()):
            late_of[project].append(ref)
    recomputed: dict[str, dict[ResourceRef, Decimal]] = collections.defaultdict(dict)
    for tier in writes.of(session).tier_lines_of(session, cloud, versions, start, end, now,
                                                 source.minor_units, owners):
        mine_now = recomputed[tier.project_id]
        mine_now[tier.adjusted_as] = money.add(mine_now.get(tier.adjusted_as, _ZERO),
                                               tier.amount)
    # The group's resources then and now: the late ones among them are the causes
    # (the same whoever asks: one project's statement reads only these).
    members = _lines_now(session, cloud, start, min(end, now), touched)
    frozen_rows = _frozen_statements(session, cloud, source.period, owners)
    known = frozen.kinds(session, cloud, source.period) if any(
        row.lines_at is not None for row in frozen_rows.values()) else {}
    base: dict[str, dict[ResourceRef, Decimal]] = collections.defaultdict(dict)
    booked_until: dict[tuple[str, ResourceRef], int] = {}
    for chunk in _chunks(owners):
        query = sa.select(BookedAdjustment).where(
            BookedAdjustment.cloud == cloud, BookedAdjustment.source_period == source.period,
            BookedAdjustment.project_id.in_(chunk),
            BookedAdjustment.resource_type.in_(sorted(types)),
            BookedAdjustment.resource_id.in_(ids))
        for booked in session.execute(query).scalars():
            ref = (booked.resource_type, booked.resource_id)
            booked_base = base[booked.project_id]
            booked_base[ref] = money.add(booked_base.get(ref, _ZERO), booked.amount)
            until = (booked.project_id, ref)
            booked_until[until] = max(booked_until.get(until, 0), booked.cutoff_seq)
    found: list[Adjustment] = []
    for project in owners:
        mine = late_of[project]
        kinds = {rtype for rtype, _rid in mine}
        mine_base = {ref: amount for ref, amount in base[project].items() if ref[0] in kinds}
        row = frozen_rows.get(project)
        if row is not None:
            for frozen_tier in json.loads(row.body).get("tiers", []):
                key = (frozen_tier["resource_type"], tiers.adjusted_id(
                    frozen_tier["price_list_version"], frozen_tier.get("volume_type")))
                if key[0] in kinds:
                    mine_base[key] = money.add(mine_base.get(key, _ZERO),
                                               Decimal(frozen_tier["amount"]))
            if row.lines_at is not None:
                members.update((project, ref) for ref in frozen.resources(row, known))
        mine_now = {ref: amount for ref, amount in recomputed[project].items()
                    if ref[0] in kinds}
        for key in sorted(set(mine_now) | set(mine_base)):
            amount = money.subtract(mine_now.get(key, _ZERO), mine_base.get(key, _ZERO))
            if amount == 0:
                continue
            of_type = [ref for ref in mine if ref[0] == key[0] and (project, ref) in members]
            events = sorted((seq, event_id) for ref in of_type
                            for seq, event_id, when in history.get(ref, [])
                            if seq > source.cutoff_seq and when < end)
            since = booked_until.get((project, key), source.cutoff_seq)
            causes = [event_id for seq, event_id in events if seq > since] or [
                event_id for _seq, event_id in events]
            found.append(Adjustment(source.period, project, key[0], key[1], amount, causes))
    return found


def _lines_now(session: Session, cloud: str, start: dt.datetime, cap: dt.datetime,
               refs: Sequence[ResourceRef]) -> set[tuple[str, ResourceRef]]:
    """``(project, resource)`` of each of ``refs`` with a line in ``[start, cap)`` now:
    an interval of it overlapping it, in that project."""
    found: set[tuple[str, ResourceRef]] = set()
    if cap <= start:
        return found
    wanted = set(refs)
    model = ResourceInterval
    for chunk in _chunks(sorted({rid for _rtype, rid in refs})):
        query = sa.select(model.project_id, model.resource_type, model.resource_id).distinct(
        ).where(model.cloud == cloud, model.resource_id.in_(chunk), model.start < cap,
                sa.or_(model.end.is_(None), model.end > start))
        found.update((row.project_id, (row.resource_type, row.resource_id))
                     for row in session.execute(query)
                     if (row.resource_type, row.resource_id) in wanted)
    return found


def _frozen_statements(session: Session, cloud: str, period: str, projects: Sequence[str]
                       ) -> dict[str, ClosedStatement]:
    """The closed statements of ``period`` of ``projects`` (those it has), by project."""
    rows: dict[str, ClosedStatement] = {}
    for chunk in _chunks(projects):
        query = sa.select(ClosedStatement).where(
            ClosedStatement.cloud == cloud, ClosedStatement.period == period,
            ClosedStatement.project_id.in_(chunk))
        rows.update((row.project_id, row) for row in session.execute(query).scalars())
    return rows


def pending(
    session: Session, cloud: str, target: str, closed: Mapping[str, BillingPeriod],
    versions: list[PriceVersion], now: dt.datetime, project_id: str | None = None,
) -> list[Adjustment]:
    """Every adjustment the statement of open period ``target`` carries now."""
    found_sources = sources(target, closed)
    if not found_sources:
        return []
    # Thresholds shrink and ends grow with the period: the latest source's range holds
    # every source's late facts.
    thresholds = {s.period: settled(s, target, closed) for s in found_sources}
    latest = found_sources[-1]
    before = periods.parse(latest.period)[1]
    if project_id is None:
        events = writes.of(session).late_events(session, cloud, before,
                                                thresholds[latest.period])
    else:
        # One project's statement reads its own facts: the late events of the
        # resources it could be adjusted for, not every late fact of the cloud.
        names = [s.period for s in found_sources]
        candidates = _resources_of_project(session, cloud, project_id, names)
        events = _late_events_of(session, cloud, candidates, before,
                                 thresholds[latest.period])
    late: dict[str, list[_Resource]] = {}
    for source in found_sources:
        end = periods.parse(source.period)[1]
        resources = sorted({(e.platform, e.resource_type, e.resource_id) for e in events
                            if e.seq > thresholds[source.period] and e.timestamp < end})
        if resources:
            late[source.period] = resources
    if not late:
        return []
    return _adjustments(session, cloud, late, closed, versions, now, project_id)


def _resources_of_project(session: Session, cloud: str, project_id: str,
                          names: Sequence[str]) -> set[ResourceRef]:
    """Every resource an adjustment of ``project_id`` for the closed periods ``names``
    can be about: one with an interval of the project overlapping them (what they
    compute now), a frozen line in the project's statement of one of them (what they
    billed), or an amount booked or frozen per resource for the project (before
    revision 0015).  An adjustment of the project for any other resource is zero, so
    the project's adjustments are those of these resources alone."""
    bounds = [periods.parse(name) for name in names]
    first, last = min(b[0] for b in bounds), max(b[1] for b in bounds)
    model = ResourceInterval
    found: set[ResourceRef] = set()
    query: Any = sa.select(model.resource_type, model.resource_id).where(
        model.project_id == project_id, model.cloud == cloud, model.start < last,
        sa.or_(model.end.is_(None), model.end > first))
    found.update((row.resource_type, row.resource_id) for row in session.execute(query))
    for per_resource in (BookedAdjustment, ClosedResourceAmount):
        column = (per_resource.source_period if per_resource is BookedAdjustment
                  else per_resource.period)
        query = sa.select(per_resource.resource_type, per_resource.resource_id).where(
            per_resource.cloud == cloud, column.in_(list(names)),
            per_resource.project_id == project_id)
        found.update((row.resource_type, row.resource_id) for row in session.execute(query))
    statement = ClosedStatement
    query = sa.select(statement.period, statement.line_resource_ids, statement.line_kinds).where(
        statement.cloud == cloud, statement.period.in_(list(names)),
        statement.project_id == project_id, statement.lines_at.is_not(None))
    rows = list(session.execute(query))
    if rows:
        types = {(row.period, row.kind): row.resource_type for row in session.execute(
            sa.select(ClosedKind.period, ClosedKind.kind, ClosedKind.resource_type).where(
                ClosedKind.cloud == cloud,
                ClosedKind.period.in_(sorted({row.period for row in rows}))))}
        for row in rows:
            for resource_id, coded in zip(row.line_resource_ids or [], row.line_kinds or [],
                                          strict=True):
                found.add((types[(row.period, coded // 2)], resource_id))
    return found


def _late_events_of(session: Session, cloud: str, resources: set[ResourceRef],
                    before: dt.datetime, after_seq: int) -> list[Any]:
    """``late_events`` of ``resources`` only (``ix_events_resource_order``)."""
    found: list[Any] = []
    by_id = sorted({rid for _rtype, rid in resources})
    for chunk in _chunks(by_id):
        query = sa.select(Event.platform, Event.resource_type, Event.resource_id, Event.seq,
                          Event.event_id, Event.timestamp).where(
            Event.resource_id.in_(chunk), Event.cloud == cloud,
            Event.seq > after_seq, Event.timestamp < before)
        found.extend(row for row in session.execute(query)
                     if (row.resource_type, row.resource_id) in resources)
    return found
