"""Fold storage: keeps ``current_resources`` and ``resource_intervals`` equal to the
fold of each resource's history (docs/reporting-api.md).

Called inside the ingest write transaction, after the new events are inserted, with
the touched resources locked (``lock_resources``).  A resource whose new events all
sort after its row's newest ``(last_event_at, last_event_seq)`` is folded
incrementally from the row and its open interval; otherwise its history alone is
replayed through ``ix_events_resource_order``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting import fold, pg_batch
from reporting.db.models import CurrentResource, Event, ResourceInterval

ResourceKey = tuple[str, str, str, str]  # (platform, cloud, resource_type, resource_id)

_CR = cast(sa.Table, CurrentResource.__table__)
_RI = cast(sa.Table, ResourceInterval.__table__)
_EV = cast(sa.Table, Event.__table__)
_RI_KEY = sa.tuple_(_RI.c.platform, _RI.c.cloud, _RI.c.resource_type, _RI.c.resource_id)
_KEY_NAMES = ["platform", "cloud", "resource_type", "resource_id"]
# Bounds the bind parameters of one tuple-IN (4 per key) on every dialect.
_CHUNK = 500


def _lock_id(key: ResourceKey) -> int:
    digest = hashlib.blake2b("\x1f".join(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_resources(session: Session, keys: Iterable[ResourceKey]) -> None:
    """Serialise folds of the same resources across processes until commit.

    PostgreSQL: transaction-level advisory locks, taken in one statement in a fixed
    order so two batches never deadlock on each other.  SQLite: the transaction
    already holds the database write lock (it inserted the events).
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    ids = sorted({_lock_id(key) for key in keys})
    if ids:
        session.execute(
            sa.text(
                "SELECT pg_advisory_xact_lock(k) FROM "
                "(SELECT unnest(CAST(:ids AS bigint[])) AS k ORDER BY 1) AS ordered"
            ),
            {"ids": ids},
        )


def _chunks(keys: Sequence[ResourceKey]) -> Iterable[list[ResourceKey]]:
    for start in range(0, len(keys), _CHUNK):
        yield list(keys[start : start + _CHUNK])


def _key_of(row: Any) -> ResourceKey:
    return (row.platform, row.cloud, row.resource_type, row.resource_id)


def _state_of(row: Any) -> fold.ResourceState:
    return fold.ResourceState(
        project_id=row.project_id,
        state=row.state,
        size=row.size,
        live=row.live,
        created_at=row.created_at,
        deleted_at=row.deleted_at,
        last_event_at=row.last_event_at,
        last_event_seq=row.last_event_seq,
        last_event_id=row.last_event_id,
    )


def _state_values(state: fold.ResourceState) -> dict[str, Any]:
    # Not dataclasses.asdict: its recursive deep copy costs more than the fold itself.
    return {
        "project_id": state.project_id,
        "state": state.state,
        "size": state.size,
        "live": state.live,
        "created_at": state.created_at,
        "deleted_at": state.deleted_at,
        "last_event_at": state.last_event_at,
        "last_event_id": state.last_event_id,
        "last_event_seq": state.last_event_seq,
    }


def _row_values(key: ResourceKey, state: fold.ResourceState) -> dict[str, Any]:
    values = _state_values(state)
    values.update(zip(("platform", "cloud", "resource_type", "resource_id"), key, strict=True))
    return values


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


@dataclasses.dataclass
class _Writes:
    """Everything one project() call writes, issued as a few batched statements."""

    new_rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    changed_rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    new_intervals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    ended_intervals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    dropped_interval_ids: list[int] = dataclasses.field(default_factory=list)
    replayed: list[ResourceKey] = dataclasses.field(default_factory=list)

    def flush(self, session: Session) -> None:
        postgres = session.get_bind().dialect.name == "postgresql"
        if self.dropped_interval_ids:
            session.execute(_RI.delete().where(_RI.c.id.in_(self.dropped_interval_ids)))
        if self.replayed and postgres:
            pg_batch.delete_by_keys(session, _RI, _KEY_NAMES, self.replayed)
        elif self.replayed:
            for chunk in _chunks(self.replayed):
                session.execute(_RI.delete().where(_RI_KEY.in_(chunk)))
        if postgres:
            self._flush_postgres(session)
            return
        if self.ended_intervals:
            session.execute(
                _RI.update().where(_RI.c.id == sa.bindparam("b_id")),
                [{"b_id": r["id"], "end": r["end"]} for r in self.ended_intervals],
            )
        if self.new_intervals:
            session.execute(_RI.insert(), self.new_intervals)
        if self.changed_rows:
            for row in self.changed_rows:
                for name in _KEY_NAMES:
                    row[f"b_{name}"] = row.pop(name)
            session.execute(
                _CR.update().where(
                    _CR.c.platform == sa.bindparam("b_platform"),
                    _CR.c.cloud == sa.bindparam("b_cloud"),
                    _CR.c.resource_type == sa.bindparam("b_resource_type"),
                    _CR.c.resource_id == sa.bindparam("b_resource_id"),
                ),
                self.changed_rows,
            )
        if self.new_rows:
            session.execute(_CR.insert(), self.new_rows)

    def _flush_postgres(self, session: Session) -> None:
        if self.ended_intervals:
            pg_batch.update(session, _RI, self.ended_intervals, key=["id"])
        if self.new_intervals:
            pg_batch.insert(session, _RI, self.new_intervals)
        if self.changed_rows:
            pg_batch.update(session, _CR, self.changed_rows, key=_KEY_NAMES)
        if self.new_rows:
            pg_batch.insert(session, _CR, self.new_rows)


def project(session: Session, new_events: Mapping[ResourceKey, list[fold.FoldEvent]]) -> None:
    """Fold ``new_events`` (just inserted, resources locked) into the projection."""
    keys = sorted(new_events)
    rows = {_key_of(found): found for found in _select_by_keys(session, _CR, keys)}
    incremental: list[ResourceKey] = []
    writes = _Writes()
    for key in keys:
        events = sorted(new_events[key], key=lambda e: e.order_key)
        row = rows.get(key)
        if row is None or events[0].order_key > (row.last_event_at, row.last_event_seq):
            incremental.append(key)
        else:
            _replay(session, key, writes, exists=True)
    open_intervals = _open_intervals(session, [k for k in incremental if k in rows and rows[k].live])
    for key in incremental:
        _extend(key, rows.get(key), open_intervals.get(key), new_events[key], writes)
    writes.flush(session)


def _open_intervals(session: Session, keys: Sequence[ResourceKey]) -> dict[ResourceKey, Any]:
    return {
        _key_of(interval): interval
        for interval in _select_by_keys(session, _RI, keys, open_only=True)
    }


def _select_by_keys(
    session: Session, table: sa.Table, keys: Sequence[ResourceKey], *, open_only: bool = False
) -> list[Any]:
    if not keys:
        return []
    if session.get_bind().dialect.name == "postgresql":
        where = 't."end" IS NULL' if open_only else ""
        return pg_batch.select_by_keys(session, table, _KEY_NAMES, keys, where)
    key = sa.tuple_(*(table.c[name] for name in _KEY_NAMES))
    found: list[Any] = []
    for chunk in _chunks(keys):
        query = sa.select(table).where(key.in_(chunk))
        if open_only:
            query = query.where(table.c.end.is_(None))
        found.extend(session.execute(query))
    return found


def _extend(
    key: ResourceKey,
    row: Any | None,
    open_row: Any | None,
    events: list[fold.FoldEvent],
    writes: _Writes,
) -> None:
    """O(new events): apply them to the row and extend the open interval."""
    state = _state_of(row) if row is not None else None
    intervals: list[fold.Interval] = []
    if open_row is not None:
        intervals.append(
            fold.Interval(
                start=open_row.start,
                end=None,
                project_id=open_row.project_id,
                state=open_row.state,
                size=open_row.size,
                event_id=open_row.event_id,
            )
        )
    for event in sorted(events, key=lambda e: e.order_key):
        after = fold.apply(state, event)
        intervals = fold.extend_lifecycle(intervals, state, after, event)
        state = after
    assert state is not None
    for interval in intervals:
        if open_row is not None and interval.event_id == open_row.event_id:
            if interval.end is not None:
                writes.ended_intervals.append({"id": open_row.id, "end": interval.end})
        else:
            writes.new_intervals.append(_interval_values(key, interval))
    if open_row is not None and all(i.event_id != open_row.event_id for i in intervals):
        writes.dropped_interval_ids.append(open_row.id)
    if row is None:
        writes.new_rows.append(_row_values(key, state))
    else:
        writes.changed_rows.append(_row_values(key, state))


def history(session: Session, key: ResourceKey) -> list[fold.FoldEvent]:
    """One resource's stored events in fold order (via ix_events_resource_order)."""
    query = (
        sa.select(
            _EV.c.event_id, _EV.c.event_type, _EV.c.project_id, _EV.c.timestamp,
            _EV.c.payload, _EV.c.seq,
        )
        .where(
            _EV.c.platform == key[0],
            _EV.c.cloud == key[1],
            _EV.c.resource_type == key[2],
            _EV.c.resource_id == key[3],
        )
        .order_by(_EV.c.timestamp, _EV.c.seq)
    )
    return [
        fold.FoldEvent(
            event_id=r.event_id, event_type=r.event_type, project_id=r.project_id,
            timestamp=r.timestamp, payload=r.payload, seq=r.seq,
        )
        for r in session.execute(query)
    ]


def _replay(session: Session, key: ResourceKey, writes: _Writes, *, exists: bool) -> None:
    """O(this resource's history): refold it and rewrite its row and lifecycle."""
    state, intervals = fold.fold(history(session, key))
    assert state is not None
    writes.replayed.append(key)
    writes.new_intervals.extend(_interval_values(key, i) for i in intervals)
    if exists:
        writes.changed_rows.append(_row_values(key, state))
    else:
        writes.new_rows.append(_row_values(key, state))
