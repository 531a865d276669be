"""The monthly partitions of the history on PostgreSQL (migration 0032): creating them
ahead, and pruning whole old months that nothing needs any more.

``events`` is partitioned by ``"timestamp"``, ``resource_intervals`` by ``"end"``, in
the schema ``tally_history``: one ``<table>_yYYYYmMM`` per month and a DEFAULT partition
each (the open intervals; any row of a month without its partition).  SQLite keeps one
table each: there is nothing to create or prune.

``ensure`` creates the partitions of the coming months, and of every month the DEFAULT
partition holds rows of (moved into it, in one transaction: nothing is lost, nothing
fails).  ``prune`` drops (after archiving, when asked) the partitions of the months
before a month, only when nothing needs them; otherwise it refuses, naming what does
(docs/operations.md, "Partitioning and retention").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa

from reporting.db import writes

SCHEMA = "tally_history"
# (table, partition key)
TABLES = (("events", "timestamp"), ("resource_intervals", "end"))
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_BOUND = re.compile(r"FOR VALUES FROM \('(\d{4})-(\d{2})-01 00:00:00'\) "
                    r"TO \('(\d{4})-(\d{2})-01 00:00:00'\)")


class Refused(Exception):
    """What keeps ``prune`` from removing a month, in words an operator acts on."""


def month_start(text: str) -> dt.datetime:
    """The start of the month ``YYYY-MM``; ValueError naming the bad text."""
    match = _MONTH.match(text)
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise ValueError(f"{text!r} is not a month (write YYYY-MM, e.g. 2026-03)")
    return dt.datetime(int(match.group(1)), int(match.group(2)), 1)


def _next(month: dt.datetime) -> dt.datetime:
    return dt.datetime(month.year + month.month // 12, month.month % 12 + 1, 1)


def _name(table: str, month: dt.datetime) -> str:
    return f"{table}_y{month.year:04d}m{month.month:02d}"


def is_partitioned(conn: sa.Connection) -> bool:
    """Whether the history is partitioned (PostgreSQL at migration 0032 or later)."""
    if not writes.is_postgresql(str(conn.engine.url)):
        return False
    return conn.execute(sa.text(
        "SELECT count(*) = 2 FROM pg_partitioned_table "
        "WHERE partrelid = ANY(ARRAY['events', 'resource_intervals']::regclass[])")
    ).scalar_one()


def months_of(conn: sa.Connection, table: str) -> dict[dt.datetime, str]:
    """``{month: partition}`` of ``table``'s monthly partitions (DEFAULT left out)."""
    found: dict[dt.datetime, str] = {}
    for name, bound in conn.execute(sa.text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = CAST(:t AS regclass)"),
            {"t": table}):
        match = _BOUND.match(bound)
        if match is None:
            continue  # DEFAULT, or a partition not of one month (not ours)
        start = dt.datetime(int(match.group(1)), int(match.group(2)), 1)
        if _next(start) == dt.datetime(int(match.group(3)), int(match.group(4)), 1):
            found[start] = name
    return found


def _reloptions(conn: sa.Connection, table: str) -> str:
    options = conn.execute(sa.text(
        "SELECT reloptions FROM pg_class WHERE oid = CAST(:t AS regclass)"),
        {"t": f"{SCHEMA}.{table}_default"}).scalar()
    return f" WITH ({', '.join(options)})" if options else ""


def _create(conn: sa.Connection, table: str, key: str, month: dt.datetime) -> str:
    """Create ``table``'s partition of ``month``, moving in the DEFAULT's rows of it."""
    name = _name(table, month)
    low, high = month.isoformat(sep=" "), _next(month).isoformat(sep=" ")
    conn.execute(sa.text(
        f"CREATE TABLE {SCHEMA}.{name} (LIKE {table} INCLUDING DEFAULTS)"
        f"{_reloptions(conn, table)}"))
    conn.execute(sa.text(
        f"WITH moved AS (DELETE FROM {SCHEMA}.{table}_default "  # noqa: S608 - our names
        f'WHERE "{key}" >= :low AND "{key}" < :high RETURNING *) '
        f"INSERT INTO {SCHEMA}.{name} SELECT * FROM moved"), {"low": low, "high": high})
    # Attaching builds the partitioned indexes on it and checks the DEFAULT holds no
    # row of the month any more.
    conn.execute(sa.text(f"ALTER TABLE {table} ATTACH PARTITION {SCHEMA}.{name} "
                         f"FOR VALUES FROM ('{low}') TO ('{high}')"))
    return f"{SCHEMA}.{name}"


def _default_months(conn: sa.Connection, table: str, key: str) -> list[dt.datetime]:
    return list(conn.execute(sa.text(
        f"SELECT DISTINCT date_trunc('month', \"{key}\") FROM {SCHEMA}.{table}_default "  # noqa: S608
        f'WHERE "{key}" IS NOT NULL')).scalars())


def ensure(engine: sa.Engine, months_ahead: int, now: dt.datetime,
           since: dt.datetime | None = None) -> list[str]:
    """Create the partitions of the month of ``now`` and ``months_ahead`` after it (and
    of every month from ``since`` on, when given), and of every month the DEFAULT
    partitions hold rows of; answers the partitions created (empty when all existed, or
    on SQLite).  Each partition is created in its own transaction."""
    if months_ahead < 0:
        raise ValueError(f"--months-ahead must be 0 or more, not {months_ahead}")
    created: list[str] = []
    with engine.connect() as conn:
        if not is_partitioned(conn):
            return created
    current = dt.datetime(now.year, now.month, 1)
    wanted = [current]
    month = since
    while month is not None and month < current:
        wanted.append(month)
        month = _next(month)
    for _ in range(months_ahead):
        wanted.append(_next(max(wanted)))
    for table, key in TABLES:
        with engine.connect() as conn:
            months = set(wanted) | set(_default_months(conn, table, key))
            have = months_of(conn, table)
        for month in sorted(months - set(have)):
            with engine.begin() as conn:
                # One creator at a time; a second sees the partition and skips it.
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:k))"),
                             {"k": f"tally partitions {table}"})
                if month not in months_of(conn, table):
                    created.append(_create(conn, table, key, month))
    return created


@dataclasses.dataclass
class Pruned:
    partitions: list[str]
    archived: list[Path]


def _sample(rows: Sequence[Sequence[object]], limit: int = 5) -> str:
    shown = ", ".join(" ".join(str(part) for part in row) for row in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def refusals(conn: sa.Connection, before: dt.datetime) -> list[str]:
    """Why the history before ``before`` (a month's start) cannot be pruned now: one
    line per reason, naming what needs it; empty when nothing does."""
    reasons: list[str] = []
    params = {"before": before}
    stray = [(table, n) for table, key in TABLES for n in conn.execute(sa.text(
        f"SELECT count(*) FROM {SCHEMA}.{table}_default "  # noqa: S608 - our names
        f'WHERE "{key}" < :before'), params).scalars() if n]
    if stray:
        reasons.append("rows dated before the cutoff wait in a DEFAULT partition ("
                       + ", ".join(f"{table}: {n}" for table, n in stray)
                       + "): run tally-manage partitions ensure first")
    # Every month of every cloud the pruned rows cover must be a closed period: an open
    # one's statement is still computed from them.
    unclosed = conn.execute(sa.text(
        "WITH covered AS ("
        "SELECT DISTINCT cloud, date_trunc('month', \"timestamp\") AS m FROM events "
        "WHERE \"timestamp\" < :before UNION "
        "SELECT DISTINCT cloud, generate_series(date_trunc('month', start), "
        "date_trunc('month', \"end\" - interval '1 microsecond'), interval '1 month') FROM resource_intervals "
        "WHERE \"end\" < :before) "
        "SELECT c.cloud, to_char(c.m, 'YYYY-MM') FROM covered c "
        "LEFT JOIN billing_periods p ON p.cloud = c.cloud "
        "AND p.period = to_char(c.m, 'YYYY-MM') AND p.status = 'closed' "
        "WHERE p.cloud IS NULL ORDER BY 1, 2"), params).all()
    if unclosed:
        reasons.append(f"{len(unclosed)} period(s) not closed still need them "
                       f"(cloud month): {_sample(unclosed)}")
    # A resource whose history goes on past the cutoff (alive, or with later events) is
    # replayed from ALL its events when a late event of it arrives.
    live = conn.execute(sa.text(
        "SELECT DISTINCT e.cloud, e.resource_type, e.resource_id FROM events e "
        "JOIN current_resources r ON r.platform = e.platform AND r.cloud = e.cloud "
        "AND r.resource_type = e.resource_type AND r.resource_id = e.resource_id "
        "WHERE e.\"timestamp\" < :before AND (r.live OR r.last_event_at >= :before) "
        "ORDER BY 1, 2, 3"), params).all()
    if live:
        reasons.append(f"{len(live)} resource(s) still live or with later events need "
                       f"their history (a late event replays it): {_sample(live)}")
    # Late facts received after the last close of their cloud: the next close books
    # their corrections from these rows.
    late = conn.execute(sa.text(
        "SELECT e.cloud, count(*) FROM events e WHERE e.\"timestamp\" < :before "
        "AND e.seq > coalesce((SELECT max(p.cutoff_seq) FROM billing_periods p "
        "WHERE p.cloud = e.cloud AND p.status = 'closed'), 0) GROUP BY 1 ORDER BY 1"),
        params).all()
    if late:
        reasons.append("late events not yet booked on a statement (cloud events): "
                       f"{_sample(late)}")
    return reasons


def _archive(conn: sa.Connection, partition: str, directory: Path) -> Path:
    target = directory / f"{partition.split('.')[-1]}.csv"
    if target.exists():
        raise Refused(f"{target} exists already: archive into another directory")
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    partial = target.with_suffix(".csv.partial")
    with partial.open("wb") as out, cursor.copy(
            f"COPY {partition} TO STDOUT (FORMAT csv, HEADER)") as copy:
        for block in copy:
            out.write(block)
    partial.rename(target)
    return target


def prune(engine: sa.Engine, before: dt.datetime, archive: Path | None = None) -> Pruned:
    """Drop the monthly partitions of both tables whose month is before ``before``
    (each written to ``archive``/``<partition>.csv`` first, when given); Refused with
    every reason when anything still needs them (nothing is removed then).  The ids of
    the pruned events stay in ``tally_history.event_ids``: a redelivered old
    notification is still recognised, never stored again."""
    pruned = Pruned([], [])
    with engine.begin() as conn:
        if not is_partitioned(conn):
            raise Refused("the history is not partitioned (SQLite, or PostgreSQL before "
                          "migration 0032): nothing to prune")
        # The close and the fold cannot change the history underneath the checks.
        conn.execute(sa.text("LOCK TABLE events, resource_intervals, billing_periods "
                             "IN SHARE MODE"))
        reasons = refusals(conn, before)
        if reasons:
            raise Refused(f"refusing to prune the history before {before:%Y-%m}: "
                          + "; ".join(reasons))
        old = sorted((month, table, name) for table, _ in TABLES
                     for month, name in months_of(conn, table).items() if month < before)
        if archive is not None:
            archive.mkdir(parents=True, exist_ok=True)
            for _, _, name in old:
                pruned.archived.append(_archive(conn, f"{SCHEMA}.{name}", archive))
        for _, table, name in old:
            conn.execute(sa.text(f"ALTER TABLE {table} DETACH PARTITION {SCHEMA}.{name}"))
            conn.execute(sa.text(f"DROP TABLE {SCHEMA}.{name}"))
            pruned.partitions.append(f"{SCHEMA}.{name}")
    return pruned
