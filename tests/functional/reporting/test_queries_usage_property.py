"""The database's usage sums equal the pure reference (reporting.queries.usage) on
random lifecycles, to the microsecond, for every grouping and page size, on SQLite
and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import ResourceInterval
from reporting.fold import Interval
from reporting.queries.usage import GROUP_BY, UsageFilter, UsageRow, aggregate, group_columns
from reporting.queries.usage_store import epoch_micros, usage_page

T0 = dt.datetime(2026, 1, 1)
SIZES = [None, {"vcpus": 1, "flavor": "s"}, {"flavor": "l", "vcpus": 4}]

offsets = st.integers(min_value=0, max_value=10 * 3_600_000_000)  # microseconds


@st.composite
def lifecycles(draw: Any) -> list[dict[str, Any]]:
    rows = []
    for number in range(draw(st.integers(min_value=1, max_value=5))):
        moment = T0 + dt.timedelta(microseconds=draw(offsets))
        count = draw(st.integers(min_value=1, max_value=4))
        for index in range(count):
            length = dt.timedelta(microseconds=draw(st.integers(1, 3 * 3_600_000_000)))
            is_open = index == count - 1 and draw(st.booleans())
            rows.append({
                "platform": "openstack", "cloud": draw(st.sampled_from(["c1", "c2"])),
                "resource_type": draw(st.sampled_from(["instance", "volume"])),
                "resource_id": f"r{number}", "start": moment,
                "end": None if is_open else moment + length,
                "project_id": draw(st.sampled_from(["p1", "p2"])),
                "state": draw(st.sampled_from([None, "active", "shutoff"])),
                "size": draw(st.sampled_from(SIZES)), "event_id": f"e{number}-{index}",
            })
            moment += length + dt.timedelta(microseconds=draw(st.integers(0, 10**9)))
    # One resource has one cloud and type: take those of its first interval.
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        head = first.setdefault(row["resource_id"], row)
        row["cloud"], row["resource_type"] = head["cloud"], head["resource_type"]
    return rows


def _reference(rows: list[dict[str, Any]], filters: UsageFilter, group_by: str,
               start: dt.datetime, end: dt.datetime) -> list[dict[str, Any]]:
    usage_rows = [
        UsageRow(r["platform"], r["cloud"], r["resource_type"], r["resource_id"],
                 Interval(r["start"], r["end"], r["project_id"], r["state"], r["size"],
                          r["event_id"]))
        for r in rows
        if r["start"] < end and (r["end"] is None or r["end"] > start)
        and filters.cloud in (None, r["cloud"]) and filters.project_id in (None, r["project_id"])
    ]
    columns = group_columns(group_by)
    usage_rows.sort(key=lambda row: tuple(row.value(c) for c in columns))
    groups, _ = aggregate(usage_rows, group_by, start, end, 10**6)
    return [group.as_dict(columns) for group in groups]


def _database(factory: sessionmaker[Session], filters: UsageFilter, group_by: str,
              start: dt.datetime, end: dt.datetime, limit: int) -> list[dict[str, Any]]:
    columns = group_columns(group_by)
    items: list[dict[str, Any]] = []
    after = None
    with factory() as session:
        for _page in range(1000):
            groups, counts, more = usage_page(session, filters, group_by, start, end, after,
                                              limit)
            items += [group.as_dict(columns, counts[group.key]) for group in groups]
            if not more:
                return items
            after = groups[-1].key
    raise AssertionError("pages do not end")


def test_epoch_micros_is_exact() -> None:
    assert epoch_micros(dt.datetime(1970, 1, 1)) == 0
    assert epoch_micros(dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == -1
    assert epoch_micros(dt.datetime(2026, 1, 1, 0, 0, 0, 1)) == 1767225600000001


def test_database_sums_equal_the_pure_reference(
    session_factory: sessionmaker[Session],
) -> None:
    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(
        rows=lifecycles(),
        period=st.tuples(offsets, st.integers(1, 12 * 3_600_000_000)),
        filters=st.builds(UsageFilter, cloud=st.sampled_from([None, "c1"]),
                          project_id=st.sampled_from([None, "p2"])),
        group_by=st.sampled_from(GROUP_BY),
        limit=st.integers(1, 4),
    )
    def check(rows: list[dict[str, Any]], period: tuple[int, int], filters: UsageFilter,
              group_by: str, limit: int) -> None:
        with session_factory() as session, session.begin():
            session.execute(sa.delete(ResourceInterval))
            session.execute(sa.insert(ResourceInterval), rows)
        start = T0 + dt.timedelta(microseconds=period[0])
        end = start + dt.timedelta(microseconds=period[1])
        expected = _reference(rows, filters, group_by, start, end)
        assert _database(session_factory, filters, group_by, start, end, limit) == expected

    check()
