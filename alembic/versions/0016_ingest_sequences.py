"""The ingest path's sequences without a WAL record per 32 numbers (PostgreSQL only;
SQLite: nothing to do).

A ``nextval`` of a shared sequence costs about 4 microseconds (a buffer lock, a WAL
record every 32 numbers): 4 ms for a batch of 1000 events, and as much again for its
1000 new intervals.

- ``events.seq`` steps by 1000 (``MAX_BATCH``): an ingest transaction draws ONE
  number and gives its batch's events that number plus their position (0..999).  The
  numbers stay unique and keep receipt order (within a batch the item order, across
  batches the order the numbers were drawn, under the close's lock as before); they
  now leave gaps, as duplicates and rolled-back batches already did.  A row inserted
  without a number (the column's default) takes a whole block.
- ``resource_intervals.id`` is cached 1000 at a time by each connection: an interval's
  id only names it (no order is read from it), so ids from two connections may
  interleave.

Revision ID: 0016_ingest_sequences
Revises: 0015_frozen_lines_late_facts
"""

from __future__ import annotations

from alembic import op

revision = "0016_ingest_sequences"
down_revision = "0015_frozen_lines_late_facts"
branch_labels = None
depends_on = None

BLOCK = 1000


def _on_postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _alter(table: str, column: str, change: str) -> None:
    op.execute(f"DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s {change}', "
               f"pg_get_serial_sequence('{table}', '{column}')); END $$")


def upgrade() -> None:
    if _on_postgresql():
        # The next number is the last one drawn plus a block: past every number in use.
        _alter("events", "seq", f"INCREMENT BY {BLOCK}")
        _alter("resource_intervals", "id", f"CACHE {BLOCK}")


def downgrade() -> None:
    if _on_postgresql():
        _alter("resource_intervals", "id", "CACHE 1")
        # One at a time again, after the last block drawn (its numbers may be in use).
        op.execute(
            "DO $$ DECLARE s text := pg_get_serial_sequence('events', 'seq'); last bigint; "  # noqa: S608
            "BEGIN EXECUTE format('SELECT last_value FROM %s', s) INTO last; "
            "EXECUTE format('ALTER SEQUENCE %s INCREMENT BY 1', s); "
            f"PERFORM setval(s, last + {BLOCK - 1}); END $$")
