"""The write seam on PostgreSQL.

A batch to insert travels as one array parameter per column, rows to update as one
JSON array (``pg_batch``, ``pg_fold``): writing 1000 rows costs one short statement
and a few ``orjson.dumps``; ids travel as one array.  The fold's reads and deletes by
key probe each key's index (``pg_lookup``), whatever the planner's statistics say.
An ingest batch costs three statements: its events and locks (``pg_ingest.STORE``),
its held rows with their open intervals (``pg_lookup.HELD``) and its fold's writes
(``pg_fold``).

No deadlock between concurrent batches: each transaction inserts its events in
event_id order and takes its resources' advisory locks in key order, so no two
transactions wait for each other's locks in opposite orders.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session, sessionmaker

from reporting import fold
from reporting.billing import sql_close, sql_rating, tiers
from reporting.db.writes import pg_batch, pg_fold, pg_ingest, pg_lookup
from reporting.db.writes.base import (
    CURRENT,
    EVENT_COLUMNS,
    EVENTS,
    INTERVALS,
    KEY_NAMES,
    SYNC_KEY_CHUNK,
    FoldWrites,
    HeldResource,
    HistorySpan,
    OpenInterval,
    ResourceKey,
    T,
    TypeKey,
    Writes,
    by_type,
    chunks,
    seq_bounds,
)

_NAMES = ", ".join(f'"{c}"' for c in EVENT_COLUMNS)
# One number per event (a database whose sequence still steps by 1, or a batch
# larger than a block): seq is drawn in batch order (ORDER BY ord before nextval
# runs, in a materialised step), the rows are inserted in event_id order.
_NUMBERED = (
    "WITH batch AS MATERIALIZED ("  # noqa: S608 - names come from the model
    f"SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS seq, {_NAMES} "
    f"FROM ROWS FROM ({pg_ingest.BATCH_SOURCES}) "
    f"WITH ORDINALITY AS b({_NAMES}, ord) ORDER BY ord) "
)
_FROM_BATCH = ", ".join(f'batch."{c}"' for c in EVENT_COLUMNS)
_INSERT_EVENTS = {
    False: sa.text(
        f"{_NUMBERED}INSERT INTO events (seq, {_NAMES}, received_at) "  # noqa: S608
        f"SELECT seq, {_NAMES}, CAST(:received_at AS timestamp) FROM batch ORDER BY event_id "
        "ON CONFLICT (event_id) DO NOTHING RETURNING event_id, seq"),
    # Partitioned (migration 0032): the ids claimed first, in event_id order.
    True: sa.text(
        f"{_NUMBERED}, claimed AS (INSERT INTO {pg_ingest.EVENT_IDS} (event_id) "  # noqa: S608
        "SELECT event_id FROM batch ORDER BY event_id "
        "ON CONFLICT (event_id) DO NOTHING RETURNING event_id) "
        f"INSERT INTO events (seq, {_NAMES}, received_at) "
        f"SELECT batch.seq, {_FROM_BATCH}, CAST(:received_at AS timestamp) FROM batch "
        "JOIN claimed ON claimed.event_id = batch.event_id RETURNING event_id, seq"),
}
_IDS = postgresql.ARRAY(sa.String)
# Serialization failures are retried whole; deadlocks should no longer happen, but
# a retry is still the right answer to one.
_RETRYABLE = ("40P01", "40001")  # deadlock_detected, serialization_failure


def _update_located(session: Session, table: sa.Table,
                    rows: Sequence[tuple[Any, dict[str, Any]]], check: str, where: str = ""
                    ) -> None:
    """UPDATE rows where the read under the same locks found them (a TID scan)."""
    columns = [c for c in rows[0][1] if c not in KEY_NAMES and c != check]
    located = pg_fold.located_update(table, "located", columns, check, where)
    statement = (f"WITH {located} "  # noqa: S608
                 "SELECT count(*) FROM located")
    params = pg_fold.located_params(
        "located", [{"locator": locator, **values} for locator, values in rows])
    updated = session.execute(sa.text(statement), params).scalar_one()
    if updated != len(rows):
        raise RuntimeError(f"{table.name}: {updated} of {len(rows)} rows "
                           "found where they were read")


_NO_JIT = sa.text("SELECT set_config('jit', 'off', true)")

# query_canceled: statement_timeout (or a cancel request) ended the statement.
_QUERY_CANCELED = "57014"


class PostgresWrites(Writes):
    @classmethod
    def create_engine(cls, url: str, *, pool_size: int, max_overflow: int, **options: Any
                      ) -> sa.Engine:
        if sa.engine.make_url(url).get_driver_name() == "psycopg":
            # No server-side prepared statements: psycopg prepares a statement on its
            # fifth run on a connection, and PostgreSQL may then keep one generic plan
            # for it, made for statistics of that moment.  The fold's probes planned
            # while the open intervals' partition was empty kept a sequential scan of it
            # per key (0.7 s a batch at 10,000 open intervals, growing) until an
            # ANALYZE invalidated the plan.  Planned per run, as psycopg2 always did.
            options["connect_args"] = {"prepare_threshold": None,
                                       **options.get("connect_args", {})}
        # A pinged checkout: a pooled connection the server closed is replaced, not used.
        return sa.create_engine(url, pool_size=pool_size, max_overflow=max_overflow,
                                pool_pre_ping=True, **options)

    def __init__(self) -> None:
        # Whether the events sequence steps by a block (migration 0016), and whether
        # the history is partitioned (migration 0032), read once.
        self._blocks: bool | None = None
        self._partitioned = False

    def _read_shape(self, session: Session) -> None:
        if self._blocks is None:
            self._partitioned = session.execute(pg_ingest.PARTITIONED).scalar_one()
            self._blocks = session.execute(pg_ingest.STEP).scalar_one() >= pg_ingest.BLOCK

    def insert_events(self, session: Session, rows: Sequence[dict[str, Any]]
                      ) -> dict[str, int]:
        # received_at travels once, beside the batch: no column of it is sent.
        self._read_shape(session)
        params = {"received_at": rows[0]["received_at"],
                  **pg_batch.column_params(pg_ingest.EVENT_BATCH, "batch", rows)}
        return {event_id: seq for event_id, seq
                in session.execute(_INSERT_EVENTS[self._partitioned], params)}

    def store_events(self, session: Session, rows: Sequence[dict[str, Any]], *, hold: int
                     ) -> dict[str, int]:
        self._read_shape(session)
        if self._blocks and len(rows) <= pg_ingest.BLOCK:
            return pg_ingest.store(session, rows, hold, partitioned=self._partitioned)
        # Several statements; the resources are still locked in one, in key order.
        return super().store_events(session, rows, hold=hold)

    def begin_ingest(self, session: Session) -> None:
        # No JIT for the batch's statements: their estimates (1000 keys, each probe
        # priced at its index's size) pass jit_above_cost as the tables grow, and
        # compiling cost ~10 ms a batch for statements that run in a few.
        session.execute(_NO_JIT)

    def retryable(self, exc: sa.exc.OperationalError) -> bool:
        return getattr(exc.orig, "sqlstate", None) in _RETRYABLE

    def limit_statement_time(self, session: Session, seconds: float) -> None:
        # SET LOCAL ends with its transaction, so a pooled connection never keeps it;
        # a transaction the session begins later (after a commit) sets it again.
        millis = max(1, round(seconds * 1000))

        def _set(_session: Session, _transaction: Any, connection: sa.Connection) -> None:
            connection.exec_driver_sql(f"SET LOCAL statement_timeout = {millis:d}")

        sa.event.listen(session, "after_begin", _set)
        if session.in_transaction():
            _set(session, None, session.connection())

    def statement_timed_out(self, exc: sa.exc.OperationalError) -> bool:
        return getattr(exc.orig, "sqlstate", None) == _QUERY_CANCELED

    def lock_resources(self, session: Session, keys: Iterable[ResourceKey]) -> None:
        pg_ingest.lock(session, keys)

    def _ids_match(self, column: sa.ColumnElement[str], ids: Sequence[str]
                   ) -> Iterable[sa.ColumnElement[bool]]:
        # One text parameter cast server-side (pg_batch.array_literal), not a list
        # psycopg adapts element by element.
        yield column == sa.any_(sa.cast(
            sa.bindparam("ids", pg_batch.array_literal(ids), type_=sa.Text), _IDS))

    # Reads and deletes by key probe each key (pg_lookup): no plan walks a table.

    def held_resources(self, session: Session, keys: Iterable[ResourceKey]
                       ) -> dict[ResourceKey, HeldResource]:
        held: dict[ResourceKey, HeldResource] = {}
        for group, ids in by_type(keys).items():
            held.update(pg_lookup.held(session, group, ids))
        return held

    def _group_histories(self, session: Session, group: TypeKey, ids: Sequence[str],
                         spans: Mapping[ResourceKey, HistorySpan] | None,
                         omit: tuple[int, int] | None
                         ) -> dict[ResourceKey, list[fold.FoldEvent]]:
        return pg_lookup.histories(session, group, ids, spans, omit=omit)

    def own_range(self, stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None
                  ) -> tuple[int, int] | None:
        # Numbers less than a block apart were drawn by one nextval (each draw steps
        # the sequence by a block): the block is this transaction's alone.  Numbers
        # drawn one per event may interleave with a concurrent batch's.
        bounds = seq_bounds(stored)
        if not self._blocks or bounds is None or bounds[1] - bounds[0] >= pg_ingest.BLOCK:
            return None
        return bounds

    def rows_by_key(self, session: Session, platform: str, cloud: str,
                    keys: Sequence[tuple[str, str]]) -> list[Any]:
        found: list[Any] = []
        for chunk in chunks(keys, SYNC_KEY_CHUNK):
            found.extend(pg_lookup.sync_rows(session, platform, cloud, chunk))
        return found

    def sightings_by_key(self, session: Session, cloud: str,
                         keys: Sequence[tuple[str, str]]) -> list[Any]:
        found: list[Any] = []
        for chunk in chunks(keys, SYNC_KEY_CHUNK):
            found.extend(pg_lookup.sync_sightings(session, cloud, chunk))
        return found

    def delete_intervals_of(self, session: Session, keys: Iterable[ResourceKey],
                            spans: Mapping[ResourceKey, HistorySpan] | None = None) -> None:
        for group, ids in by_type(keys).items():
            pg_lookup.delete_intervals(session, group, ids, spans)

    def insert_rows(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            pg_batch.insert(session, CURRENT, rows)

    def _locator(self, table: sa.Table) -> sa.ColumnElement[Any]:
        return sa.literal_column(f"{table.name}.ctid", sa.String)

    def update_rows(self, session: Session,
                    rows: Sequence[tuple[HeldResource, dict[str, Any]]]) -> None:
        if rows:
            _update_located(session, CURRENT, [(held.locator, row) for held, row in rows],
                            check="resource_id")

    def end_intervals(self, session: Session,
                      ends: Sequence[tuple[OpenInterval, dt.datetime]]) -> None:
        if ends:
            _update_located(session, INTERVALS,
                            [(opened.locator, {"id": opened.id, "end": end}) for opened, end in ends],
                            check="id", where=pg_fold.OPEN)

    def insert_intervals(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            pg_batch.insert(session, INTERVALS, rows)

    def write_fold(self, session: Session, planned: FoldWrites) -> None:
        # One statement for every write located by the read (pg_fold); the
        # replayed resources' intervals go first, found by key.
        if planned.replayed:
            self.delete_intervals_of(session, planned.replayed, planned.spans)
        pg_fold.write_fold(session, planned)

    def _insert(self, table: sa.Table) -> Any:
        return postgresql.insert(table)

    def epoch_micros(self, column: Any) -> sa.ColumnElement[int]:
        # EXTRACT(EPOCH ...) is an exact numeric (PostgreSQL >= 14).
        return sa.cast(sa.extract("epoch", column) * 1_000_000, sa.BigInteger)

    # --- billing locks: advisory locks, all in the key space of ``reporting.billing.locks``

    def hold_shared(self, session: Session, key: int) -> None:
        session.execute(sa.text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": key})

    def xact_lock(self, session: Session, key: int) -> None:
        session.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})

    def begin_write(self, session: Session) -> None:
        pass  # row and advisory locks are taken where needed; no lock to upgrade

    @contextlib.contextmanager
    def serialised(self, factory: sessionmaker[Session], keys: Sequence[int]
                   ) -> Iterator[Session]:
        with factory() as session:
            for key in keys:
                self.xact_lock(session, key)
            yield session
            session.commit()

    @contextlib.contextmanager
    def snapshot(self, factory: sessionmaker[Session], guard: Session, pause: int,
                 read: Callable[[Session], T]) -> Iterator[tuple[Session, T]]:
        # Session-level exclusive on the guard's connection: it waits for every transaction
        # holding ``pause`` shared to commit, and none can take it until the unlock, so the
        # REPEATABLE READ snapshot ``read`` takes holds exactly what had committed.
        held = guard.connection()
        with factory() as session:
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            held.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": pause})
            try:
                taken = read(session)  # the snapshot is taken here
            finally:
                held.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": pause})
            yield session, taken

    # --- billing: set-based rating and freezing (``reporting.billing.sql_rating``) --------

    def month_of(self, instant: Any) -> sa.ColumnElement[Any]:
        # A literal, not a bound parameter: the planner matches the index's expression.
        return sa.func.date_trunc(sa.literal_column("'month'"), instant)

    def late_events(self, session: Session, cloud: str, before: dt.datetime, after_seq: int
                    ) -> list[Any]:
        # One index range per month, as a lateral scan: the planner cannot know that
        # old months hold few late receipts, and would rather read every receipt after
        # ``after_seq`` (a month of ingest) by the primary key.
        months = self._months(cloud, before)
        ev = EVENTS.c
        per_month = (
            sa.select(ev.platform, ev.resource_type, ev.resource_id, ev.seq, ev.event_id,
                      ev.timestamp)
            .where(ev.cloud == cloud, self.month_of(ev.timestamp) == months.c.m,
                   ev.seq > after_seq, ev.timestamp < before)
            .offset(0)  # not pulled up into a join: one scan per month
            .lateral("late")
        )
        query = sa.select(per_month).select_from(months).join(per_month, sa.true())
        return list(session.execute(query))

    def project_subtotals(self, session: Session, cloud: str, versions: Sequence[Any],
                          start: dt.datetime, end: dt.datetime, now: dt.datetime,
                          after: str | None, limit: int) -> dict[str, tuple[Decimal, int]]:
        return sql_rating.project_subtotals(session, cloud, list(versions), start, end, now,
                                            after, limit)

    def project_totals(self, session: Session, cloud: str, versions: Sequence[Any],
                       start: dt.datetime, end: dt.datetime, now: dt.datetime,
                       after: str | None, limit: int
                       ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        subtotals, sums = sql_rating.project_totals(session, cloud, list(versions), start, end,
                                                    now, after, limit)
        return subtotals, tiers.from_sums(sums, versions)

    def project_lines(self, session: Session, cloud: str, project_id: str,
                      versions: Sequence[Any], start: dt.datetime, end: dt.datetime,
                      now: dt.datetime) -> Any:
        return sql_rating.project_lines(session, cloud, project_id, list(versions), start,
                                        end, now)

    def tier_lines_of(self, session: Session, cloud: str, versions: Sequence[Any],
                      start: dt.datetime, end: dt.datetime, now: dt.datetime, places: int,
                      projects: Sequence[str]) -> list[Any]:
        _subtotals, sums = sql_rating.project_totals(session, cloud, list(versions), start,
                                                     end, now, projects=projects)
        return tiers.from_sums(sums, versions, places)

    def freeze_lines(self, session: Session, cloud: str, period: str, versions: Sequence[Any],
                     now: dt.datetime, places: int | None = None
                     ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        totals, sums = sql_close.freeze(session, cloud, period, versions)
        return totals, tiers.from_sums(sums, versions, places)
