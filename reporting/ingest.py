"""The one ingest path (SPEC §3.2): validate, dead-letter, dedupe, store, fold.

``POST /v1/events`` and reconciliation's corrections both call ``ingest_events``.
Every accepted event is inserted with ``INSERT ... ON CONFLICT (event_id) DO
NOTHING`` and folded into the projection in the same transaction, so concurrent
requests, workers and replicas store an event exactly once and a retried batch is
always safe.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Sequence
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session, sessionmaker

from reporting import fold, metrics, pg_batch, planner_statistics, projection
from reporting.billing import locks as billing_locks
from reporting.db.models import Event, RejectedEvent
from reporting.validation import ValidEvent, load_validator, storable_copy

LOG = logging.getLogger(__name__)

MAX_BATCH = 1000

_EVENTS = cast(sa.Table, Event.__table__)
_REJECTED = cast(sa.Table, RejectedEvent.__table__)
# Deadlocks between two batches inserting the same event ids in different orders
# (PostgreSQL aborts one of them) and SQLite's busy writer are retried whole.
_ATTEMPTS = 5

Status = Literal["stored", "duplicate", "rejected"]


@dataclasses.dataclass(frozen=True)
class ItemResult:
    index: int
    event_id: str | None
    status: Status
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class _Rejected:
    index: int
    item: Any
    reason: str


def utcnow() -> dt.datetime:
    """Now as naive UTC, the form every instant takes in the database."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _readable(item: Any, field: str) -> str | None:
    value = item.get(field) if isinstance(item, dict) else None
    if not isinstance(value, str):
        return None
    return storable_copy(value)[:255]


def ingest_events(
    factory: sessionmaker[Session], items: Sequence[Any], *, require_size_schema: bool
) -> list[ItemResult]:
    """Ingest ``items`` (raw decoded JSON values) and answer one result per item, in order.

    A refused item is kept in ``rejected_events`` with its reason.
    """
    return ingest(factory, items, require_size_schema=require_size_schema, dead_letter=True)


def ingest(
    factory: sessionmaker[Session],
    items: Sequence[Any],
    *,
    require_size_schema: bool,
    dead_letter: bool,
) -> list[ItemResult]:
    """``ingest_events``; with ``dead_letter=False`` a refused item is only reported
    (a dead-letter replay must not file a second copy of a row that still fails)."""
    with factory() as session:
        validator = load_validator(session, items, require_size_schema=require_size_schema)
    checked = validator.check_all(items)
    valid: list[tuple[int, ValidEvent]] = []
    rejected: list[_Rejected] = []
    for index, outcome in enumerate(checked):
        if isinstance(outcome, str):
            if dead_letter:
                rejected.append(_Rejected(index, items[index], outcome))
        else:
            valid.append((index, outcome))
    stored = _store_with_retry(factory, valid, rejected)
    if stored:
        planner_statistics.after_stored(factory)
    results = _results(items, checked, valid, stored)
    _count(items, checked, results)
    return results


def _store_with_retry(
    factory: sessionmaker[Session], valid: list[tuple[int, ValidEvent]], rejected: list[_Rejected]
) -> set[int]:
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            return _store(factory, valid, rejected)
        except sa.exc.OperationalError as exc:
            if attempt == _ATTEMPTS or not _retryable(exc):
                raise
            LOG.warning("ingest transaction aborted (%s), retrying (attempt %s)", exc.orig, attempt)
            time.sleep(0.01 * attempt)
    raise AssertionError("unreachable")


def _retryable(exc: sa.exc.OperationalError) -> bool:
    code = getattr(exc.orig, "sqlstate", None)
    if code in ("40P01", "40001"):  # deadlock_detected, serialization_failure
        return True
    return "database is locked" in str(exc.orig)


_COLUMNS = ("event_id", "event_type", "platform", "cloud", "resource_type", "resource_id",
            "project_id", "timestamp", "source", "payload")

# PostgreSQL: the batch travels as one JSON document (reporting.pg_batch); ROWS FROM
# ... WITH ORDINALITY keeps the batch order, so seq (receipt order) follows it.
_PG_INSERT = sa.text(
    "INSERT INTO events (" + ", ".join(f'"{c}"' for c in _COLUMNS) + ", received_at) "  # noqa: S608
    "SELECT " + ", ".join(f'"{c}"' for c in _COLUMNS) + ", CAST(:received_at AS timestamp) "
    "FROM ROWS FROM (" + pg_batch.recordset(_EVENTS, _COLUMNS).replace(" AS r(", " AS (")
    + ") WITH ORDINALITY AS batch(" + ", ".join(f'"{c}"' for c in _COLUMNS) + ", ord) "
    "ORDER BY ord "
    "ON CONFLICT (event_id) DO NOTHING "
    "RETURNING event_id, seq"
)


def _insert_events(
    session: Session, events: list[ValidEvent], received_at: dt.datetime
) -> dict[str, int]:
    """Insert-or-ignore; answers {event_id: seq} of the rows this call inserted."""
    if session.get_bind().dialect.name == "postgresql":
        batch = [
            {"event_id": e.event_id, "event_type": e.event_type, "platform": e.platform,
             "cloud": e.cloud, "resource_type": e.resource_type, "resource_id": e.resource_id,
             "project_id": e.project_id, "timestamp": e.timestamp.isoformat(),
             "source": e.source, "payload": e.payload}
            for e in events
        ]
        params = {"batch": pg_batch.dumps(batch), "received_at": received_at}
        return {event_id: seq for event_id, seq in session.execute(_PG_INSERT, params)}
    stmt = (
        sqlite.insert(_EVENTS)
        .on_conflict_do_nothing(index_elements=["event_id"])
        .returning(_EVENTS.c.event_id, _EVENTS.c.seq)
    )
    return {
        event_id: seq
        for event_id, seq in session.execute(stmt, [e.row(received_at) for e in events])
    }


def _store(
    factory: sessionmaker[Session], valid: list[tuple[int, ValidEvent]], rejected: list[_Rejected]
) -> set[int]:
    """One write transaction; answers the indexes of the items stored."""
    received_at = utcnow()
    first_of: dict[str, int] = {}
    for index, event in valid:
        first_of.setdefault(event.event_id, index)
    to_insert = [(i, e) for i, e in valid if first_of[e.event_id] == i]
    stored: set[int] = set()
    with factory() as session, session.begin():
        # Before drawing receipt numbers: a period close waits for this transaction.
        billing_locks.hold_ingest_share(session)
        if to_insert:
            seqs = _insert_events(session, [e for _, e in to_insert], received_at)
            new_events: dict[projection.ResourceKey, list[fold.FoldEvent]] = (
                collections.defaultdict(list)
            )
            for index, event in to_insert:
                seq = seqs.get(event.event_id)
                if seq is None:
                    continue
                stored.add(index)
                new_events[event.resource_key].append(
                    fold.FoldEvent(
                        event_id=event.event_id,
                        event_type=event.event_type,
                        project_id=event.project_id,
                        timestamp=event.timestamp,
                        payload=event.payload,
                        seq=seq,
                    )
                )
            if new_events:
                projection.lock_resources(session, new_events)
                projection.project(session, new_events)
        if rejected:
            session.execute(
                sa.insert(_REJECTED),
                [
                    {
                        "received_at": received_at,
                        "cloud": _readable(r.item, "cloud"),
                        "event_id": _readable(r.item, "event_id"),
                        "reason": r.reason,
                        "raw": storable_copy(r.item),
                        "replayed_at": None,
                    }
                    for r in rejected
                ],
            )
    return stored


def _results(
    items: Sequence[Any],
    checked: list[ValidEvent | str],
    valid: list[tuple[int, ValidEvent]],
    stored: set[int],
) -> list[ItemResult]:
    results: list[ItemResult] = []
    for index, outcome in enumerate(checked):
        if isinstance(outcome, str):
            event_id = items[index].get("event_id") if isinstance(items[index], dict) else None
            results.append(
                ItemResult(
                    index, event_id if isinstance(event_id, str) else None, "rejected", outcome
                )
            )
        elif index in stored:
            results.append(ItemResult(index, outcome.event_id, "stored"))
        else:
            results.append(ItemResult(index, outcome.event_id, "duplicate"))
    return results


def _count(items: Sequence[Any], checked: list[ValidEvent | str], results: list[ItemResult]) -> None:
    counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
    received: set[str] = set()
    for result, outcome in zip(results, checked, strict=True):
        if isinstance(outcome, ValidEvent):
            cloud, source = outcome.cloud, outcome.source
        else:
            item = items[result.index]
            cloud = _readable(item, "cloud") or ""
            source = _readable(item, "source") or ""
            if source not in ("collector", "reconciliation"):
                source = "invalid"
        counts[(cloud, source, result.status)] += 1
        if result.status == "stored":
            received.add(cloud)
    for (cloud, source, outcome_name), n in counts.items():
        metrics.INGEST_EVENTS.labels(cloud=cloud, source=source, outcome=outcome_name).inc(n)
    now = time.time()
    for cloud in received:
        metrics.EVENTS_LAST_RECEIVED.labels(cloud=cloud).set(now)
