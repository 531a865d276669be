"""Usage computed in the database: the overlap arithmetic of ``reporting.queries.usage``
as SQL sums, so a long period costs one aggregate per page instead of streaming
every interval through Python.

Both dialects sum whole microseconds (integers, ``Writes.epoch_micros`` of the
write seam), so the totals are exact and equal to the pure functions' (a property
test compares them on random lifecycles).

One page is two statements: the page's groups (sorted keys after the marker, with
their distinct resource counts), then the ``(state, size)`` sums of exactly those
groups (a key range, since the groups are contiguous in key order).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db import writes
from reporting.db.models import ResourceInterval
from reporting.queries.scope import condition
from reporting.queries.usage import UsageFilter, UsageGroup, group_columns

_EPOCH = dt.datetime(1970, 1, 1)


def epoch_micros(moment: dt.datetime) -> int:
    """Microseconds since the epoch of a naive UTC instant, exactly."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _overlap_micros(micros: Callable[[Any], sa.ColumnElement[int]], start: dt.datetime,
                    end: dt.datetime) -> sa.ColumnElement[int]:
    """Length in microseconds of each interval inside ``[start, end)`` (rows that
    overlap the period only; an open interval runs to ``end``)."""
    model = ResourceInterval
    period_start, period_end = epoch_micros(start), epoch_micros(end)
    interval_start = micros(model.start)
    interval_end = sa.case(
        (model.end.is_(None), period_end),
        else_=micros(model.end),
    )
    clipped_end = sa.case((interval_end < period_end, interval_end), else_=period_end)
    clipped_start = sa.case(
        (interval_start > period_start, interval_start), else_=period_start
    )
    return clipped_end - clipped_start


def usage_page(
    session: Session,
    filters: UsageFilter,
    group_by: str,
    start: dt.datetime,
    end: dt.datetime,
    after: tuple[str, ...] | None,
    limit: int,
) -> tuple[list[UsageGroup], dict[tuple[str, ...], int], bool]:
    """Up to ``limit`` groups after ``after``, their resource counts, and whether more follow."""
    model = ResourceInterval
    columns = [getattr(model, name) for name in group_columns(group_by)]
    key = sa.tuple_(*columns)
    overlapping = [model.start < end, sa.or_(model.end.is_(None), model.end > start)]
    if filters.cloud is not None:
        overlapping.append(model.cloud == filters.cloud)
    if filters.project_id is not None:
        overlapping.append(model.project_id == filters.project_id)
    visible = condition(model.project_id, filters.projects)
    if visible is not None:
        # The intervals a visible project owned: its share of a resource that moved.
        overlapping.append(visible)

    groups_query = (
        sa.select(*columns, sa.func.count(sa.distinct(model.resource_id)).label("resources"))
        .where(*overlapping)
        .group_by(*columns)
        .order_by(*columns)
        .limit(limit + 1)
    )
    if after is not None:
        groups_query = groups_query.where(key > sa.tuple_(*after))
    found = session.execute(groups_query).all()
    more = len(found) > limit
    found = found[:limit]
    if not found:
        return [], {}, False
    width = len(columns)
    counts = {tuple(row[:width]): int(row.resources) for row in found}
    first, last = tuple(found[0][:width]), tuple(found[-1][:width])

    length = _overlap_micros(writes.of(session).epoch_micros, start, end)
    size_text = sa.cast(model.size, sa.Text)
    sums_query = (
        # Whole seconds and the microseconds beyond them summed apart: a sum of
        # microseconds over many long intervals would overflow 64 bits (SQLite's SUM
        # refuses that), a sum of seconds cannot.
        sa.select(*columns, model.state, size_text.label("size_text"),
                  sa.func.sum(length // 1_000_000).label("seconds"),
                  sa.func.sum(length % 1_000_000).label("micros"))
        .where(*overlapping, key >= sa.tuple_(*first), key <= sa.tuple_(*last))
        .group_by(*columns, model.state, size_text)
    )
    groups = {group_key: UsageGroup(key=group_key) for group_key in counts}
    sizes: dict[str | None, Any] = {}
    for row in session.execute(sums_query):
        if row.size_text not in sizes:
            sizes[row.size_text] = json.loads(row.size_text) if row.size_text else None
        micros = int(row.seconds) * 1_000_000 + int(row.micros)
        group = groups.get(tuple(row[:width]))
        # On PostgreSQL each statement sees what was committed when it started: a
        # resource ingested after the groups were read can show here.  The page answers
        # the groups its first statement saw; the new one is in a later listing.
        if group is not None and micros > 0:
            group.add_length(
                row.state, sizes[row.size_text], dt.timedelta(microseconds=micros)
            )
    return list(groups.values()), counts, more
