"""The diff of one run: an observation against the projection, as corrections.

Pure: the runner reads the rows and books what this returns.  The rules are those
of docs/reconciliation.md, "What a run defers" and "How a delete was dated":

| correction | transitional | recent (settle window) | dated at |
|---|---|---|---|
| create | resource in transition | platform changed it in the window, or the row's newest event is in it | platform creation instant (poll when none), restated at the poll |
| update | resource in transition | as create | poll |
| reported delete | never | the deletion, or the row's newest event, is in the window | the platform's deletion instant |
| delete by absence | never | the row's newest event is in the window | poll |

The window is ``[at - settle, horizon]``: an instant after the poll counts as inside,
up to the horizon (the cloud's present plus ingest's future skew; an instant past it
was dated by a wrong clock, is never deferred for and never dates a correction).
``settle == 0`` turns it off.  A correction dated behind the row's newest event is
dated one microsecond past it instead, so the fold orders it last (unless that event
lies past the horizon).  A create dated
before the poll carries a second event, a ``sync.update`` of the same attributes at the
poll: what the run observed stays the resource's from the poll on, whatever fact dated
between the creation and the poll arrives after the run.  A row the
projection holds as deleted is skipped: the first delete of a resource stands.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal

from mapping import event as canonical
from reporting.sync.observation import Observation, ObservedResource, ReportedDeletion

Action = Literal["create", "update", "delete"]
Reason = Literal["transition", "recent"]

ONE_MICROSECOND = dt.timedelta(microseconds=1)
ACTION_STAT = {"create": "created", "update": "updated", "delete": "deleted"}


@dataclasses.dataclass(frozen=True)
class ProjectionRow:
    """The parts of a ``current_resources`` row the diff reads."""

    resource_type: str
    resource_id: str
    project_id: str
    state: str | None
    size: Mapping[str, Any] | None
    live: bool
    last_event_at: dt.datetime  # naive UTC


@dataclasses.dataclass(frozen=True)
class Correction:
    action: Action
    resource_type: str
    resource_id: str
    event: dict[str, Any]
    # A create dated before the poll also books what the run observed as a
    # ``sync.update`` at the poll, so a fact dated in between that arrives later cannot
    # outlive the observation (docs/reconciliation.md, "A create is restated at the poll").
    restated: dict[str, Any] | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return [self.event] if self.restated is None else [self.event, self.restated]


@dataclasses.dataclass
class Plan:
    corrections: list[Correction] = dataclasses.field(default_factory=list)
    deferred: dict[str, int] = dataclasses.field(
        default_factory=lambda: {"transition": 0, "recent": 0}
    )
    # Rows whose newest event lies past the horizon (reported in the run's log).
    beyond_horizon: int = 0
    # An incremental run: how many listed resources of the types listed whole it did
    # not diff (``unchanged_since``); None in a full run.
    unchanged: int | None = None


@dataclasses.dataclass(frozen=True)
class RunContext:
    """The fixed facts of one run the diff needs."""

    run_id: str
    platform: str
    cloud: str
    at: dt.datetime  # naive UTC: the run's one clock
    settle: dt.timedelta
    # The latest instant a true fact can carry (the cloud's present plus ingest's
    # future skew, docs/reconciliation.md "Instants from the future"); None: unknown.
    horizon: dt.datetime | None = None

    def inside_window(self, instant: dt.datetime | None) -> bool:
        """Whether ``instant`` lies in the settle window before the run (or after it,
        up to the horizon: an instant past it was dated by a wrong clock and would
        defer the resource for ever)."""
        if instant is None or not self.settle or self.beyond_horizon(instant):
            return False
        return instant >= self.at - self.settle

    def beyond_horizon(self, instant: dt.datetime) -> bool:
        return self.horizon is not None and instant > self.horizon


def _dated(ctx: RunContext, instant: dt.datetime, row: ProjectionRow | None) -> dt.datetime:
    # An instant past the horizon (a platform clock far ahead) is not a fact's: the
    # run's own instant dates the correction instead.
    if ctx.beyond_horizon(instant):
        instant = ctx.at
    # A correction the fold does not order last decides nothing; but it is never
    # pushed past an event beyond the horizon, which ingest would refuse it for.
    if row is not None and instant < row.last_event_at and not ctx.beyond_horizon(
            row.last_event_at):
        return row.last_event_at + ONE_MICROSECOND
    return instant


def _event(
    ctx: RunContext,
    action: Action,
    resource_type: str,
    resource_id: str,
    project_id: str,
    timestamp: dt.datetime,
    payload: dict[str, Any],
) -> dict[str, Any]:
    provider = {"sync_run_id": ctx.run_id, **payload.pop("provider", {})}
    return {
        "event_id": canonical.correction_event_id(
            ctx.run_id, ctx.platform, ctx.cloud, resource_type, resource_id, action
        ),
        "event_type": f"sync.{action}",
        "platform": ctx.platform,
        "cloud": ctx.cloud,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "timestamp": canonical.format_timestamp(timestamp),
        "source": canonical.SOURCE_RECONCILIATION,
        "payload": {**payload, "provider": provider},
    }


def _attributes(observed: ObservedResource) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if observed.state is not None:
        payload["state"] = observed.state
    if observed.size is not None:
        payload["size"] = dict(observed.size)
    return payload


def _differs(observed: ObservedResource, row: ProjectionRow) -> bool:
    if observed.project_id and observed.project_id != row.project_id:
        return True
    if observed.state is not None and observed.state != row.state:
        return True
    return observed.size is not None and dict(observed.size) != dict(row.size or {})


class _Planner:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.plan = Plan()

    def defer(self, reason: Reason) -> None:
        self.plan.deferred[reason] += 1

    def book(self, action: Action, rtype: str, rid: str, project: str,
             timestamp: dt.datetime, payload: dict[str, Any],
             restated_at: dt.datetime | None = None) -> None:
        restated = None
        if restated_at is not None and restated_at > timestamp:
            again = {key: dict(value) if isinstance(value, dict) else value
                     for key, value in payload.items()}
            again["provider"] = {"dated_by": "poll", "restates": "sync.create"}
            restated = _event(self.ctx, "update", rtype, rid, project, restated_at, again)
        event = _event(self.ctx, action, rtype, rid, project, timestamp, payload)
        self.plan.corrections.append(Correction(action, rtype, rid, event, restated))

    def observed(self, observed: ObservedResource, row: ProjectionRow | None) -> None:
        live_row = row if row is not None and row.live else None
        if live_row is not None and not _differs(observed, live_row):
            return  # matches its row: no correction, counted nowhere
        if observed.in_transition:
            self.defer("transition")
            return
        if self.ctx.inside_window(observed.last_changed) or (
            row is not None and self.ctx.inside_window(row.last_event_at)
        ):
            self.defer("recent")
            return
        rtype, rid = observed.resource_type, observed.resource_id
        if live_row is None:
            instant = observed.created_at or self.ctx.at
            self.book("create", rtype, rid, observed.project_id, _dated(self.ctx, instant, row),
                      _attributes(observed), restated_at=_dated(self.ctx, self.ctx.at, row))
        else:
            project = observed.project_id or live_row.project_id
            self.book("update", rtype, rid, project, _dated(self.ctx, self.ctx.at, row),
                      _attributes(observed))

    def reported(self, deletion: ReportedDeletion, row: ProjectionRow) -> None:
        if self.ctx.inside_window(deletion.deleted_at) or self.ctx.inside_window(
            row.last_event_at
        ):
            self.defer("recent")
            return
        provider = {
            "dated_by": "platform",
            "deleted_at": canonical.format_timestamp(deletion.deleted_at),
        }
        self.book("delete", deletion.resource_type, deletion.resource_id,
                  deletion.project_id or row.project_id,
                  _dated(self.ctx, deletion.deleted_at, row), {"provider": provider})

    def absent(self, row: ProjectionRow, last_seen_alive: dt.datetime | None) -> None:
        if self.ctx.inside_window(row.last_event_at):
            self.defer("recent")
            return
        provider = {
            "dated_by": "poll",
            "polled_at": canonical.format_timestamp(self.ctx.at),
            "last_seen_alive": (
                canonical.format_timestamp(last_seen_alive) if last_seen_alive else None
            ),
        }
        self.book("delete", row.resource_type, row.resource_id, row.project_id,
                  _dated(self.ctx, self.ctx.at, row), {"provider": provider})


def unchanged_since(observation: Observation, since: dt.datetime,
                    live: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
    """The resources of the types listed whole in an incremental run that the run
    does not diff: live in the projection (``live``) and unchanged on the platform
    since ``since``, the run's lower bound (their last change before it, floored to
    the second as the bound the services are asked with: a platform that keeps whole
    seconds truncates).  The runs since their last change diffed them as they are now,
    as the unchanged resources of the types listed by change; they only count as
    present, so none of them is deleted for being absent."""
    floor = since.replace(microsecond=0)
    return {(o.resource_type, o.resource_id) for o in observation.resources
            if o.resource_type in observation.enumerated_types
            and o.last_changed is not None and o.last_changed < floor
            and (o.resource_type, o.resource_id) in live}


def plan_corrections(
    ctx: RunContext,
    observation: Observation,
    rows: Iterable[ProjectionRow],
    held_deleted: set[tuple[str, str]],
    last_seen_alive: Mapping[tuple[str, str], dt.datetime] | None = None,
    unchanged: Collection[tuple[str, str]] = (),
) -> Plan:
    """Diff ``observation`` against the projection.

    ``rows`` are the rows not held as deleted (live ones, and rows an update made
    without a create); ``held_deleted`` the keys of rows held as deleted, which the
    diff skips.  ``last_seen_alive`` maps a key to the start of the newest completed
    run that listed it, recorded in a delete by absence.  ``unchanged``
    (``unchanged_since``) are listed, so present, but not diffed: ``rows`` need not
    hold them.
    """
    planner = _Planner(ctx)
    by_key = {(row.resource_type, row.resource_id): row for row in rows}
    planner.plan.beyond_horizon = sum(ctx.beyond_horizon(row.last_event_at)
                                      for row in by_key.values())
    seen_alive = last_seen_alive or {}
    named: set[tuple[str, str]] = set(observation.unknown)

    for observed in observation.resources:
        key = (observed.resource_type, observed.resource_id)
        named.add(key)
        if key in held_deleted or key in observation.unknown or key in unchanged:
            continue
        planner.observed(observed, by_key.get(key))

    for deletion in observation.deletions:
        key = (deletion.resource_type, deletion.resource_id)
        if key in named:
            continue  # listed live (an id is never reused): the live listing decides
        named.add(key)
        row = by_key.get(key)
        if row is None:
            continue  # never booked, or held as deleted: nothing to end
        if deletion.deleted_at > ctx.at:
            # Destroyed after the instant the run is at: the platform's instant lies
            # outside the period the run reconciles, so it is treated like an
            # absence, deferred as recent while the window is on.
            if ctx.settle and not ctx.beyond_horizon(deletion.deleted_at):
                planner.defer("recent")
            elif row.live:
                planner.absent(row, seen_alive.get(key))
            continue
        planner.reported(deletion, row)

    for key, row in by_key.items():
        if key in named or not row.live or row.resource_type not in observation.enumerated_types:
            continue
        planner.absent(row, seen_alive.get(key))
    return planner.plan
