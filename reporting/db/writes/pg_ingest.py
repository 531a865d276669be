"""An ingest batch's first writes in one PostgreSQL statement
(``PostgresWrites.store_events``).

``store_events`` takes the close's lock shared, draws ONE receipt number for the
batch (the events sequence steps by a block, migration ``0016_ingest_sequences``),
inserts the events in event_id order and takes the advisory locks of the resources
of the events it inserted, in key order: three round trips and a ``nextval`` per
event before.  The order inside the statement is the order the close and the
deadlock argument need (docs/reporting-api.md): each step reads the one before it,
so the lock is held before the number is drawn, and every insert is done (the
locks' sort reads all of them) before the first resource lock is requested.

A resource's lock key is ``hashtextextended`` of its key's four parts joined by
U+001F, computed by PostgreSQL (the hash behind hash partitioning, stable across
releases); ``lock_resources`` computes the same key from Python's side.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db.writes import pg_batch
from reporting.db.writes.base import (
    EVENT_COLUMNS,
    EVENTS,
    ResourceKey,
)

# The events sequence's step from migration 0012: one number per batch of up to
# this many events (ingest's MAX_BATCH).
BLOCK = 1000

_NAMES = ", ".join(f'"{c}"' for c in EVENT_COLUMNS)
_BATCH_NAMES = ", ".join(f'b."{c}"' for c in EVENT_COLUMNS)
_NUMBERED_NAMES = ", ".join(f'batch."{c}"' for c in EVENT_COLUMNS)
# A batch of events travels as one array per column (pg_batch): read back in row order
# by ROWS FROM ... WITH ORDINALITY, the receipt order.
EVENT_BATCH = pg_batch.table_columns(EVENTS, tuple(EVENT_COLUMNS))
BATCH_SOURCES = pg_batch.column_sources(EVENT_BATCH, "batch")
_KEY_TEXT = "concat_ws(chr(31), platform, cloud, resource_type, resource_id)"

# Migration 0032 partitions events by month: event_id's uniqueness across partitions
# is the primary key of this table, which the statement writes first.
EVENT_IDS = "tally_history.event_ids"


def _store(partitioned: bool) -> sa.TextClause:
    """The ingest statement; ``partitioned``: the history as migration 0032 leaves it
    (the ids claimed in ``EVENT_IDS`` in event_id order, then the claimed events
    inserted), else as before it (``ON CONFLICT`` on the events' own unique index)."""
    numbered = (f"SELECT block.first + b.ord - 1 AS seq, {_BATCH_NAMES} "  # noqa: S608
                f"FROM block, ROWS FROM ({BATCH_SOURCES}) WITH ORDINALITY AS b({_NAMES}, ord)")
    returned = "RETURNING seq, platform, cloud, resource_type, resource_id"
    if partitioned:
        stored = (
            f"batch AS MATERIALIZED ({numbered}), "  # noqa: S608 - model names
            f"claimed AS (INSERT INTO {EVENT_IDS} (event_id) "
            "SELECT event_id FROM batch ORDER BY event_id "
            "ON CONFLICT (event_id) DO NOTHING RETURNING event_id), "
            f"stored AS (INSERT INTO events (seq, {_NAMES}, received_at) "
            f"SELECT batch.seq, {_NUMBERED_NAMES}, "
            "CAST(:received_at AS timestamp) FROM batch JOIN claimed "
            f"ON claimed.event_id = batch.event_id {returned}), ")
    else:
        stored = (
            f"stored AS (INSERT INTO events (seq, {_NAMES}, received_at) "  # noqa: S608
            f"SELECT seq, {_NAMES}, CAST(:received_at AS timestamp) FROM ({numbered}) AS b "
            f"ORDER BY event_id ON CONFLICT (event_id) DO NOTHING {returned}), ")
    return sa.text(
        "WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(CAST(:hold AS bigint))), "  # noqa: S608 - model names
        "block AS MATERIALIZED (SELECT nextval(pg_get_serial_sequence('events', 'seq')) AS first "
        f"FROM held), {stored}"
        "locked AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(k)) FROM "
        f"(SELECT DISTINCT hashtextextended({_KEY_TEXT}, 0) AS k FROM stored ORDER BY 1) AS keys) "
        "SELECT stored.seq - block.first, stored.seq FROM stored, block, locked"
    )


STORE = {partitioned: _store(partitioned) for partitioned in (False, True)}

PARTITIONED = sa.text(f"SELECT to_regclass('{EVENT_IDS}') IS NOT NULL")

LOCK = sa.text(
    "SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtextextended(key, 0) AS k "
    "FROM unnest(CAST(:keys AS text[])) AS key ORDER BY 1) AS ordered"
)

STEP = sa.text("SELECT seqincrement FROM pg_sequence "
               "WHERE seqrelid = CAST(pg_get_serial_sequence('events', 'seq') AS regclass)")

def key_text(key: ResourceKey) -> str:
    """The text whose ``hashtextextended`` is ``key``'s lock (as ``_KEY_TEXT``)."""
    return "\x1f".join(key)


def store(session: Session, rows: Sequence[dict[str, Any]], hold: int, *, partitioned: bool
          ) -> dict[str, int]:
    """``STORE`` of at most BLOCK rows; ``{event_id: seq}`` of those inserted."""
    params = {"hold": hold, "received_at": rows[0]["received_at"],
              **pg_batch.column_params(EVENT_BATCH, "batch", rows)}
    return {rows[offset]["event_id"]: seq
            for offset, seq in session.execute(STORE[partitioned], params).all()}


def lock(session: Session, keys: Iterable[ResourceKey]) -> None:
    texts = sorted({key_text(key) for key in keys})
    if texts:
        session.execute(LOCK, {"keys": pg_batch.array_literal(texts)})
