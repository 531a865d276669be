"""The fold's reads and deletes by resource key on PostgreSQL: one index probe per key,
whatever the planner statistics say.

A batch's ids travel as one array; each id drives a ``LATERAL`` subquery that looks
the id up ALONE, behind an ``OFFSET 0`` fence (the planner pushes no condition through
it and cannot flatten it into a join), and the rest of the key is checked on the rows
it found.  The only index that can serve ``resource_id = k.id`` leads with
``resource_id`` (migration ``0017_fold_probe_indexes``): ``ix_current_resources_
resource_id``, ``ix_resource_intervals_resource``, ``ix_events_resource_order``.

With the whole key as index conditions, the planner without statistics (a fresh
database, autovacuum off or not yet come round) or with the statistics of a trickle
(every column looks unique) takes an index leading with ``cloud`` for the probe or
for a flat ``resource_id = ANY(:ids)`` read, and walks every row of the cloud once per
batch, or once per key: measured on the bench's stream without ANALYZE, a batch went
from 0.47 s to 5.0 s over 120,000 events (almost all of it those reads), and kept
growing; it stays near 0.1 s with the probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting import fold
from reporting.db.writes import pg_batch
from reporting.db.writes.base import (
    STATE_COLUMNS,
    HeldResource,
    OpenInterval,
    ResourceKey,
    TypeKey,
)

_IDS = "unnest(CAST(:ids AS varchar[])) AS k(id)"
_OF_TYPE = ("f.platform = :platform AND f.cloud = :cloud "
            "AND f.resource_type = :resource_type")
_STATE = ", ".join(f'"{c}"' for c in STATE_COLUMNS)
_FOUND_STATE = ", ".join(f'cr."{c}"' for c in STATE_COLUMNS)


def _probe(columns: str, table: str, extra: str = "", order: str = "") -> str:
    """The rows of ``table`` of id ``k.id`` (``columns`` and the key's type columns),
    looked up by the id alone, then those of the batch's (platform, cloud, type)."""
    return (f"SELECT f.* FROM (SELECT {columns}, platform, cloud, resource_type "  # noqa: S608
            f"FROM {table} WHERE resource_id = k.id{extra}{order} OFFSET 0) AS f "
            f"WHERE {_OF_TYPE}")


# One row per held resource: its row and, while live, its open interval (the newest
# interval: a backward probe that stops at the first).
HELD = sa.text(
    f"SELECT k.id, cr.row_at, {_FOUND_STATE}, oi.id, oi.start, oi.event_id, oi.at "  # noqa: S608
    f"FROM {_IDS} CROSS JOIN LATERAL ("
    f"{_probe(f'ctid AS row_at, {_STATE}', 'current_resources')} LIMIT 1) AS cr "
    "LEFT JOIN LATERAL ("
    + _probe("id, start, event_id, ctid AS at", "resource_intervals",
             extra=' AND "end" IS NULL', order=" ORDER BY start DESC")
    + " AND cr.live LIMIT 1) AS oi ON true"
)

HISTORIES = sa.text(
    "SELECT k.id, e.event_id, e.event_type, e.project_id, e.timestamp, e.payload, e.seq "  # noqa: S608
    f"FROM {_IDS} CROSS JOIN LATERAL ("
    + _probe('event_id, event_type, project_id, "timestamp", payload, seq', "events")
    + ") AS e"
)

# The intervals of the keys, found by probes and deleted through their ctids (a TID scan).
# A ctid names a row within one partition only (migration 0032 partitions the
# intervals): the id, unique across partitions (one sequence), must match too.
DELETE_INTERVALS = sa.text(
    "WITH found AS MATERIALIZED ("  # noqa: S608
    f"SELECT ri.at, ri.id FROM {_IDS} CROSS JOIN LATERAL ("
    + _probe("ctid AS at, id", "resource_intervals") + ") AS ri) "
    "DELETE FROM resource_intervals WHERE ctid = ANY(ARRAY(SELECT at FROM found)) "
    "AND id = ANY(ARRAY(SELECT id FROM found))"
)


# A sync run's lookups by (type, id) of one cloud (``Writes.rows_by_key``,
# ``Writes.sightings_by_key``), every type in one statement.  The projection's rows are
# probed by the id alone like the fold's; a sighting by its whole primary key.
_TYPED_IDS = ("unnest(CAST(:types AS varchar[]), CAST(:ids AS varchar[])) "
              "AS k(resource_type, id)")
SYNC_ROWS = sa.text(
    "SELECT f.resource_type, f.resource_id, f.project_id, f.state, f.size, f.live, "  # noqa: S608
    f"f.last_event_at, f.deleted_at FROM {_TYPED_IDS} CROSS JOIN LATERAL ("
    "SELECT resource_type, resource_id, project_id, state, size, live, last_event_at, "
    "deleted_at, platform, cloud FROM current_resources WHERE resource_id = k.id "
    "OFFSET 0) AS f WHERE f.platform = :platform AND f.cloud = :cloud "
    "AND f.resource_type = k.resource_type"
)
SYNC_SIGHTINGS = sa.text(
    "SELECT s.resource_type, s.resource_id, s.seen_until "  # noqa: S608
    f"FROM {_TYPED_IDS} CROSS JOIN LATERAL ("
    "SELECT resource_type, resource_id, seen_until FROM sync_sightings "
    "WHERE cloud = :cloud AND resource_type = k.resource_type AND resource_id = k.id "
    "OFFSET 0) AS s"
)


def _typed_params(keys: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {"types": pg_batch.array_literal(t for t, _ in keys),
            "ids": pg_batch.array_literal(i for _, i in keys)}


def sync_rows(session: Session, platform: str, cloud: str,
              keys: Sequence[tuple[str, str]]) -> list[Any]:
    """``Writes.rows_by_key`` of one chunk of keys."""
    return list(session.execute(SYNC_ROWS, {"platform": platform, "cloud": cloud,
                                            **_typed_params(keys)}).all())


def sync_sightings(session: Session, cloud: str, keys: Sequence[tuple[str, str]]
                   ) -> list[Any]:
    """``Writes.sightings_by_key`` of one chunk of keys."""
    return list(session.execute(SYNC_SIGHTINGS, {"cloud": cloud,
                                                 **_typed_params(keys)}).all())


def _params(group: TypeKey, ids: Sequence[str]) -> dict[str, Any]:
    return {"platform": group[0], "cloud": group[1], "resource_type": group[2],
            "ids": pg_batch.array_literal(ids)}


def held(session: Session, group: TypeKey, ids: Sequence[str]
         ) -> dict[ResourceKey, HeldResource]:
    """``Writes.held_resources`` of the resources ``ids`` of one type."""
    found: dict[ResourceKey, HeldResource] = {}
    last = 2 + len(STATE_COLUMNS)
    for row in session.execute(HELD, _params(group, ids)).all():
        opened = None if row[last] is None else OpenInterval(*row[last:])
        found[(*group, row[0])] = HeldResource(fold.ResourceState(*row[2:last]), opened, row[1])
    return found


def histories(session: Session, group: TypeKey, ids: Sequence[str]
              ) -> dict[ResourceKey, list[fold.FoldEvent]]:
    """``Writes.histories`` of the resources ``ids`` of one type."""
    found: dict[ResourceKey, list[fold.FoldEvent]] = {}
    for row in session.execute(HISTORIES, _params(group, ids)).all():
        # The columns after the id are FoldEvent's fields in order.
        found.setdefault((*group, row[0]), []).append(fold.FoldEvent(*row[1:]))
    for events in found.values():
        events.sort(key=fold.ORDER_KEY)  # the nested loop's order is not promised
    return found


def delete_intervals(session: Session, group: TypeKey, ids: Sequence[str]) -> None:
    session.execute(DELETE_INTERVALS, _params(group, ids))
