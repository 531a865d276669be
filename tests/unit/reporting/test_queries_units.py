"""Pure parts of the read side: the marker codec, limits, parameters, usage arithmetic."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest

from reporting import pagination
from reporting.api.errors import ApiError
from reporting.fold import Interval
from reporting.queries import params
from reporting.queries.usage import UsageRow, aggregate, overlap

T = dt.datetime(2026, 3, 1)


def hours(n: float) -> dt.datetime:
    return T + dt.timedelta(hours=n)


# --- marker codec ------------------------------------------------------------------


def test_marker_round_trips_strings_ints_and_instants() -> None:
    key = ("openstack", "c/1", "instance", "id with spaces é")
    marker = pagination.encode_marker("resources", key)
    assert "=" not in marker and "/" not in marker and "+" not in marker
    assert pagination.decode_marker("resources", ("str",) * 4, marker) == key
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 6)
    marker = pagination.encode_marker("events", (moment, 42))
    assert pagination.decode_marker("events", ("datetime", "int"), marker) == (moment, 42)


def _raw(document: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "marker",
    [
        "",
        "!!!",
        "a",  # not decodable base64
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not UTF-8 JSON
        _raw("events"),
        _raw(["events"]),
        _raw(["resources", [1, 2]]),  # another list's tag
        _raw(["events", ["2026-01-01T00:00:00Z"]]),  # too short
        _raw(["events", ["2026-01-01T00:00:00Z", 1, 2]]),  # too long
        _raw(["events", ["yesterday", 1]]),
        _raw(["events", ["2026-01-01T00:00:00Z", "1"]]),
        _raw(["events", ["2026-01-01T00:00:00Z", True]]),
        _raw(["events", [20260101, 1]]),
        "x" * 5000,
    ],
)
def test_tampered_marker_is_400(marker: str) -> None:
    with pytest.raises(ApiError) as caught:
        pagination.decode_marker("events", ("datetime", "int"), marker)
    assert caught.value.status == 400


@pytest.mark.parametrize(("raw", "expected"), [(None, 100), ("1", 1), ("1000", 1000)])
def test_limit(raw: str | None, expected: int) -> None:
    args = {} if raw is None else {"limit": raw}
    assert pagination.parse_limit(args) == expected


@pytest.mark.parametrize("raw", ["0", "1001", "-1", "ten", "", "1.5", "１", " 5", "+5", "1_0", "5\n", "99999999999"])
def test_bad_limit_is_400(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        pagination.parse_limit({"limit": raw})
    assert caught.value.status == 400


def test_page_marks_exactly_when_rows_remain() -> None:
    assert pagination.page([1, 2], 2, "t", lambda n: (n,)) == ([1, 2], None)
    kept, marker = pagination.page([1, 2, 3], 2, "t", lambda n: (n,))
    assert kept == [1, 2]
    assert marker is not None and pagination.decode_marker("t", ("int",), marker) == (2,)


# --- parameters --------------------------------------------------------------------


def test_instant_is_naive_utc() -> None:
    assert params.instant({"t": "2026-01-01T01:00:00+01:00"}, "t") == dt.datetime(2026, 1, 1)
    assert params.instant({}, "t") is None


@pytest.mark.parametrize("raw", ["2026-01-01", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z",
                                 "2026-01-01 00:00:00Z", "now"])
def test_bad_instant_is_400(raw: str) -> None:
    with pytest.raises(ApiError):
        params.instant({"t": raw}, "t")


def test_required_instant_and_booleans_and_choices() -> None:
    with pytest.raises(ApiError):
        params.required_instant({}, "from")
    assert params.boolean({"live": "true"}, "live") is True
    assert params.boolean({"live": "false"}, "live") is False
    assert params.boolean({}, "live") is None
    for bad in ("True", "1", "yes"):
        with pytest.raises(ApiError):
            params.boolean({"live": bad}, "live")
    assert params.choice({}, "g", ("a", "b"), "a") == "a"
    with pytest.raises(ApiError):
        params.choice({"g": "c"}, "g", ("a", "b"), "a")
    with pytest.raises(ApiError):
        params.only({"cloud": "x", "clodu": "y"}, frozenset({"cloud"}))
    with pytest.raises(ApiError):
        params.text({"cloud": "x" * 256}, "cloud")


# --- usage arithmetic --------------------------------------------------------------


def interval(start: float, end: float | None, state: str = "active", project: str = "p1",
             size: dict[str, int] | None = None) -> Interval:
    return Interval(start=hours(start), end=None if end is None else hours(end),
                    project_id=project, state=state, size=size, event_id="e")


@pytest.mark.parametrize(
    ("start", "end", "expected_hours"),
    [
        (1, 2, 1),  # inside
        (-1, 2, 2),  # clipped at the period start
        (3, 5, 1),  # clipped at the period end
        (-1, 5, 4),  # covers the period
        (-2, 0, 0),  # ends where the period starts: [start, end)
        (4, 5, 0),  # starts where it ends
        (3, None, 1),  # open: counts up to the period end
        (-5, None, 4),
    ],
)
def test_overlap(start: float, end: float | None, expected_hours: float) -> None:
    got = overlap(interval(start, end), hours(0), hours(4))
    assert got == dt.timedelta(hours=expected_hours)


def test_overlap_is_exact_to_the_microsecond() -> None:
    one = Interval(start=T, end=T + dt.timedelta(microseconds=3), project_id="p",
                   state=None, size=None, event_id="e")
    assert overlap(one, T + dt.timedelta(microseconds=1), hours(1)) == dt.timedelta(
        microseconds=2)


def row(resource: str, iv: Interval, resource_type: str = "instance") -> UsageRow:
    return UsageRow("openstack", "c1", resource_type, resource, iv)


def test_aggregate_splits_by_state_and_size_and_counts_resources() -> None:
    small, large = {"vcpus": 1}, {"vcpus": 4}
    rows = [
        row("a", interval(0, 1, "active", size=small)),
        row("a", interval(1, 2, "shutoff", size=small)),
        row("a", interval(2, 3, "active", size=small)),
        row("b", interval(0, None, "active", size=large)),
    ]
    rows.sort(key=lambda r: (r.resource_id, r.interval.project_id))
    groups, more = aggregate(rows, "resource", hours(0), hours(4), 10)
    assert not more
    assert [g.key for g in groups] == [
        ("openstack", "c1", "instance", "a", "p1"), ("openstack", "c1", "instance", "b", "p1"),
    ]
    rendered = groups[0].as_dict(("platform", "cloud", "resource_type", "resource_id",
                                  "project_id"))
    assert rendered["seconds"] == 3 * 3600 and rendered["resources"] == 1
    assert rendered["breakdown"] == [
        {"state": "active", "size": small, "seconds": 7200.0},
        {"state": "shutoff", "size": small, "seconds": 3600.0},
    ]
    by_type, _ = aggregate(rows, "resource_type", hours(0), hours(4), 10)
    assert len(by_type) == 1
    assert by_type[0].as_dict(("platform", "cloud", "resource_type"))["resources"] == 2
    assert by_type[0].total == dt.timedelta(hours=7)


def test_aggregate_stops_after_limit_groups() -> None:
    rows = [row(name, interval(0, 1)) for name in ("a", "b", "c")]
    groups, more = aggregate(iter(rows), "resource", hours(0), hours(4), 2)
    assert [g.key[3] for g in groups] == ["a", "b"] and more
    groups, more = aggregate(iter(rows), "resource", hours(0), hours(4), 3)
    assert len(groups) == 3 and not more


def test_aggregate_by_project_keeps_each_projects_share() -> None:
    rows = [
        row("a", interval(0, 1, project="p1")),
        row("b", interval(0, 2, project="p1")),
        row("a", interval(1, 4, project="p2")),
    ]
    rows.sort(key=lambda r: (r.interval.project_id, r.resource_type))
    groups, _ = aggregate(rows, "project", hours(0), hours(4), 10)
    assert {g.key[2]: (g.total, len(g.resources)) for g in groups} == {
        "p1": (dt.timedelta(hours=3), 2), "p2": (dt.timedelta(hours=3), 1),
    }
