"""The write seam on SQLite: Core statements run as executemany.

A write transaction holds the database write lock, so folds never run side by
side and resources need no lock of their own.  Billing rates and freezes with the
pure rating in Python (PostgreSQL does it set-based; tests keep both equal).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from reporting import fold
from reporting.billing import frozen, periods, statements, tiers
from reporting.db.writes.base import (
    CURRENT,
    EVENTS,
    INTERVALS,
    KEY_NAMES,
    STATE_COLUMNS,
    HeldResource,
    OpenInterval,
    ResourceKey,
    Writes,
    chunks,
    seq_bounds,
)

# Bounds the bind parameters of one IN list.
_CHUNK = 500

_INSERT_EVENTS = (
    sqlite.insert(EVENTS)
    .on_conflict_do_nothing(index_elements=["event_id"])
    .returning(EVENTS.c.event_id, EVENTS.c.seq, sort_by_parameter_order=True)
)
_UPDATE_ROW = (
    sa.update(CURRENT)
    .where(*(CURRENT.c[name] == sa.bindparam(f"b_{name}") for name in KEY_NAMES))
    .values({c: sa.bindparam(f"b_{c}") for c in STATE_COLUMNS})
)
_END_INTERVAL = (
    sa.update(INTERVALS).where(INTERVALS.c.id == sa.bindparam("b_id"))
    .values(end=sa.bindparam("b_end"))
)


def _pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    # WAL lets readers run beside the single writer; busy_timeout makes concurrent
    # writers (several gunicorn workers) wait instead of failing.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# A statement limit on SQLite: a progress handler (called every _PROGRESS_STEPS virtual
# machine steps) interrupts a statement past its deadline; each statement's deadline is
# set as it starts.  Both live in the pooled connection's info until its check-in.
_LIMIT = "tally.statement_limit_s"
_DEADLINE = "tally.statement_deadline"
_PROGRESS_STEPS = 1000


def _start_statement(conn: sa.Connection, _cursor: Any, _statement: Any, _parameters: Any,
                     _context: Any, _executemany: bool) -> None:
    limit = conn.info.get(_LIMIT)
    if limit is not None:
        conn.info[_DEADLINE][0] = time.monotonic() + limit


def _drop_limit(dbapi_conn: Any, record: Any) -> None:
    if record.info.pop(_LIMIT, None) is not None:
        record.info.pop(_DEADLINE, None)
        if dbapi_conn is not None:
            dbapi_conn.set_progress_handler(None, 0)


class SqliteWrites(Writes):
    @classmethod
    def create_engine(cls, url: str, *, pool_size: int, max_overflow: int, **options: Any
                      ) -> sa.Engine:
        # One file, one writer at a time: no pool to size; WAL and a busy timeout.
        engine = sa.create_engine(url, connect_args={"check_same_thread": False}, **options)
        sa.event.listen(engine, "connect", _pragmas)
        sa.event.listen(engine, "before_cursor_execute", _start_statement)
        sa.event.listen(engine, "checkin", _drop_limit)
        return engine

    @classmethod
    def missing_database(cls, url: sa.URL) -> str | None:
        if cls.private_to_process(url) or Path(str(url.database)).exists():
            return None
        return f"names the SQLite file {url.database}, which does not exist"

    @classmethod
    def private_to_process(cls, url: sa.URL) -> bool:
        return url.database in (None, "", ":memory:")  # in memory

    def insert_events(self, session: Session, rows: Sequence[dict[str, Any]]
                      ) -> dict[str, int]:
        return {event_id: seq for event_id, seq in session.execute(_INSERT_EVENTS, list(rows))}

    def retryable(self, exc: sa.exc.OperationalError) -> bool:
        return "database is locked" in str(exc.orig)

    def limit_statement_time(self, session: Session, seconds: float) -> None:
        def _set(_session: Session, _transaction: Any, connection: sa.Connection) -> None:
            info = connection.info
            if _LIMIT not in info:
                deadline = [math.inf]
                info[_DEADLINE] = deadline
                connection.connection.driver_connection.set_progress_handler(  # type: ignore[union-attr]
                    lambda: time.monotonic() > deadline[0], _PROGRESS_STEPS)
            info[_LIMIT] = seconds

        sa.event.listen(session, "after_begin", _set)
        if session.in_transaction():
            _set(session, None, session.connection())

    def statement_timed_out(self, exc: sa.exc.OperationalError) -> bool:
        return getattr(exc.orig, "sqlite_errorname", None) == "SQLITE_INTERRUPT"

    def own_range(self, stored: Mapping[ResourceKey, Sequence[fold.FoldEvent]] | None
                  ) -> tuple[int, int] | None:
        # One writer at a time: nothing but this transaction numbered an event since
        # its first insert.
        return seq_bounds(stored)

    def lock_resources(self, session: Session, keys: Iterable[ResourceKey]) -> None:
        """Nothing to do: the transaction holds the database write lock already (it
        inserted the events)."""

    def _ids_match(self, column: sa.ColumnElement[str], ids: Sequence[str]
                   ) -> Iterable[sa.ColumnElement[bool]]:
        for chunk in chunks(ids, _CHUNK):
            yield column.in_(list(chunk))

    def _locator(self, table: sa.Table) -> sa.ColumnElement[Any]:
        return sa.null()  # SQLite's planner finds rows by their primary key

    def update_rows(self, session: Session,
                    rows: Sequence[tuple[HeldResource, dict[str, Any]]]) -> None:
        if rows:
            session.execute(_UPDATE_ROW,
                            [{f"b_{c}": v for c, v in row.items()} for _, row in rows])

    def end_intervals(self, session: Session,
                      ends: Sequence[tuple[OpenInterval, dt.datetime]]) -> None:
        if ends:
            session.execute(_END_INTERVAL,
                            [{"b_id": opened.id, "b_end": end} for opened, end in ends])

    def insert_intervals(self, session: Session, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            session.execute(sa.insert(INTERVALS), list(rows))

    def _insert(self, table: sa.Table) -> Any:
        return sqlite.insert(table)

    def epoch_micros(self, column: Any) -> sa.ColumnElement[int]:
        # Instants are 'YYYY-MM-DD HH:MM:SS.ffffff' text: whole seconds plus the digits.
        # The seconds of the text without its fraction: strftime rounds a fraction to
        # milliseconds, so '...:59.999999' would count a second too many.
        seconds = sa.cast(sa.func.strftime("%s", sa.func.substr(column, 1, 19)), sa.BigInteger)
        fraction = sa.cast(sa.func.substr(column, 21, 6), sa.BigInteger)
        return seconds * 1_000_000 + fraction

    def hold_shared(self, session: Session, key: int) -> None:
        pass  # one writer at a time: a write transaction excludes every other

    def xact_lock(self, session: Session, key: int) -> None:
        pass  # the transaction holds the write lock from ``begin_write``

    def begin_ingest(self, session: Session) -> None:
        pass  # SQLite plans every statement anew and compiles nothing

    def begin_write(self, session: Session) -> None:
        # A transaction that reads first cannot always upgrade to a writer while another
        # worker writes: a no-op write takes the write lock (and the newest snapshot) now.
        session.execute(sa.text("DELETE FROM billing_periods WHERE 1 = 0"))

    def month_of(self, instant: Any) -> sa.ColumnElement[Any]:
        # 'YYYY-MM' of 'YYYY-MM-DD HH:MM:SS.ffffff'; literals, not bound parameters,
        # so that the planner matches the index's expression.
        return sa.func.substr(instant, sa.literal_column("1"), sa.literal_column("7"))

    def project_subtotals(self, session: Session, cloud: str, versions: Sequence[Any],
                          start: dt.datetime, end: dt.datetime, now: dt.datetime,
                          after: str | None, limit: int) -> dict[str, tuple[Decimal, int]]:
        return statements.python_subtotals(session, cloud, list(versions), start, end, now,
                                           after, limit)

    def project_totals(self, session: Session, cloud: str, versions: Sequence[Any],
                       start: dt.datetime, end: dt.datetime, now: dt.datetime,
                       after: str | None, limit: int
                       ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        subtotals = self.project_subtotals(session, cloud, versions, start, end, now, after,
                                           limit)
        if not subtotals:
            return subtotals, []
        listed = sorted(subtotals)
        return subtotals, statements.tier_lines(session, cloud, list(versions), start, end,
                                                now, projects=(listed[0], listed[-1]))

    def project_lines(self, session: Session, cloud: str, project_id: str,
                      versions: Sequence[Any], start: dt.datetime, end: dt.datetime,
                      now: dt.datetime) -> Any:
        return statements.python_project_lines(session, cloud, project_id, list(versions),
                                               start, end, now)

    def tier_lines_of(self, session: Session, cloud: str, versions: Sequence[Any],
                      start: dt.datetime, end: dt.datetime, now: dt.datetime, places: int,
                      projects: Sequence[str]) -> list[Any]:
        return [tier for project in projects for tier in tiers.tier_lines(
            statements.tiered_lines(session, cloud, list(versions), start, end, now, places,
                                    project_id=project), versions, places)]

    def freeze_lines(self, session: Session, cloud: str, period: str, versions: Sequence[Any],
                     now: dt.datetime, places: int | None = None
                     ) -> tuple[dict[str, tuple[Decimal, int]], list[Any]]:
        start, end = periods.parse(period)
        totals = frozen.freeze_in_python(session, cloud, period, versions, now)
        return totals, statements.tier_lines(session, cloud, list(versions), start, end, now,
                                             places)
