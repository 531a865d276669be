"""A read replica of the reporting database, the oslo.db way: ``[database]
slave_connection`` names a PostgreSQL hot standby of ``connection``.

This module builds the replica's engine and answers the two questions read routing
asks (``reporting.api.replica_reads``): where a caller's last write left the
primary's log, and whether the replica has replayed that far.  Positions are
PostgreSQL WAL positions (``pg_lsn``); SQLite has no replicas.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy.engine import Engine

from reporting.db import writes

replica_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "slave_connection",
        secret=True,
        help="SQLAlchemy URL of a read replica (a PostgreSQL hot standby streaming from "
        "[database] connection). When set, the Reporting API answers GET requests "
        "(queries, lifecycles, usage, statements) from it, except a caller's reads while "
        "the replica has not yet replayed that caller's own last write: those are answered "
        "by the primary. Ingest, syncs, closes and every other write use the primary. "
        "Unset: everything uses the primary.",
    ),
]


class ReplicaConfigError(ValueError):
    """``slave_connection`` cannot work with ``connection``; the service refuses to start."""


def check_urls(primary_url: str, replica_url: str) -> None:
    """Refuse a replica that cannot be one: both must be PostgreSQL."""
    for what, url in (("[database] slave_connection", replica_url),
                      ("[database] connection", primary_url)):
        try:
            postgresql = writes.is_postgresql(url)
        except sa.exc.ArgumentError as exc:
            raise ReplicaConfigError(f"{what} is not a database URL: {exc}") from None
        if not postgresql:
            raise ReplicaConfigError(
                f"{what} is not PostgreSQL: a read replica needs PostgreSQL streaming "
                "replication on both (unset [database] slave_connection on SQLite)")


_RECORD = sa.text(
    "INSERT INTO write_positions (caller, position, written_at) "
    "VALUES (:caller, pg_current_wal_lsn()::text, :now) "
    "ON CONFLICT (caller) DO UPDATE SET "
    # Two instances recording the same caller at once: the later position wins.
    "position = GREATEST(write_positions.position::pg_lsn, excluded.position::pg_lsn)::text, "
    "written_at = excluded.written_at")
_POSITION = sa.text("SELECT position FROM write_positions WHERE caller = :caller")
_REPLAYED = sa.text("SELECT pg_last_wal_replay_lsn() >= CAST(:position AS pg_lsn)")
ORIGIN = "0/0"  # the position before any write: every standby has replayed it


def record_write(primary: Engine, caller: str, now: dt.datetime) -> None:
    """Remember where the primary's log stands now, after ``caller``'s write committed."""
    with primary.begin() as conn:
        conn.execute(_RECORD, {"caller": caller[:255], "now": now})


def last_write(primary: Engine, caller: str) -> str | None:
    """The position after ``caller``'s last recorded write, None when it never wrote."""
    with primary.connect() as conn:
        return conn.execute(_POSITION, {"caller": caller[:255]}).scalar_one_or_none()


def has_replayed(replica: Engine, position: str) -> bool | None:
    """Whether the replica has replayed the primary's log up to ``position``; None when
    the server is no standby (it has no replay position)."""
    with replica.connect() as conn:
        replayed = conn.execute(_REPLAYED, {"position": position}).scalar()
    return None if replayed is None else bool(replayed)
