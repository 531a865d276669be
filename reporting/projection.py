"""Fold storage: keeps ``current_resources`` and ``resource_intervals`` equal to the
fold of each resource's history (docs/reporting-api.md).

Called inside the ingest write transaction, after the new events are inserted, with
the touched resources locked (``Writes.lock_resources``).  Every statement is
set-based, through the write seam (``reporting.db.writes``): one read of the
batch's held rows with their open intervals, one read of the histories of the
resources a late event touched, then the batch's writes.  A resource whose new
events all sort after its row's newest ``(last_event_at, last_event_seq)`` is folded
incrementally from its row and open interval; otherwise its history alone is
replayed (read through ``ix_events_resource_order``, within the span from the row's
``first_event_at`` to its newest event, without the batch's own events, which are
passed in), so a late event costs that resource's history and nothing else, whatever
the months the history holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from reporting import fold
from reporting.db.writes.base import FoldWrites, HeldResource, HistorySpan, ResourceKey, Writes

__all__ = ["ResourceKey", "project"]


def _row_values(key: ResourceKey, state: fold.ResourceState) -> dict[str, Any]:
    # Not dataclasses.asdict: its recursive deep copy costs more than the fold itself.
    return {
        "platform": key[0],
        "cloud": key[1],
        "resource_type": key[2],
        "resource_id": key[3],
        "project_id": state.project_id,
        "state": state.state,
        "size": state.size,
        "live": state.live,
        "created_at": state.created_at,
        "deleted_at": state.deleted_at,
        "last_event_at": state.last_event_at,
        "last_event_id": state.last_event_id,
        "last_event_seq": state.last_event_seq,
        "first_event_at": state.first_event_at,
    }


def _interval_values(key: ResourceKey, interval: fold.Interval) -> dict[str, Any]:
    return {
        "platform": key[0],
        "cloud": key[1],
        "resource_type": key[2],
        "resource_id": key[3],
        "start": interval.start,
        "end": interval.end,
        "project_id": interval.project_id,
        "state": interval.state,
        "size": interval.size,
        "event_id": interval.event_id,
    }


def project(session: Session, writes: Writes,
            new_events: Mapping[ResourceKey, list[fold.FoldEvent]]) -> None:
    """Fold ``new_events`` (just inserted, resources locked) into the projection."""
    keys = sorted(new_events)
    held = writes.held_resources(session, keys)
    late: list[ResourceKey] = []
    for key in keys:
        events = new_events[key]
        if len(events) > 1:
            events.sort(key=fold.ORDER_KEY)
        found = held.get(key)
        if found is not None and (events[0].timestamp, events[0].seq) <= (
                found.state.last_event_at, found.state.last_event_seq):
            late.append(key)
    # A late resource's events and intervals lie in its row's span widened to the new
    # events: read within it, a replay reads the months it covers, not every month.
    spans = {key: _span(held[key], new_events[key]) for key in late}
    histories = writes.histories(session, late, spans, new_events) if late else {}
    planned = FoldWrites(spans=spans)
    for key in keys:
        found = held.get(key)
        if key in histories:
            state = _replay(key, histories[key], planned)
        else:
            state = _extend(key, found, new_events[key], planned)
        if found is not None:
            planned.changed_rows.append((found, _row_values(key, state)))
        else:
            planned.new_rows.append(_row_values(key, state))
    writes.write_fold(session, planned)


def _span(held: HeldResource, events: list[fold.FoldEvent]) -> HistorySpan:
    """The span of a held resource's events with its new ``events`` (in fold order)."""
    first = held.state.first_event_at
    return HistorySpan(None if first is None else min(first, events[0].timestamp),
                       max(held.state.last_event_at, events[-1].timestamp))


def _extend(key: ResourceKey, held: HeldResource | None, events: list[fold.FoldEvent],
            planned: FoldWrites) -> fold.ResourceState:
    """O(new events): apply them (in fold order) to the row and extend the open
    interval; answers the new row."""
    state = held.state if held is not None else None
    opened = held.open_interval if held is not None else None
    intervals: list[fold.Interval] = []
    if state is not None and opened is not None:
        intervals.append(fold.Interval(opened.start, None, state.project_id, state.state,
                                       state.size, opened.event_id))
    for event in events:
        after = fold.apply(state, event)
        fold.step(intervals, state, after, event)
        state = after
    assert state is not None
    kept_open = False
    for interval in intervals:
        if opened is not None and interval.event_id == opened.event_id:
            kept_open = True
            if interval.end is not None:
                planned.ended_intervals.append((opened, interval.end))
        else:
            planned.new_intervals.append(_interval_values(key, interval))
    if opened is not None and not kept_open:
        planned.dropped_interval_ids.append(opened.id)
    return state


def _replay(key: ResourceKey, history: list[fold.FoldEvent], planned: FoldWrites
            ) -> fold.ResourceState:
    """O(this resource's history): refold it and rewrite its lifecycle; answers the row."""
    state, intervals = fold.fold(history)
    assert state is not None
    planned.replayed.append(key)
    planned.new_intervals.extend(_interval_values(key, i) for i in intervals)
    return state
