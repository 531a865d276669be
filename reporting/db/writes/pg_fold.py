"""A batch's fold written in ONE PostgreSQL statement (``PostgresWrites.write_fold``).

Each kind of write is a data-modifying CTE of the same statement: held rows and
open intervals are updated where ``held_resources`` read them (``ctid = ANY(...)``,
a TID scan whatever the table's size or statistics), new intervals and rows are
inserted from one array parameter per column (``pg_batch.column_rows``).  One round
trip, one parse and one plan instead of five; the CTEs all see the statement's
snapshot, and they touch disjoint rows (an interval is ended, dropped or new, never
two of them).

The replayed resources' intervals are deleted by the caller beforehand: that
delete reads by key, not by location.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db.writes import pg_batch
from reporting.db.writes.base import CURRENT, INTERVALS, KEY_NAMES, FoldWrites

# What every interval the fold ends or drops is (held_resources read it so): open.
OPEN = ' AND t."end" IS NULL'


def located_update(table: sa.Table, name: str, columns: Sequence[str], check: str,
                   where: str = "") -> str:
    """A CTE ``name`` updating ``columns`` of the rows at the locators ``:{name}_at``
    from the JSON rows ``:{name}`` (``located_params``: each with its locator and
    ``check``, a unique column that must match too: a row found elsewhere is not
    written, and a ctid names a row within one partition only).  ``where``: a
    condition on ``t`` every row meets (it prunes partitions).

    The locators travel inside the rows: the planner, which takes a recordset for 100
    rows, then finds each row by a TID scan of its locator, whatever the table's size.
    (Not the arrays of ``pg_batch.column_rows``: read unsized, ``unnest`` is taken
    for 10 rows, and on an open intervals' partition whose statistics were a few
    rows the planner then walked the partition's index once per batch, measured at
    0.25-0.44 of the usual rate for whole rounds of the ingest bench.)"""
    definitions = pg_batch.column_definitions(table, [check, *columns])
    assignments = ", ".join(f'"{c}" = r."{c}"' for c in columns)
    return (
        f"{name} AS (UPDATE {table.name} AS t SET {assignments} "  # noqa: S608 - model names
        f"FROM json_to_recordset(CAST(:{name} AS json)) AS r(locator tid, {definitions}) "
        f"WHERE t.ctid = ANY(CAST(:{name}_at AS tid[])) AND t.ctid = r.locator "
        f'AND t."{check}" = r."{check}"{where} RETURNING 1)'
    )


def located_params(name: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The parameters of ``located_update``: ``rows`` each hold ``locator`` and the
    columns it writes (other keys are not read)."""
    return {name: pg_batch.dumps(rows),
            f"{name}_at": pg_batch.array_literal([row["locator"] for row in rows])}


def _insert(table: sa.Table, name: str, columns: Sequence[str]) -> str:
    return f"{name} AS ({pg_batch.insert_statement(table, columns, name)} RETURNING 1)"


def write_fold(session: Session, planned: FoldWrites) -> None:
    """Every write of ``planned`` but the replayed resources' deletes, in one statement."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    counted: dict[str, int] = {}
    if planned.dropped_interval_ids:
        # Open intervals: all in one partition (migration 0032), which indexes their ids.
        parts.append("dropped AS (DELETE FROM resource_intervals "
                     'WHERE "end" IS NULL AND id = ANY(CAST(:dropped AS bigint[])))')
        params["dropped"] = pg_batch.array_literal(planned.dropped_interval_ids)
    if planned.ended_intervals:
        parts.append(located_update(INTERVALS, "ended", ["end"], check="id", where=OPEN))
        params.update(located_params("ended", [
            {"locator": opened.locator, "id": opened.id, "end": end}
            for opened, end in planned.ended_intervals]))
        counted["ended"] = len(planned.ended_intervals)
    if planned.new_intervals:
        parts.append(_insert(INTERVALS, "opened", list(planned.new_intervals[0])))
        params.update(pg_batch.insert_params(INTERVALS, "opened", planned.new_intervals))
    if planned.changed_rows:
        columns = [c for c in planned.changed_rows[0][1]
                   if c not in KEY_NAMES and c != "resource_id"]
        parts.append(located_update(CURRENT, "changed", columns, check="resource_id"))
        # The rows are the plan's own (a fold's plan is written once): each takes its
        # locator in place instead of a copy.
        rows = []
        for held, row in planned.changed_rows:
            row["locator"] = held.locator
            rows.append(row)
        params.update(located_params("changed", rows))
        counted["changed"] = len(planned.changed_rows)
    if planned.new_rows:
        parts.append(_insert(CURRENT, "added", list(planned.new_rows[0])))
        params.update(pg_batch.insert_params(CURRENT, "added", planned.new_rows))
    if not parts:
        return
    counts = ", ".join(f"(SELECT count(*) FROM {name})"  # noqa: S608 - our CTE names
                       for name in counted) or "1"
    statement = f"WITH {', '.join(parts)} SELECT {counts}"
    found = session.execute(sa.text(statement), params).one()
    for (name, expected), written in zip(counted.items(), found, strict=False):
        if written != expected:
            raise RuntimeError(f"{name}: {written} of {expected} rows found where they were read")
