"""The dead letter's exact copy of a refused item, and replay's honesty checks.

A refused item may hold what no JSON column stores (a NUL, a lone surrogate), so
besides the readable copy in ``rejected_events.raw`` the item is kept as ASCII JSON
text in ``raw_json``: every character outside ASCII is escaped, which a text column
of either backend keeps exactly.  Replay ingests that text, never the readable copy,
and a replay the API answers ``duplicate`` counts only when the stored event under
that id is the very event replayed.

A collector files here what it parked on its disk (``file_parked``), each item under
its own key, so the retry of a filing the API committed files nothing new.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.models import Event, RejectedEvent
from reporting.future import FutureClock
from reporting.ingest import ItemResult, ingest, readable, retried
from reporting.validation import ValidEvent, exact_text, load_validator, storable_copy

# Replacement characters the readable copy used before revision 0009 kept raw_json:
# a row holding one may not be what arrived.
_REPLACEMENTS = ("\ufffd", "?")
ALTERED_REASON = ("replay: filed before the dead letter kept items exactly, and its copy holds "
                  "a replaced character (U+FFFD or '?'); not replayed, read it and resend by hand")


def original(row: RejectedEvent) -> Any:
    """The item as it arrived (rows filed before revision 0009: the readable copy)."""
    return json.loads(row.raw_json) if row.raw_json is not None else row.raw


def _holds_replacement(value: Any) -> bool:
    if isinstance(value, str):
        return any(mark in value for mark in _REPLACEMENTS)
    if isinstance(value, dict):
        return any(_holds_replacement(k) or _holds_replacement(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_replacement(v) for v in value)
    return False


def unreplayable(row: RejectedEvent) -> str | None:
    """Why ``row`` must not be replayed, or None."""
    if row.raw_json is None and _holds_replacement(row.raw):
        return ALTERED_REASON
    return None


_COMPARED = ("event_type", "platform", "cloud", "resource_type", "resource_id", "project_id",
             "timestamp", "source", "payload")


def differing_duplicates(session: Session, replayed: Sequence[ValidEvent]) -> set[str]:
    """Event ids among ``replayed`` whose stored event is not the event replayed."""
    if not replayed:
        return set()
    by_id = {event.event_id: event for event in replayed}
    stored = session.execute(sa.select(Event).where(Event.event_id.in_(sorted(by_id))))
    differing: set[str] = set()
    for row in stored.scalars():
        mine = by_id[row.event_id]
        if any(getattr(row, name) != getattr(mine, name) for name in _COMPARED):
            differing.add(row.event_id)
    return differing


def different_event_reason(event_id: str) -> str:
    return (f"replay: event_id {event_id} is already stored for a different event; the row "
            "stays rejected (compare it with the resource's events and resend it under a new id "
            "if it is a real event)")


def replay_rows(
    factory: sessionmaker[Session], rows: Sequence[RejectedEvent], *, require_size_schema: bool,
    known_clouds: frozenset[str] | None = None, future: FutureClock | None = None,
) -> list[ItemResult]:
    """Ingest each row's item exactly as it arrived; one result per row, in order.

    A row that must not be replayed, or whose ``duplicate`` is a different event stored
    under the same id, is answered ``rejected`` with the reason (and nothing is filed).
    """
    refused = {i: reason for i, row in enumerate(rows) if (reason := unreplayable(row))}
    todo = [i for i in range(len(rows)) if i not in refused]
    items = [original(rows[i]) for i in todo]
    outcomes = dict(zip(todo, ingest(factory, items, require_size_schema=require_size_schema,
                                     dead_letter=False, known_clouds=known_clouds,
                                     future=future), strict=True))
    duplicates = [i for i in todo if outcomes[i].status == "duplicate"]
    if duplicates:
        with factory() as session:
            dup_items = [original(rows[i]) for i in duplicates]
            validator = load_validator(session, dup_items, require_size_schema=require_size_schema,
                                       known_clouds=known_clouds)
            checked = [validator.check(item) for item in dup_items]
            differing = differing_duplicates(
                session, [event for event in checked if isinstance(event, ValidEvent)])
        for i in duplicates:
            event_id = outcomes[i].event_id
            if event_id in differing:
                outcomes[i] = ItemResult(i, event_id, "rejected", different_event_reason(event_id))
    results: list[ItemResult] = []
    for i, row in enumerate(rows):
        if i in refused:
            results.append(ItemResult(i, row.event_id, "rejected", refused[i]))
        else:
            results.append(outcomes[i])
    return results


@dataclasses.dataclass(frozen=True)
class ReplayOutcome:
    """What replaying one requested row did: ``stored``, ``duplicate`` (the very event
    was stored before), ``rejected`` (still refused, with ``reason``), ``not_found`` or
    ``already_replayed``."""

    row_id: int
    status: str
    event_id: str | None = None
    reason: str | None = None


REPLAY_STATUSES = ("stored", "duplicate", "rejected", "not_found", "already_replayed")


def replay(factory: sessionmaker[Session], ids: Sequence[int], *, require_size_schema: bool,
           known_clouds: frozenset[str] | None = None,
           future: FutureClock | None = None) -> list[ReplayOutcome]:
    """Replay the dead-letter rows ``ids`` (each once, in the order given).

    A row whose event is now stored (or was already, as the very same event) is marked
    ``replayed_at`` and kept; one that still fails stays as it is, answered with its
    current reason.  Marking happens after the events are committed: a crash between
    the two leaves a row to replay again, which answers ``duplicate`` then.
    """
    ids = list(dict.fromkeys(ids))
    with factory() as session:
        rows = {row.id: row for row in session.execute(
            sa.select(RejectedEvent).where(RejectedEvent.id.in_(ids))).scalars()}
    pending = [rows[i] for i in ids if i in rows and rows[i].replayed_at is None]
    results = replay_rows(factory, pending, require_size_schema=require_size_schema,
                          known_clouds=known_clouds, future=future)
    by_id = {row.id: result for row, result in zip(pending, results, strict=True)}
    done = [row_id for row_id, result in by_id.items() if result.status != "rejected"]
    if done:
        with factory() as session, session.begin():
            session.execute(
                sa.update(RejectedEvent)
                .where(RejectedEvent.id.in_(done), RejectedEvent.replayed_at.is_(None))
                .values(replayed_at=utcnow()))
    outcomes: list[ReplayOutcome] = []
    for row_id in ids:
        if row_id not in rows:
            outcomes.append(ReplayOutcome(row_id, "not_found"))
        elif row_id not in by_id:
            outcomes.append(ReplayOutcome(row_id, "already_replayed", rows[row_id].event_id))
        else:
            result = by_id[row_id]
            outcomes.append(ReplayOutcome(row_id, result.status, result.event_id, result.reason))
    return outcomes


def file_parked(factory: sessionmaker[Session], items: Sequence[tuple[str, Any, str]]
                ) -> list[tuple[int, bool]]:
    """File ``(key, item, reason)`` triples as dead-letter rows, committed before this
    returns.  Answers, per triple and in order, the row's id and whether this call
    filed it (False: the key was filed before, by an earlier attempt or earlier in
    ``items``)."""
    received_at = utcnow()
    rows: dict[str, dict[str, Any]] = {}
    for key, item, reason in items:
        rows.setdefault(key, {
            "received_at": received_at, "cloud": readable(item, "cloud"),
            "event_id": readable(item, "event_id"), "reason": reason,
            "raw": storable_copy(item), "raw_json": exact_text(item), "replayed_at": None,
            "filed_key": key,
        })

    def transaction() -> tuple[dict[str, int], dict[str, int]]:
        with factory() as session, session.begin():
            return writes.of(session).file_rejected(session, list(rows.values()))

    filed, before = retried(factory, transaction)
    answered: list[tuple[int, bool]] = []
    seen: set[str] = set()
    for key, _, _ in items:
        # A key repeated in ``items`` was filed by its first copy.
        answered.append((filed[key], key not in seen) if key in filed else (before[key], False))
        seen.add(key)
    return answered
