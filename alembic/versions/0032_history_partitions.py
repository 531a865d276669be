"""The history range partitioned by month on PostgreSQL (SQLite: nothing to do).

- ``events`` is partitioned by ``"timestamp"`` (the instant an event happened: what a
  statement, a late fact and a resource's history select on).  Its primary key
  becomes ``(seq, "timestamp")`` (PostgreSQL wants the partition key in every
  unique constraint); ``event_id`` stays unique across the whole history through
  ``tally_history.event_ids`` (its primary key), which the ingest statement writes
  first in the same transaction: an id already there is a redelivery, stored once.
  ``ix_events_event_id`` (not unique) finds a stored event by its id.
- ``resource_intervals`` is partitioned by ``"end"``: the intervals overlapping a
  month M end in M or later or are open, so a statement of a recent month reads the
  partitions from M on and the open intervals, not the whole history.  An open
  interval (``end`` NULL) lives in the DEFAULT partition.  No primary key (``end``
  is nullable); ``id`` stays unique (one sequence), found by ``ctid`` and ``id``.
- The partitions live in the schema ``tally_history``: ``events_default`` and
  ``resource_intervals_default`` (the safe net: a row of a month without its
  partition lands there, nothing fails), one ``<table>_yYYYYmMM`` per month holding
  rows now, and the current month and the two after it
  (``tally-manage partitions ensure`` keeps creating them ahead).
- Sequences, their steps and caches, and each table's storage settings (fillfactor,
  analyze thresholds: set on every partition) are kept.

The downgrade copies both tables back into plain tables with their old keys and
indexes (every row: ``event_ids`` guarantees the ids are still distinct) and drops
the schema ``tally_history``.

Revision ID: 0032_history_partitions
Revises: 0031_account_discounts
"""

from __future__ import annotations

from alembic import op

revision = "0032_history_partitions"
down_revision = "0031_account_discounts"
branch_labels = None
depends_on = None

SCHEMA = "tally_history"
AHEAD = 2  # months after the current one

EVENTS_INDEXES = (
    'CREATE INDEX ix_events_resource_order ON events '
    '(resource_id, "timestamp", seq, platform, cloud, resource_type)',
    "CREATE INDEX ix_events_cloud_received ON events (cloud, received_at)",
    "CREATE INDEX ix_events_cloud_month_seq ON events "
    "(cloud, date_trunc('month', \"timestamp\"), seq)",
)
INTERVALS_INDEXES = (
    "CREATE INDEX ix_resource_intervals_resource ON resource_intervals "
    "(resource_id, start, platform, cloud, resource_type)",
    "CREATE INDEX ix_resource_intervals_cloud_start ON resource_intervals (cloud, start)",
    "CREATE INDEX ix_resource_intervals_project_start ON resource_intervals "
    "(project_id, start)",
)


def _on_postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _reloptions(table: str) -> str:
    """`` WITH (...)`` of ``table``'s storage settings ('' when it has none)."""
    options = op.get_bind().exec_driver_sql(
        f"SELECT reloptions FROM pg_class WHERE oid = '{table}'::regclass"  # noqa: S608
    ).scalar()
    return f" WITH ({', '.join(options)})" if options else ""


def _months(query: str) -> list[str]:
    """The months ('YYYY-MM-01') of ``query``'s rows, the current month and AHEAD more."""
    rows = op.get_bind().exec_driver_sql(
        f"SELECT to_char(m, 'YYYY-MM-DD') FROM ({query} UNION "  # noqa: S608 - our text
        "SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'), "
        f"date_trunc('month', now() AT TIME ZONE 'UTC') + interval '{AHEAD} months', "
        "interval '1 month')) AS months(m) WHERE m IS NOT NULL ORDER BY 1").scalars()
    return list(rows)


def _partition(table: str, month: str, options: str) -> None:
    year, number = month[:4], month[5:7]
    op.execute(
        f"CREATE TABLE {SCHEMA}.{table}_y{year}m{number} PARTITION OF {table} "
        f"FOR VALUES FROM ('{month}') TO (DATE '{month}' + interval '1 month'){options}")


def _partitioned(table: str, key: str, months_query: str, sequence_column: str) -> None:
    """Replace ``table`` by a copy partitioned by month of ``key``."""
    options = _reloptions(table)
    months = _months(months_query)
    op.execute(f"CREATE TABLE {table}_partitioned (LIKE {table} INCLUDING DEFAULTS) "
               f'PARTITION BY RANGE ("{key}")')
    op.execute(f"CREATE TABLE {SCHEMA}.{table}_default PARTITION OF {table}_partitioned "
               f"DEFAULT{options}")
    for month in months:
        _partition(f"{table}_partitioned", month, options)
    # The partitions are named after the table, not the transient parent.
    for month in months:
        year, number = month[:4], month[5:7]
        op.execute(f"ALTER TABLE {SCHEMA}.{table}_partitioned_y{year}m{number} "
                   f"RENAME TO {table}_y{year}m{number}")
    op.execute(f"INSERT INTO {table}_partitioned SELECT * FROM {table}")  # noqa: S608
    _move_sequence(table, f"{table}_partitioned", sequence_column)
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {table}_partitioned RENAME TO {table}")


def _move_sequence(old: str, new: str, column: str) -> None:
    """The sequence behind ``old.column`` becomes ``new.column``'s (kept, not dropped
    with ``old``): its last value, step and cache stay."""
    op.execute(
        f"DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s OWNED BY {new}.{column}', "
        f"pg_get_serial_sequence('{old}', '{column}')); END $$")


def upgrade() -> None:
    if not _on_postgresql():
        return
    op.execute(f"CREATE SCHEMA {SCHEMA}")
    op.execute(f"CREATE TABLE {SCHEMA}.event_ids (event_id varchar(255) NOT NULL, "
               "CONSTRAINT pk_event_ids PRIMARY KEY (event_id))")
    op.execute(f"INSERT INTO {SCHEMA}.event_ids SELECT event_id FROM events")  # noqa: S608

    _partitioned("events", "timestamp",
                 "SELECT DISTINCT date_trunc('month', \"timestamp\") FROM events", "seq")
    op.execute('ALTER TABLE events ADD CONSTRAINT pk_events PRIMARY KEY (seq, "timestamp")')
    for statement in (*EVENTS_INDEXES, "CREATE INDEX ix_events_event_id ON events (event_id)"):
        op.execute(statement)

    _partitioned("resource_intervals", "end",
                 'SELECT DISTINCT date_trunc(\'month\', "end") FROM resource_intervals', "id")
    for statement in INTERVALS_INDEXES:
        op.execute(statement)
    # The fold drops and ends open intervals by id: they are all in the DEFAULT partition.
    op.execute(f"CREATE INDEX ix_resource_intervals_open_id ON "
               f"{SCHEMA}.resource_intervals_default (id)")
    op.execute("ANALYZE events")
    op.execute("ANALYZE resource_intervals")


def _plain(table: str, sequence_column: str) -> None:
    options = _reloptions(f"{SCHEMA}.{table}_default")
    op.execute(f"CREATE TABLE {table}_plain (LIKE {table} INCLUDING DEFAULTS){options}")
    op.execute(f"INSERT INTO {table}_plain SELECT * FROM {table}")  # noqa: S608
    _move_sequence(table, f"{table}_plain", sequence_column)
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {table}_plain RENAME TO {table}")


def downgrade() -> None:
    if not _on_postgresql():
        return
    _plain("events", "seq")
    op.execute("ALTER TABLE events ADD CONSTRAINT pk_events PRIMARY KEY (seq)")
    op.execute("ALTER TABLE events ADD CONSTRAINT uq_events_event_id UNIQUE (event_id)")
    for statement in EVENTS_INDEXES:
        op.execute(statement)
    _plain("resource_intervals", "id")
    op.execute("ALTER TABLE resource_intervals ADD CONSTRAINT pk_resource_intervals "
               "PRIMARY KEY (id)")
    for statement in INTERVALS_INDEXES:
        op.execute(statement)
    op.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
    op.execute("ANALYZE events")
    op.execute("ANALYZE resource_intervals")
