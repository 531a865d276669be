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

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting import fold
from reporting.db.writes import pg_batch
from reporting.db.writes.base import (
    STATE_COLUMNS,
    HeldResource,
    HistorySpan,
    OpenInterval,
    ResourceKey,
    TypeKey,
    batch_span,
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

# Reads of whole histories name each key's span (``HistorySpan``; '-infinity' when its
# first event is not known) and the batch's: the batch's bounds prune the monthly
# partitions (migration 0032) when the statement is planned, each key's when its
# probe runs, so a resource's history costs the months it covers.
_SPANNED_IDS = ("unnest(CAST(:ids AS varchar[]), CAST(:firsts AS timestamp[]), "
                "CAST(:lasts AS timestamp[])) AS k(id, first, last)")
_BATCH = "CAST(:first AS timestamp) AND CAST(:last AS timestamp)"
# The events the caller holds (its own, numbered :omit_low to :omit_high; an empty
# range when it holds none) are not read back.
_EVENTS_WITHIN = (f' AND "timestamp" BETWEEN k.first AND k.last AND "timestamp" BETWEEN {_BATCH}'
                  " AND seq NOT BETWEEN CAST(:omit_low AS bigint) AND CAST(:omit_high AS bigint)")
_ENDS_WITHIN = f'("end" IS NULL OR "end" BETWEEN {_BATCH})'

HISTORIES = sa.text(
    "SELECT k.id, e.event_id, e.event_type, e.project_id, e.timestamp, e.payload, e.seq "  # noqa: S608
    f"FROM {_SPANNED_IDS} CROSS JOIN LATERAL ("
    + _probe('event_id, event_type, project_id, "timestamp", payload, seq', "events",
             extra=_EVENTS_WITHIN)
    + ") AS e"
)

# The intervals of the keys, found by probes and deleted through their ctids (a TID scan).
# A ctid names a row within one partition only (migration 0032 partitions the
# intervals): the id, unique across partitions (one sequence), must match too.
DELETE_INTERVALS = sa.text(
    "WITH found AS MATERIALIZED ("  # noqa: S608
    f"SELECT ri.at, ri.id FROM {_SPANNED_IDS} CROSS JOIN LATERAL ("
    + _probe("ctid AS at, id", "resource_intervals",
             extra=f' AND ("end" IS NULL OR "end" BETWEEN k.first AND k.last) AND {_ENDS_WITHIN}')
    + ") AS ri) "  # noqa: S608
    "DELETE FROM resource_intervals WHERE ctid = ANY(ARRAY(SELECT at FROM found)) "
    f"AND id = ANY(ARRAY(SELECT id FROM found)) AND {_ENDS_WITHIN}"
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


def _instant(instant: dt.datetime | None, unbounded: str) -> str:
    return unbounded if instant is None else instant.isoformat()


def _instants(instants: Sequence[dt.datetime | None], unbounded: str) -> str:
    """``instants`` as the text of a timestamp array, None as ``unbounded``: one
    ``orjson.dumps`` (which writes a naive datetime as ``isoformat`` does) instead of
    a call per instant, its JSON strings already quoted as an array's elements."""
    text = orjson.dumps(instants).decode()[1:-1]
    return "{" + text.replace("null", f'"{unbounded}"') + "}"


def _spanned_params(group: TypeKey, ids: Sequence[str],
                    spans: Mapping[ResourceKey, HistorySpan] | None) -> dict[str, Any]:
    """``_params`` with each key's span and the batch's (unbounded where not known)."""
    keys = [(*group, rid) for rid in ids]
    of = [None] * len(keys) if spans is None else [spans.get(key) for key in keys]
    first, last = batch_span(keys, spans)
    return {**_params(group, ids),
            "firsts": _instants([None if span is None else span.first for span in of],
                                "-infinity"),
            "lasts": _instants([None if span is None else span.last for span in of],
                               "infinity"),
            "first": _instant(first, "-infinity"), "last": _instant(last, "infinity")}


def held(session: Session, group: TypeKey, ids: Sequence[str]
         ) -> dict[ResourceKey, HeldResource]:
    """``Writes.held_resources`` of the resources ``ids`` of one type."""
    found: dict[ResourceKey, HeldResource] = {}
    last = 2 + len(STATE_COLUMNS)
    for row in session.execute(HELD, _params(group, ids)).all():
        opened = None if row[last] is None else OpenInterval(*row[last:])
        found[(*group, row[0])] = HeldResource(fold.ResourceState(*row[2:last]), opened, row[1])
    return found


def histories(session: Session, group: TypeKey, ids: Sequence[str],
              spans: Mapping[ResourceKey, HistorySpan] | None = None,
              omit: tuple[int, int] | None = None) -> dict[ResourceKey, list[fold.FoldEvent]]:
    """``Writes.histories`` of the resources ``ids`` of one type, without the events
    numbered in ``omit`` (both ends included)."""
    found: dict[ResourceKey, list[fold.FoldEvent]] = {}
    low, high = omit if omit is not None else (0, -1)
    params = {**_spanned_params(group, ids, spans), "omit_low": low, "omit_high": high}
    for row in session.execute(HISTORIES, params).all():
        # The columns after the id are FoldEvent's fields in order.
        found.setdefault((*group, row[0]), []).append(fold.FoldEvent(*row[1:]))
    for events in found.values():
        events.sort(key=fold.ORDER_KEY)  # the nested loop's order is not promised
    return found


def delete_intervals(session: Session, group: TypeKey, ids: Sequence[str],
                     spans: Mapping[ResourceKey, HistorySpan] | None = None) -> None:
    session.execute(DELETE_INTERVALS, _spanned_params(group, ids, spans))
