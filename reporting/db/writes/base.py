"""The write seam: every statement whose form depends on the database.

One ``Writes`` object per engine (``reporting.db.writes.of``), chosen once from
the engine's dialect; callers name an operation and never look at the dialect.
What both dialects say alike (Core statements every dialect renders) lives here;
``postgresql.py`` and ``sqlite.py`` hold the rest.

The projection operations run inside the ingest write transaction, after the
batch's events are inserted and its resources locked (``lock_resources``).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import ResourceKey
from reporting import fold
from reporting.db.models import (
    CurrentResource,
    Event,
    RejectedEvent,
    ResourceInterval,
    ResourceType,
    SizeName,
    SyncSighting,
)

TypeKey = tuple[str, str, str]  # (platform, cloud, resource_type)

EVENTS = cast(sa.Table, Event.__table__)
REJECTED = cast(sa.Table, RejectedEvent.__table__)
CURRENT = cast(sa.Table, CurrentResource.__table__)
INTERVALS = cast(sa.Table, ResourceInterval.__table__)
RESOURCE_TYPES = cast(sa.Table, ResourceType.__table__)
SIZE_NAMES = cast(sa.Table, SizeName.__table__)
SIGHTINGS = cast(sa.Table, SyncSighting.__table__)

T = TypeVar("T")

KEY_NAMES = ("platform", "cloud", "resource_type", "resource_id")
# The columns of an event row a client's item fills (seq and received_at are ours).
EVENT_COLUMNS = ("event_id", "event_type", "platform", "cloud", "resource_type", "resource_id",
                 "project_id", "timestamp", "source", "payload")
STATE_COLUMNS = ("project_id", "state", "size", "live", "created_at", "deleted_at",
                 "last_event_at", "last_event_id", "last_event_seq", "first_event_at")
INTERVAL_COLUMNS = ("platform", "cloud", "resource_type", "resource_id", "start", "end",
                    "project_id", "state", "size", "event_id")


class OpenInterval(NamedTuple):
    """What the incremental fold needs of a live resource's open interval: its
    attributes are the row's (a change of attributes opens a new interval)."""

    id: int
    start: dt.datetime
    event_id: str
    locator: Any = None  # where the seam finds the row again (PostgreSQL: its ctid)


class HistorySpan(NamedTuple):
    """The instants a resource's events lie in, both ends included: from its row's
    ``first_event_at`` (None: no bound below) and ``last_event_at``, widened to its new
    events.  Every interval of its lifecycle ends in the span or is open (an interval
    starts at one event and ends at a later one).  A read by key that names it reads
    the monthly partitions (PostgreSQL, migration 0032) it covers, not every month."""

    first: dt.datetime | None
    last: dt.datetime


def batch_span(keys: Iterable[ResourceKey], spans: Mapping[ResourceKey, HistorySpan] | None
               ) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The span covering every one of ``keys``' spans (None: no bound on that side,
    e.g. without ``spans`` or when a key has none)."""
    found = [None if spans is None else spans.get(key) for key in keys]
    known = [span for span in found if span is not None]
    if not known or len(known) < len(found):
        return None, None
    firsts = [span.first for span in known if span.first is not None]
    return (min(firsts) if len(firsts) == len(known) else None), max(s.last for s in known)


class HeldResource(NamedTuple):
    """A resource the projection holds: its row and, while live, its open interval."""

    state: fold.ResourceState
    open_interval: OpenInterval | None
    locator: Any = None  # where the seam finds the row again (PostgreSQL: its ctid)


@dataclasses.dataclass
class FoldWrites:
    """Everything one fold of a batch writes (``Writes.write_fold``)."""

    new_rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    changed_rows: list[tuple[HeldResource, dict[str, Any]]] = dataclasses.field(
        default_factory=list)
    new_intervals: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    ended_intervals: list[tuple[OpenInterval, dt.datetime]] = dataclasses.field(
        default_factory=list)
    dropped_interval_ids: list[int] = dataclasses.field(default_factory=list)
    replayed: list[ResourceKey] = dataclasses.field(default_factory=list)
    # The replayed resources' spans: their old intervals are deleted within them.
    spans: dict[ResourceKey, HistorySpan] = dataclasses.field(default_factory=dict)


def by_type(keys: Iterable[ResourceKey]) -> dict[TypeKey, list[str]]:
    """Resource ids grouped by (platform, cloud, resource_type), each list sorted."""
    grouped: dict[TypeKey, list[str]] = {}
    for platform, cloud, rtype, rid in keys:
        grouped.setdefault((platform, cloud, rtype), []).append(rid)
    return {group: sorted(set(ids)) for group, ids in sorted(grouped.items())}


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# Keys a sync run looks up per statement (its projection rows, held rows, sightings).
SYNC_KEY_CHUNK = 2000


def _ids_by_type(keys: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for rtype, rid in keys:
        grouped.setdefault(rtype, []).append(rid)
    return grouped


def _rows_query(group: TypeKey, ids_match: sa.ColumnElement[bool],
                locator: sa.ColumnElement[Any]) -> sa.Select[Any]:
    cr = CURRENT.c
    return (
        sa.select(cr.resource_id, locator, *(cr[c] for c in STATE_COLUMNS))
        .where(cr.platform == group[0], cr.cloud == group[1], cr.resource_type == group[2],
               ids_match)
    )


def _open_query(group: TypeKey, ids_match: sa.ColumnElement[bool],
                locator: sa.ColumnElement[Any]) -> sa.Select[Any]:
    ri = INTERVALS.c
    return (
        sa.select(ri.resource_id, ri.id, ri.start, ri.event_id, locator)
        .where(ri.platform == group[0], ri.cloud == group[1], ri.resource_type == group[2],
               ids_match, ri.end.is_(None))
    )


def _state(row: Any) -> fold.ResourceState:
    # STATE_COLUMNS are ResourceState's fields in order (a test compares both).
    return fold.ResourceState(*row[2:])


def _history_query(group: TypeKey, ids_match: sa.ColumnElement[bool],
                   first: dt.datetime | None, last: dt.datetime | None) -> sa.Select[Any]:
    ev = EVENTS.c
    query = (
        sa.select(ev.resource_id, ev.event_id, ev.event_type, ev.project_id, ev.timestamp,
                  ev.payload, ev.seq)
        .where(ev.platform == group[0], ev.cloud == group[1], ev.resource_type == group[2],
               ids_match)
        .order_by(ev.resource_id, ev.timestamp, ev.seq)
    )
    if first is not None:
        query = query.where(ev.timestamp >= first)
    if last is not None:
        query = query.where(ev.timestamp <= last)
    return query


def seq_bounds(stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None
               ) -> tuple[int, int] | None:
    """The lowest and highest receipt number of ``stored`` (None: no events)."""
    seqs = [event.seq for events in (stored or {}).values() for event in events]
    return (min(seqs), max(seqs)) if seqs else None


def with_own_events(found: dict[ResourceKey, list[fold.FoldEvent]], keys: Iterable[ResourceKey],
                    stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None,
                    own: tuple[int, int] | None) -> dict[ResourceKey, list[fold.FoldEvent]]:
    """``found`` (histories read without the receipt numbers ``own``) with the events of
    ``stored`` put back, each resource's in fold order."""
    if own is None or not stored:
        return found
    for key in keys:
        events = stored.get(key)
        if not events:
            continue
        history = found.get(key)
        if history is None:
            found[key] = sorted(events, key=fold.ORDER_KEY)
        else:
            history.extend(events)
            history.sort(key=fold.ORDER_KEY)  # two ordered runs: one merge
    return found


def ends_within(first: dt.datetime | None, last: dt.datetime | None
                ) -> sa.ColumnElement[bool]:
    """An interval open or ending in ``[first, last]`` (None: unbounded on that side)."""
    end = INTERVALS.c.end
    bounds = [end >= first] if first is not None else []
    if last is not None:
        bounds.append(end <= last)
    return sa.or_(end.is_(None), sa.and_(*bounds)) if bounds else sa.true()


class Writes(abc.ABC):
    """The named operations; one subclass per dialect."""

    # --- the engine -----------------------------------------------------------------------

    @classmethod
    @abc.abstractmethod
    def create_engine(cls, url: str, *, pool_size: int, max_overflow: int, **options: Any
                      ) -> sa.Engine:
        """An engine of ``url`` with the connection settings this database needs."""

    @classmethod
    def missing_database(cls, url: sa.URL) -> str | None:
        """Why ``url`` names no database yet, where connecting would create an empty one
        (None: it exists, or the server refuses a missing one itself)."""
        return None

    @classmethod
    def private_to_process(cls, url: sa.URL) -> bool:
        """Whether ``url`` is a database only the process that opens it sees (another
        process, such as a sync run's, would open an empty one)."""
        return False

    # --- events ---------------------------------------------------------------------------

    @abc.abstractmethod
    def insert_events(self, session: Session, rows: Sequence[dict[str, Any]]
                      ) -> dict[str, int]:
        """Insert-or-ignore on event_id; answers ``{event_id: seq}`` of the rows this
        call inserted.  ``rows`` (non-empty) carry ``EVENT_COLUMNS`` and one
        ``received_at``, their event ids are distinct; seq follows their order (the
        receipt order)."""

    def store_events(self, session: Session, rows: Sequence[dict[str, Any]], *, hold: int
                     ) -> dict[str, int]:
        """An ingest transaction's first writes: hold lock ``hold`` shared until commit
        (before any receipt number is drawn), ``insert_events`` the rows, then
        ``lock_resources`` the resources of the rows it inserted.  Answers
        ``{event_id: seq}`` of those rows (``insert_events``'s answer)."""
        self.hold_shared(session, hold)
        seqs = self.insert_events(session, rows)
        self.lock_resources(session, {
            (row["platform"], row["cloud"], row["resource_type"], row["resource_id"])
            for row in rows if row["event_id"] in seqs})
        return seqs

    def insert_rejected(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        session.execute(sa.insert(REJECTED), list(rows))

    def file_rejected(self, session: Session, rows: Sequence[dict[str, Any]]
                      ) -> tuple[dict[str, int], dict[str, int]]:
        """Insert-or-ignore dead-letter rows on ``filed_key`` (distinct, non-empty
        ``rows``).  Answers ``({key: id} filed now, {key: id} filed before)``."""
        statement = (self._insert(REJECTED)
                     .on_conflict_do_nothing(index_elements=["filed_key"])
                     .returning(REJECTED.c.filed_key, REJECTED.c.id))
        filed = {key: row_id for key, row_id in session.execute(statement, list(rows))}
        others = [row["filed_key"] for row in rows if row["filed_key"] not in filed]
        before = {key: row_id for key, row_id in session.execute(
            sa.select(REJECTED.c.filed_key, REJECTED.c.id)
            .where(REJECTED.c.filed_key.in_(others)))} if others else {}
        return filed, before

    def retryable(self, exc: sa.exc.OperationalError) -> bool:
        """Whether a transaction that failed with ``exc`` may simply run again."""
        return False

    # --- what one read may cost ----------------------------------------------------------

    @abc.abstractmethod
    def limit_statement_time(self, session: Session, seconds: float) -> None:
        """Every statement ``session`` runs from now on (in this transaction and in any
        later one) is cancelled once it has run ``seconds``; the connection goes back to
        the pool without the limit."""

    @abc.abstractmethod
    def statement_timed_out(self, exc: sa.exc.OperationalError) -> bool:
        """Whether ``exc`` is a statement cancelled by ``limit_statement_time``."""

    # --- the projection -------------------------------------------------------------------

    @abc.abstractmethod
    def lock_resources(self, session: Session, keys: Iterable[ResourceKey]) -> None:
        """Serialise folds of these resources across processes until commit."""

    @abc.abstractmethod
    def _ids_match(self, column: sa.ColumnElement[str], ids: Sequence[str]
                   ) -> Iterable[sa.ColumnElement[bool]]:
        """Conditions ``column`` in ``ids``, one per statement to run."""

    def held_resources(self, session: Session, keys: Iterable[ResourceKey]
                       ) -> dict[ResourceKey, HeldResource]:
        """The rows of ``keys`` the projection holds, with their open intervals.

        Two flat statements per (platform, cloud, type), no join: whatever plan
        stale statistics give them, each reads the type's rows at most once."""
        held: dict[ResourceKey, HeldResource] = {}
        for group, ids in by_type(keys).items():
            states: dict[str, tuple[fold.ResourceState, Any]] = {}
            locator = self._locator(CURRENT)
            for match in self._ids_match(CURRENT.c.resource_id, ids):
                for row in session.execute(_rows_query(group, match, locator)).all():
                    states[row[0]] = (_state(row), row[1])
            live = sorted(rid for rid, (state, _) in states.items() if state.live)
            opened: dict[str, OpenInterval] = {}
            locator = self._locator(INTERVALS)
            for match in self._ids_match(INTERVALS.c.resource_id, live) if live else ():
                for row in session.execute(_open_query(group, match, locator)).all():
                    opened[row[0]] = OpenInterval(*row[1:])
            for rid, (state, row_locator) in states.items():
                held[(*group, rid)] = HeldResource(state, opened.get(rid), row_locator)
        return held

    def histories(self, session: Session, keys: Iterable[ResourceKey],
                  spans: Mapping[ResourceKey, HistorySpan] | None = None,
                  stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None = None
                  ) -> dict[ResourceKey, list[fold.FoldEvent]]:
        """The stored events of ``keys``, each resource's in fold order; read within
        the resources' ``spans`` when given (the same events: none lies outside).

        ``stored``: every event this transaction inserted, by key.  Those the seam can
        tell apart by their receipt numbers (``own_range``) are taken from it instead
        of read back (a late batch's replays read a third fewer rows); the answer is
        the same either way."""
        keys = list(keys)
        own = self.own_range(stored)
        found: dict[ResourceKey, list[fold.FoldEvent]] = {}
        for group, ids in by_type(keys).items():
            found.update(self._group_histories(session, group, ids, spans, own))
        return with_own_events(found, keys, stored, own)

    def _group_histories(self, session: Session, group: TypeKey, ids: Sequence[str],
                         spans: Mapping[ResourceKey, HistorySpan] | None,
                         omit: tuple[int, int] | None
                         ) -> dict[ResourceKey, list[fold.FoldEvent]]:
        """``histories`` of the resources ``ids`` of one type, in fold order, without
        the events numbered in ``omit`` (both ends included)."""
        found: dict[ResourceKey, list[fold.FoldEvent]] = {}
        first, last = batch_span([(*group, rid) for rid in ids], spans)
        for match in self._ids_match(EVENTS.c.resource_id, ids):
            query = _history_query(group, match, first, last)
            if omit is not None:
                query = query.where(sa.not_(EVENTS.c.seq.between(*omit)))
            for r in session.execute(query).all():
                # The query's columns after resource_id are FoldEvent's fields in order.
                found.setdefault((*group, r[0]), []).append(fold.FoldEvent(*r[1:]))
        return found

    def own_range(self, stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None
                  ) -> tuple[int, int] | None:
        """``(lowest, highest)`` receipt number of ``stored`` when every event of the
        database numbered in that range is one of them (this transaction's own), else
        None: nothing is omitted from a read."""
        return None

    def insert_rows(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        """Insert ``current_resources`` rows (``KEY_NAMES`` + ``STATE_COLUMNS``) of
        resources not held (the caller holds their locks)."""
        if rows:
            session.execute(sa.insert(CURRENT), list(rows))

    @abc.abstractmethod
    def _locator(self, table: sa.Table) -> sa.ColumnElement[Any]:
        """What ``held_resources`` reads beside each row to find it again."""

    @abc.abstractmethod
    def update_rows(self, session: Session,
                    rows: Sequence[tuple[HeldResource, dict[str, Any]]]) -> None:
        """Replace the ``STATE_COLUMNS`` of held rows: ``(as held_resources read it,
        new row)`` pairs, the resources still locked since that read."""

    @abc.abstractmethod
    def end_intervals(self, session: Session,
                      ends: Sequence[tuple[OpenInterval, dt.datetime]]) -> None:
        """Set the end of open intervals ``held_resources`` read (resources locked)."""

    def drop_intervals(self, session: Session, ids: Sequence[int]) -> None:
        if ids:
            session.execute(sa.delete(INTERVALS).where(INTERVALS.c.id.in_(list(ids))))

    @abc.abstractmethod
    def insert_intervals(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        """Insert ``resource_intervals`` rows (``INTERVAL_COLUMNS``)."""

    def replace_intervals(self, session: Session, replayed: Iterable[ResourceKey],
                          intervals: Sequence[dict[str, Any]],
                          spans: Mapping[ResourceKey, HistorySpan] | None = None) -> None:
        """Delete every interval of the ``replayed`` resources (found within their
        ``spans`` when given), then insert ``intervals`` (``INTERVAL_COLUMNS``, of any
        resource)."""
        self.delete_intervals_of(session, replayed, spans)
        self.insert_intervals(session, intervals)

    def delete_intervals_of(self, session: Session, keys: Iterable[ResourceKey],
                            spans: Mapping[ResourceKey, HistorySpan] | None = None) -> None:
        """Delete every interval of the resources ``keys``; found within their
        ``spans`` when given (every interval of a resource ends in its span or is open)."""
        ri = INTERVALS.c
        for group, ids in by_type(keys).items():
            within = ends_within(*batch_span([(*group, rid) for rid in ids], spans))
            for match in self._ids_match(ri.resource_id, ids):
                session.execute(sa.delete(INTERVALS).where(
                    ri.platform == group[0], ri.cloud == group[1], ri.resource_type == group[2],
                    match, within))

    def write_fold(self, session: Session, planned: FoldWrites) -> None:
        """Write a batch's fold: drop and end open intervals, replace the intervals
        of the replayed resources, insert the new intervals, update the held rows and
        insert the new ones (the resources locked since ``held_resources``).  The plan
        is written once: its dicts may be used up."""
        self.drop_intervals(session, planned.dropped_interval_ids)
        self.end_intervals(session, planned.ended_intervals)
        self.replace_intervals(session, planned.replayed, planned.new_intervals, planned.spans)
        self.update_rows(session, planned.changed_rows)
        self.insert_rows(session, planned.new_rows)

    # --- reconciliation, resource types, usage ----------------------------------------------

    @abc.abstractmethod
    def _insert(self, table: sa.Table) -> Any:
        """The dialect's INSERT construct (it has ``on_conflict_do_update``)."""

    def open_sightings(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        """Insert sightings; a closed one (same key) reopens at the new first_seen_at."""
        if not rows:
            return
        statement = self._insert(SIGHTINGS)
        statement = statement.on_conflict_do_update(
            index_elements=["cloud", "resource_type", "resource_id"],
            set_={"first_seen_at": statement.excluded.first_seen_at, "seen_until": None},
        )
        session.execute(statement, list(rows))

    def rows_by_key(self, session: Session, platform: str, cloud: str,
                    keys: Sequence[tuple[str, str]]) -> list[Any]:
        """The projection rows of ``keys`` ((type, id) of one cloud), those held as deleted
        included: (resource_type, resource_id, project_id, state, size, live,
        last_event_at, deleted_at) each, in no order."""
        c = CURRENT.c
        found: list[Any] = []
        for rtype, ids in _ids_by_type(keys).items():
            for chunk in chunks(ids, SYNC_KEY_CHUNK):
                found.extend(session.execute(sa.select(
                    c.resource_type, c.resource_id, c.project_id, c.state, c.size, c.live,
                    c.last_event_at, c.deleted_at).where(
                    c.platform == platform, c.cloud == cloud, c.resource_type == rtype,
                    c.resource_id.in_(chunk))).all())
        return found

    def sightings_by_key(self, session: Session, cloud: str,
                         keys: Sequence[tuple[str, str]]) -> list[Any]:
        """The sightings of ``keys`` ((type, id) of one cloud): (resource_type,
        resource_id, seen_until) each, None while open, in no order."""
        s = SIGHTINGS.c
        found: list[Any] = []
        for rtype, ids in _ids_by_type(keys).items():
            for chunk in chunks(ids, SYNC_KEY_CHUNK):
                found.extend(session.execute(sa.select(
                    s.resource_type, s.resource_id, s.seen_until).where(
                    s.cloud == cloud, s.resource_type == rtype,
                    s.resource_id.in_(chunk))).all())
        return found

    def upsert_size_names(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        statement = self._insert(SIZE_NAMES)
        statement = statement.on_conflict_do_update(
            index_elements=["platform", "cloud", "kind", "size_id"],
            set_={"name": statement.excluded.name, "updated_at": statement.excluded.updated_at},
        )
        session.execute(statement, list(rows))

    def upsert_resource_type(self, session: Session, platform: str, resource_type: str,
                             size_schema: Any, updated_at: dt.datetime) -> None:
        """Register or replace a size schema (two concurrent PUTs both succeed)."""
        statement = self._insert(RESOURCE_TYPES).values(
            platform=platform, resource_type=resource_type, size_schema=size_schema,
            updated_at=updated_at)
        session.execute(statement.on_conflict_do_update(
            index_elements=["platform", "resource_type"],
            set_={"size_schema": statement.excluded.size_schema,
                  "updated_at": statement.excluded.updated_at},
        ))

    @abc.abstractmethod
    def epoch_micros(self, column: Any) -> sa.ColumnElement[int]:
        """Whole microseconds since the epoch of a naive UTC DateTime column, exactly."""

    # --- billing: the locks that make a close sound (``reporting.billing.locks``) ---------

    @abc.abstractmethod
    def hold_shared(self, session: Session, key: int) -> None:
        """Hold lock ``key`` shared until commit."""

    @abc.abstractmethod
    def xact_lock(self, session: Session, key: int) -> None:
        """Hold lock ``key`` exclusively until commit."""

    @abc.abstractmethod
    def begin_ingest(self, session: Session) -> None:
        """Ready an ingest transaction, just begun, for its short statements."""

    @abc.abstractmethod
    def begin_write(self, session: Session) -> None:
        """Start the transaction so that it writes from its first statement."""

    @contextlib.contextmanager
    def serialised(self, factory: sessionmaker[Session], keys: Sequence[int]
                   ) -> Iterator[Session]:
        """A session holding the locks ``keys`` (in order) until it commits on exit.

        One writer at a time: the session holds the database's write lock instead."""
        with factory() as session:
            self.begin_write(session)
            yield session
            session.commit()

    @contextlib.contextmanager
    def snapshot(self, factory: sessionmaker[Session], guard: Session, pause: int,
                 read: Callable[[Session], T]) -> Iterator[tuple[Session, T]]:
        """A session whose snapshot is taken by ``read`` (its first statement) while no
        transaction holding lock ``pause`` shared is in flight, and ``read``'s answer.

        One writer at a time: ``guard`` (from ``serialised``) already sees every committed
        write and no other can start, so it is the snapshot."""
        yield guard, read(guard)

    # --- billing: rating and freezing a period (``reporting.billing``) -------------------

    @abc.abstractmethod
    def month_of(self, instant: Any) -> sa.ColumnElement[Any]:
        """The calendar month of a naive UTC instant, spelt as ``ix_events_cloud_month_seq``
        indexes it (only compared with another ``month_of``)."""

    def _months(self, cloud: str, before: dt.datetime) -> Any:
        """The months before ``before`` holding events of ``cloud``: a loose scan of
        ``ix_events_cloud_month_seq``, one descent per month."""
        month = self.month_of(EVENTS.c.timestamp)
        limit = self.month_of(sa.literal(before, sa.DateTime()))

        def first_after(low: Any) -> Any:
            query = sa.select(month).where(EVENTS.c.cloud == cloud, month < limit)
            if low is not None:
                query = query.where(month > low)
            return query.order_by(month).limit(1).scalar_subquery()

        months = sa.select(first_after(None).label("m")).cte("months", recursive=True)
        return months.union_all(sa.select(first_after(months.c.m)).where(months.c.m.is_not(None)))

    def late_events(self, session: Session, cloud: str, before: dt.datetime, after_seq: int
                    ) -> list[Any]:
        """The events of ``cloud`` dated before ``before`` (a month's start) and received
        after ``after_seq`` (platform, resource_type, resource_id, seq, event_id,
        timestamp): per month holding events of the cloud, one range of
        ``ix_events_cloud_month_seq``."""
        months = self._months(cloud, before)
        ev = EVENTS.c
        query = (
            sa.select(ev.platform, ev.resource_type, ev.resource_id, ev.seq, ev.event_id,
                      ev.timestamp)
            .select_from(months)
            .join(EVENTS, sa.and_(ev.cloud == cloud, self.month_of(ev.timestamp) == months.c.m,
                                  ev.seq > after_seq))
            .where(ev.timestamp < before)
        )
        return list(session.execute(query))

    @abc.abstractmethod
    def project_subtotals(self, session: Session, cloud: str, versions: Sequence[Any],
                          start: dt.datetime, end: dt.datetime, now: dt.datetime,
                          after: str | None, limit: int) -> dict[str, tuple[Decimal, int]]:
        """``{project: (subtotal, unrated lines)}`` of the first ``limit`` projects after
        ``after`` with a line in ``[start, end)`` (open intervals end at ``now``), in
        project order."""

    @abc.abstractmethod
    def project_totals(self, session: Session, cloud: str, versions: Sequence[Any],
                       start: dt.datetime, end: dt.datetime, now: dt.datetime,
                       after: str | None, limit: int
                       ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        """``project_subtotals`` and those projects' tier lines
        (``reporting.billing.tiers``, not in the subtotals)."""

    @abc.abstractmethod
    def project_lines(self, session: Session, cloud: str, project_id: str,
                      versions: Sequence[Any], start: dt.datetime, end: dt.datetime,
                      now: dt.datetime) -> Any:
        """``project_id``'s lines of ``[start, end)`` (open intervals end at ``now``) as
        its statement answers them (``reporting.billing.statements.ProjectLines``)."""

    @abc.abstractmethod
    def tier_lines_of(self, session: Session, cloud: str, versions: Sequence[Any],
                      start: dt.datetime, end: dt.datetime, now: dt.datetime, places: int,
                      projects: Sequence[str]) -> list[Any]:
        """The tier lines (``reporting.billing.tiers``) of ``projects`` in ``[start,
        end)`` (open intervals end at ``now``), rounded to ``places``."""

    @abc.abstractmethod
    def freeze_lines(self, session: Session, cloud: str, period: str, versions: Sequence[Any],
                     now: dt.datetime, places: int | None = None
                     ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        """In a close's snapshot: write every line of ``period`` as frozen rows
        (``reporting.billing.frozen``; each project's ``body`` left for the caller) and
        the per-resource amounts; answer each project's (subtotal, unrated lines) and
        the period's tier lines (``reporting.billing.tiers``) rounded to ``places``
        (None: each version's currency's)."""
