"""The projection as a pure fold (docs/reporting-api.md).

A resource's row and its lifecycle are functions of its ordered history and of
nothing else: events are applied in ``(timestamp, seq)`` order, where ``seq`` is the
receipt order.  No I/O happens here; storage decides which events to feed in (the
whole history for a late event, just the new one for an event that sorts last).

Rules:
- a create makes the resource live (a create while live is an update that may
  carry a new size; the live period keeps its first instant);
- a delete ends it and never changes the owner: its project (empty, or the project
  of whoever sent it, e.g. an admin deleting another project's floating IP) is taken
  only when nothing earlier names one;
- an update changes what it carries: a non-empty project, a present state, a present
  size (which replaces the whole size); absent means "unchanged";
- the lifecycle is the list of intervals ``[start, end)`` during which the resource
  was live with one (project, state, size), each naming the event that opened it.
  Zero-length intervals (two facts at the same instant) are dropped: they cover no
  time, and the history still holds both events.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from mapping.event import verb

# The fold's values are named tuples, not frozen dataclasses: a batch of 1000 events
# builds several per event, and a frozen dataclass costs one object.__setattr__ per
# field.  They are immutable all the same; a size or payload they hold is shared with
# the event it came from and never changed in place.


class FoldEvent(NamedTuple):
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


# ``FoldEvent.order_key`` as a sort key (no Python call per comparison).
ORDER_KEY = operator.itemgetter(3, 5)


class ResourceState(NamedTuple):
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
    # The oldest event's instant (None: not known, a row folded before it was kept):
    # with last_event_at, the span every event and interval of the resource lies in.
    first_event_at: dt.datetime | None = None


class Interval(NamedTuple):
    """One lifecycle interval ``[start, end)``; ``end`` is None while open."""

    start: dt.datetime
    end: dt.datetime | None
    project_id: str
    state: str | None
    size: dict[str, Any] | None
    event_id: str


# An event type's verb, once per distinct type (a batch holds a handful).
_verb = functools.lru_cache(maxsize=1024)(verb)


def apply(current: ResourceState | None, event: FoldEvent) -> ResourceState:
    """Apply one event that sorts after every event ``current`` was folded from."""
    kind = _verb(event.event_type)
    payload = event.payload or {}
    if current is None:
        project, state, size = event.project_id, None, None
        live, created_at, deleted_at = False, None, None
        first_event_at: dt.datetime | None = event.timestamp
    else:
        # A delete is sent from the deleting context (an admin's project), not the owner's.
        project = current.project_id if kind == "delete" else (
            event.project_id or current.project_id)
        state, size = current.state, current.size
        live, created_at, deleted_at = current.live, current.created_at, current.deleted_at
        first_event_at = current.first_event_at
    if "state" in payload:
        state = payload["state"]
    if "size" in payload:
        size = payload["size"]
    if kind == "create":
        if not live:
            created_at, deleted_at = event.timestamp, None
        live = True
    elif kind == "delete":
        if live or deleted_at is None:
            deleted_at = event.timestamp
        live = False
    return ResourceState(project, state, size, live, created_at, deleted_at,
                         event.timestamp, event.event_id, event.seq, first_event_at)


def step(intervals: list[Interval], before: ResourceState | None, after: ResourceState,
         event: FoldEvent) -> None:
    """Change ``intervals`` (the lifecycle up to ``before``, the caller's own list) into
    the lifecycle after ``event`` turned ``before`` into ``after``.  Only the last
    interval can change: O(1)."""
    was_live = before is not None and before.live
    changed = before is None or (before.project_id, before.state, before.size) != (
        after.project_id, after.state, after.size)
    if was_live and (not after.live or changed):
        last = intervals.pop()
        if event.timestamp > last.start:
            intervals.append(Interval(last.start, event.timestamp, last.project_id, last.state,
                                      last.size, last.event_id))
    if after.live and (not was_live or changed):
        intervals.append(Interval(event.timestamp, None, after.project_id, after.state,
                                  after.size, event.event_id))


def extend_lifecycle(
    intervals: list[Interval], before: ResourceState | None, after: ResourceState, event: FoldEvent
) -> list[Interval]:
    """The lifecycle after ``event`` turned ``before`` into ``after``, as a new list
    (``step`` on a copy)."""
    result = list(intervals)
    step(result, before, after, event)
    return result


def fold(events: Iterable[FoldEvent]) -> tuple[ResourceState | None, list[Interval]]:
    """Fold a resource's whole history, in any order, into its row and lifecycle."""
    state: ResourceState | None = None
    intervals: list[Interval] = []
    for event in sorted(events, key=ORDER_KEY):
        after = apply(state, event)
        step(intervals, state, after, event)
        state = after
    return state, intervals


def live_at(intervals: Iterable[Interval], instant: dt.datetime) -> Interval | None:
    """The interval covering ``instant``, if the resource was live then."""
    for interval in intervals:
        if interval.start <= instant and (interval.end is None or instant < interval.end):
            return interval
    return None
