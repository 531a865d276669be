"""Resource-seconds over a period (SPEC §3.5 ``GET /v1/usage``).

The arithmetic is pure: every lifecycle interval ``[start, end)`` overlapping the
period ``[from, to)`` contributes the length of its overlap, split by the state
and size it carried.  An interval still open (``end`` null) counts up to ``to``.
Lengths are summed as ``timedelta`` (exact microseconds) and rendered as seconds.

Grouping (``group_by``):
- ``resource`` (default): one item per (platform, cloud, resource_type,
  resource_id, project_id): a resource that moved between projects during the
  period yields one item per project, so each project's share stands alone;
- ``project``: one item per (platform, cloud, project_id, resource_type);
- ``resource_type``: one item per (platform, cloud, resource_type).
Each item carries ``seconds`` (the total), ``resources`` (how many distinct
resources contributed) and ``breakdown``: ``[{"state", "size", "seconds"}]``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Generator, Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from reporting.db.models import ResourceInterval
from reporting.fold import Interval

GROUP_BY = ("resource", "project", "resource_type")

# The columns each grouping sorts and groups on, in order.
_GROUP_COLUMNS: dict[str, tuple[str, ...]] = {
    "resource": ("platform", "cloud", "resource_type", "resource_id", "project_id"),
    "project": ("platform", "cloud", "project_id", "resource_type"),
    "resource_type": ("platform", "cloud", "resource_type"),
}


def group_columns(group_by: str) -> tuple[str, ...]:
    return _GROUP_COLUMNS[group_by]


def overlap(interval: Interval, start: dt.datetime, end: dt.datetime) -> dt.timedelta:
    """Length of ``interval`` inside ``[start, end)``; an open interval runs to ``end``."""
    interval_end = end if interval.end is None else min(interval.end, end)
    length = interval_end - max(interval.start, start)
    return length if length > dt.timedelta(0) else dt.timedelta(0)


def _size_key(size: dict[str, Any] | None) -> str:
    return json.dumps(size, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass
class UsageGroup:
    """The usage of one group: totals and the (state, size) breakdown."""

    key: tuple[str, ...]
    total: dt.timedelta = dt.timedelta(0)
    resources: set[tuple[str, str, str, str]] = dataclasses.field(default_factory=set)
    breakdown: dict[tuple[str | None, str], tuple[dict[str, Any] | None, dt.timedelta]] = (
        dataclasses.field(default_factory=dict)
    )

    def add(
        self,
        resource: tuple[str, str, str, str],
        interval: Interval,
        length: dt.timedelta,
        size_key: str | None = None,
    ) -> None:
        """Count ``length`` of ``interval``; ``size_key`` is its size's canonical JSON
        when the caller already has it."""
        if length <= dt.timedelta(0):
            return
        self.total += length
        self.resources.add(resource)
        slot = (interval.state, size_key if size_key is not None else _size_key(interval.size))
        _size, so_far = self.breakdown.get(slot, (interval.size, dt.timedelta(0)))
        self.breakdown[slot] = (interval.size, so_far + length)

    def as_dict(self, columns: tuple[str, ...]) -> dict[str, Any]:
        entries = sorted(self.breakdown.items(), key=lambda item: (item[0][0] or "", item[0][1]))
        return {
            **dict(zip(columns, self.key, strict=True)),
            "seconds": self.total.total_seconds(),
            "resources": len(self.resources),
            "breakdown": [
                {"state": state, "size": size, "seconds": length.total_seconds()}
                for (state, _), (size, length) in entries
            ],
        }


class UsageRow(NamedTuple):
    """One interval with the identity of its resource, as the range query yields it."""

    platform: str
    cloud: str
    resource_type: str
    resource_id: str
    interval: Interval
    size_key: str | None = None  # canonical JSON of interval.size, when known

    def value(self, column: str) -> str:
        if column == "project_id":
            return self.interval.project_id
        return str(getattr(self, column))

    @property
    def resource(self) -> tuple[str, str, str, str]:
        return (self.platform, self.cloud, self.resource_type, self.resource_id)


def aggregate(
    rows: Iterable[UsageRow], group_by: str, start: dt.datetime, end: dt.datetime, limit: int
) -> tuple[list[UsageGroup], bool]:
    """Fold rows sorted by the grouping's columns into at most ``limit`` groups.

    Returns the groups and whether more groups follow (rows beyond the last one).
    """
    columns = group_columns(group_by)
    groups: list[UsageGroup] = []
    for row in rows:
        key = tuple(row.value(column) for column in columns)
        if not groups or groups[-1].key != key:
            if len(groups) == limit:
                return groups, True
            groups.append(UsageGroup(key=key))
        groups[-1].add(row.resource, row.interval, overlap(row.interval, start, end),
                       row.size_key)
    return groups, False


@dataclasses.dataclass(frozen=True)
class UsageFilter:
    cloud: str | None = None
    project_id: str | None = None


def overlapping_rows(
    session: Session,
    filters: UsageFilter,
    group_by: str,
    start: dt.datetime,
    end: dt.datetime,
    after: tuple[str, ...] | None,
) -> Generator[UsageRow, None, None]:
    """The intervals overlapping ``[start, end)``, sorted by the grouping's columns.

    Streams (``yield_per``) so a long period does not load every interval at once;
    the caller stops reading after its page is full.
    """
    model = ResourceInterval
    columns = [getattr(model, name) for name in group_columns(group_by)]
    # Plain columns, not ORM entities: a long period streams many rows.
    query = sa.select(
        model.platform, model.cloud, model.resource_type, model.resource_id,
        model.start, model.end, model.project_id, model.state,
        sa.cast(model.size, sa.Text).label("size_text"), model.event_id,
    ).where(model.start < end, sa.or_(model.end.is_(None), model.end > start))
    if filters.cloud is not None:
        query = query.where(model.cloud == filters.cloud)
    if filters.project_id is not None:
        query = query.where(model.project_id == filters.project_id)
    if after is not None:
        query = query.where(sa.tuple_(*columns) > sa.tuple_(*after))
    query = query.order_by(*columns, model.start, model.id).execution_options(yield_per=1000)
    # Sizes repeat (flavors, volume types): each distinct stored text is parsed and
    # made canonical once.
    sizes: dict[str | None, tuple[dict[str, Any] | None, str]] = {}
    result = session.execute(query)
    try:
        for stored in result:
            size = sizes.get(stored.size_text)
            if size is None:
                parsed = json.loads(stored.size_text) if stored.size_text is not None else None
                size = sizes[stored.size_text] = (parsed, _size_key(parsed))
            yield _usage_row(stored, *size)
    finally:
        # The caller may stop early: release the (server-side) cursor now.
        result.close()


def _usage_row(stored: Any, size: dict[str, Any] | None, size_key: str) -> UsageRow:
    return UsageRow(
        platform=stored.platform,
        cloud=stored.cloud,
        resource_type=stored.resource_type,
        resource_id=stored.resource_id,
        interval=Interval(
            start=stored.start,
            end=stored.end,
            project_id=stored.project_id,
            state=stored.state,
            size=size,
            event_id=stored.event_id,
        ),
        size_key=size_key,
    )
