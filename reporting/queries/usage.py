"""Resource-seconds over a period (``GET /v1/usage``, docs/reporting-queries.md).

The arithmetic, as pure functions: every lifecycle interval ``[start, end)`` overlapping the
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

The API computes the same sums in the database (``reporting.queries.usage_store``);
these functions are the reference it is tested against.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from typing import Any, NamedTuple

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
        self.resources.add(resource)
        self.add_length(interval.state, interval.size, length, size_key)

    def add_length(
        self,
        state: str | None,
        size: dict[str, Any] | None,
        length: dt.timedelta,
        size_key: str | None = None,
    ) -> None:
        """Count ``length`` spent in ``(state, size)``."""
        self.total += length
        slot = (state, size_key if size_key is not None else _size_key(size))
        _size, so_far = self.breakdown.get(slot, (size, dt.timedelta(0)))
        self.breakdown[slot] = (size, so_far + length)

    def as_dict(self, columns: tuple[str, ...], resources: int | None = None) -> dict[str, Any]:
        """The item; ``resources`` overrides the count of resources seen by ``add``."""
        entries = sorted(self.breakdown.items(), key=lambda item: (item[0][0] or "", item[0][1]))
        return {
            **dict(zip(columns, self.key, strict=True)),
            "seconds": self.total.total_seconds(),
            "resources": len(self.resources) if resources is None else resources,
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
    # The projects the caller may read (None: every project).
    projects: frozenset[str] | None = None
