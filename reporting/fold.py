"""The projection as a pure fold (docs/reporting-api.md).

A resource's row and its lifecycle are functions of its ordered history and of
nothing else: events are applied in ``(timestamp, seq)`` order, where ``seq`` is the
receipt order.  No I/O happens here; storage decides which events to feed in (the
whole history for a late event, just the new one for an event that sorts last).

Rules:
- a create makes the resource live (a create while live is an update that may
  carry a new size; the live period keeps its first instant);
- a delete ends it (project may be empty on a delete and then keeps the old one);
- an update changes what it carries: a non-empty project, a present state, a present
  size (which replaces the whole size); absent means "unchanged";
- the lifecycle is the list of intervals ``[start, end)`` during which the resource
  was live with one (project, state, size), each naming the event that opened it.
  Zero-length intervals (two facts at the same instant) are dropped: they cover no
  time, and the history still holds both events.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from mapping.event import verb


@dataclasses.dataclass(frozen=True)
class FoldEvent:
    """The parts of a stored event the fold reads."""

    event_id: str
    event_type: str
    project_id: str
    timestamp: dt.datetime  # naive UTC
    payload: Mapping[str, Any]
    seq: int

    @property
    def order_key(self) -> tuple[dt.datetime, int]:
        return (self.timestamp, self.seq)


@dataclasses.dataclass(frozen=True)
class ResourceState:
    """What ``current_resources`` holds for one resource."""

    project_id: str
    state: str | None
    size: dict[str, Any] | None
    live: bool
    created_at: dt.datetime | None
    deleted_at: dt.datetime | None
    last_event_at: dt.datetime
    last_event_id: str
    last_event_seq: int


@dataclasses.dataclass(frozen=True)
class Interval:
    """One lifecycle interval ``[start, end)``; ``end`` is None while open."""

    start: dt.datetime
    end: dt.datetime | None
    project_id: str
    state: str | None
    size: dict[str, Any] | None
    event_id: str


def apply(current: ResourceState | None, event: FoldEvent) -> ResourceState:
    """Apply one event that sorts after every event ``current`` was folded from."""
    kind = verb(event.event_type)
    payload = event.payload or {}
    project = event.project_id or (current.project_id if current else "")
    state = payload["state"] if "state" in payload else (current.state if current else None)
    size = payload["size"] if "size" in payload else (current.size if current else None)
    live = current.live if current else False
    created_at = current.created_at if current else None
    deleted_at = current.deleted_at if current else None
    if kind == "create":
        if not live:
            created_at, deleted_at = event.timestamp, None
        live = True
    elif kind == "delete":
        if live or deleted_at is None:
            deleted_at = event.timestamp
        live = False
    return ResourceState(
        project_id=project,
        state=state,
        size=dict(size) if size is not None else None,
        live=live,
        created_at=created_at,
        deleted_at=deleted_at,
        last_event_at=event.timestamp,
        last_event_id=event.event_id,
        last_event_seq=event.seq,
    )


def _attributes(state: ResourceState) -> tuple[str, str | None, Any]:
    return (state.project_id, state.state, state.size)


def extend_lifecycle(
    intervals: list[Interval], before: ResourceState | None, after: ResourceState, event: FoldEvent
) -> list[Interval]:
    """The lifecycle after ``event`` turned ``before`` into ``after``.

    Returns a new list; only the last interval can change, so this is O(1) for the
    incremental case.
    """
    result = list(intervals)
    was_live = bool(before and before.live)
    changed = before is None or _attributes(before) != _attributes(after)
    if was_live and (not after.live or changed):
        last = result.pop()
        if event.timestamp > last.start:
            # Not dataclasses.replace: it costs more than the rest of the fold step.
            result.append(Interval(start=last.start, end=event.timestamp,
                                   project_id=last.project_id, state=last.state,
                                   size=last.size, event_id=last.event_id))
    if after.live and (not was_live or changed):
        result.append(
            Interval(
                start=event.timestamp,
                end=None,
                project_id=after.project_id,
                state=after.state,
                size=after.size,
                event_id=event.event_id,
            )
        )
    return result


def fold(events: Iterable[FoldEvent]) -> tuple[ResourceState | None, list[Interval]]:
    """Fold a resource's whole history, in any order, into its row and lifecycle."""
    state: ResourceState | None = None
    intervals: list[Interval] = []
    for event in sorted(events, key=lambda e: e.order_key):
        after = apply(state, event)
        intervals = extend_lifecycle(intervals, state, after, event)
        state = after
    return state, intervals


def live_at(intervals: Iterable[Interval], instant: dt.datetime) -> Interval | None:
    """The interval covering ``instant``, if the resource was live then."""
    for interval in intervals:
        if interval.start <= instant and (interval.end is None or instant < interval.end):
            return interval
    return None
