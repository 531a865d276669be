"""The one ingest path (docs/reporting-api.md): validate, dead-letter, dedupe, store, fold.

``POST /v1/events``, reconciliation's corrections and dead-letter replays all call
``ingest``.
Every accepted event is inserted with ``INSERT ... ON CONFLICT (event_id) DO
NOTHING`` and folded into the projection in the same transaction, so concurrent
requests, workers and replicas store an event exactly once and a retried batch is
always safe.  Every statement goes through the write seam (``reporting.db.writes``).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import MAX_BATCH as MAX_BATCH  # re-exported: the dead letter imports it here
from reporting import fold, metric_labels, metrics, projection
from reporting.billing import locks as billing_locks
from reporting.clock import utcnow
from reporting.db import writes
from reporting.future import FutureBound, FutureClock
from reporting.validation import (
    ValidEvent,
    exact_text,
    item_instant,
    load_validator,
    storable_copy,
)

LOG = logging.getLogger(__name__)

# A transaction the database aborted for a reason a retry cures (SQLite's busy
# writer, a PostgreSQL serialization failure) runs again whole.
_ATTEMPTS = 5

Status = Literal["stored", "duplicate", "rejected"]
T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class ItemResult:
    index: int
    event_id: str | None
    status: Status
    reason: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Rejected:
    index: int
    item: Any
    reason: str


def readable(item: Any, field: str) -> str | None:
    value = item.get(field) if isinstance(item, dict) else None
    if not isinstance(value, str):
        return None
    return storable_copy(value)[:255]


def ingest(
    factory: sessionmaker[Session],
    items: Sequence[Any],
    *,
    require_size_schema: bool,
    dead_letter: bool = True,
    known_clouds: frozenset[str] | None = None,
    future: FutureClock | None = None,
) -> list[ItemResult]:
    """Ingest ``items`` (raw decoded JSON values) and answer one result per item, in order.

    A refused item is kept in ``rejected_events`` with its reason; with
    ``dead_letter=False`` it is only reported (a dead-letter replay must not file a
    second copy of a row that still fails).  ``known_clouds`` (the clouds file's
    names, None: any cloud) refuses an event of another cloud; ``future`` (None: no
    bound) one dated past its cloud's present plus the skew.
    """
    # Before the transaction: a simulated cloud's clock may have to be read.
    bounds = None if future is None else future.bounds(items, item_instant)
    checked, valid, stored = retried(factory, lambda: _check_and_store(
        factory, items, require_size_schema=require_size_schema,
        dead_letter=dead_letter, known_clouds=known_clouds, future=bounds))
    results = _results(items, checked, valid, stored)
    _count(items, checked, results, known_clouds, replay=not dead_letter)
    return results


def retried(factory: sessionmaker[Session], transaction: Callable[[], T]) -> T:
    """``transaction()``, run again whole when the database aborted it for a reason a
    retry cures (up to ``_ATTEMPTS`` runs)."""
    for attempt in range(1, _ATTEMPTS):
        try:
            return transaction()
        except sa.exc.OperationalError as exc:
            with factory() as session:
                if not writes.of(session).retryable(exc):
                    raise
            LOG.warning("transaction aborted (%s), retrying (attempt %s)", exc.orig, attempt)
            time.sleep(0.01 * attempt)
    return transaction()


def _check_and_store(
    factory: sessionmaker[Session], items: Sequence[Any], *, require_size_schema: bool,
    dead_letter: bool, known_clouds: frozenset[str] | None,
    future: Mapping[str, FutureBound | None] | None = None,
) -> tuple[list[ValidEvent | str], list[tuple[int, ValidEvent]], set[int]]:
    """One session and one write transaction: read the schemas, check the items,
    store the valid ones and dead-letter the others.  Answers the check of every
    item, the valid ones and the indexes of those stored.

    Checking inside the transaction costs no lock (reading the schemas takes none;
    the events insert takes the first) and saves a connection checkout, its ping
    and its reset per request."""
    received_at = utcnow()
    with factory() as session, session.begin():
        writes.of(session).begin_ingest(session)
        validator = load_validator(session, items, require_size_schema=require_size_schema,
                                   known_clouds=known_clouds, future=future)
        checked = validator.check_all(items)
        valid: list[tuple[int, ValidEvent]] = []
        rejected: list[_Rejected] = []
        for index, outcome in enumerate(checked):
            if isinstance(outcome, str):
                if dead_letter:
                    rejected.append(_Rejected(index, items[index], outcome))
            else:
                valid.append((index, outcome))
        stored = _store(session, received_at, valid, rejected)
    return checked, valid, stored


def _store(session: Session, received_at: dt.datetime, valid: list[tuple[int, ValidEvent]],
           rejected: list[_Rejected]) -> set[int]:
    """The writes of one transaction; answers the indexes of the items stored."""
    first_of: dict[str, int] = {}
    for index, event in valid:
        first_of.setdefault(event.event_id, index)
    to_insert = [(i, e) for i, e in valid if first_of[e.event_id] == i]
    stored: set[int] = set()
    seam = writes.of(session)
    if to_insert:
        # The close's lock is held before any receipt number is drawn (a period close
        # waits for this transaction); the stored events' resources are locked after.
        seqs = seam.store_events(session, [e.row(received_at) for _, e in to_insert],
                                 hold=billing_locks.INGEST_KEY)
        new_events: dict[projection.ResourceKey, list[fold.FoldEvent]] = {}
        for index, event in to_insert:
            seq = seqs.get(event.event_id)
            if seq is None:
                continue
            stored.add(index)
            folded = fold.FoldEvent(event.event_id, event.event_type, event.project_id,
                                    event.timestamp, event.payload, seq)
            key = (event.platform, event.cloud, event.resource_type, event.resource_id)
            if key in new_events:
                new_events[key].append(folded)
            else:
                new_events[key] = [folded]
        if new_events:
            projection.project(session, seam, new_events)
    if rejected:
        seam.insert_rejected(
            session,
            [
                {
                    "received_at": received_at,
                    "cloud": readable(r.item, "cloud"),
                    "event_id": readable(r.item, "event_id"),
                    "reason": r.reason,
                    "raw": storable_copy(r.item),
                    "raw_json": exact_text(r.item),
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


def _count(items: Sequence[Any], checked: list[ValidEvent | str], results: list[ItemResult],
           known_clouds: frozenset[str] | None, *, replay: bool = False) -> None:
    counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
    received = {outcome.cloud for outcome, result in zip(checked, results, strict=True)
                if result.status == "stored" and isinstance(outcome, ValidEvent)}
    metric_labels.note_stored(received)
    for result, outcome in zip(results, checked, strict=True):
        if isinstance(outcome, ValidEvent):
            cloud, source = outcome.cloud, outcome.source
        else:
            item = items[result.index]
            cloud = metric_labels.cloud_label(readable(item, "cloud") or "", known_clouds)
            source = readable(item, "source") or ""
            if source not in ("collector", "reconciliation"):
                source = "invalid"
        counts[(cloud, source, result.status)] += 1
    for (cloud, source, outcome_name), n in counts.items():
        if replay:
            metrics.REPLAYED_EVENTS.labels(cloud=cloud, outcome=outcome_name).inc(n)
        else:
            metrics.INGEST_EVENTS.labels(cloud=cloud, source=source, outcome=outcome_name).inc(n)
    now = time.time()
    for cloud in received:
        metrics.EVENTS_LAST_RECEIVED.labels(cloud=cloud).set(now)
