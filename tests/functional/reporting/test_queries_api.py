"""HTTP contract tests of the read side (docs/reporting-queries.md) on SQLite and PostgreSQL.

The seeded history (query_fixtures.seeded_history) holds several clouds,
projects, types and states, so a dropped filter or a wrong clip shows.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.reporting import query_fixtures
from tests.functional.reporting.query_fixtures import HEADERS, LARGE, SMALL, assert_contract, at

READ = HEADERS["read"]


@pytest.fixture
def seeded_client(app: Flask, session_factory: sessionmaker[Session]) -> FlaskClient:
    return query_fixtures.seeded_client(app, session_factory)


def get(client: FlaskClient, url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    response = client.get(url, headers=READ if headers is None else headers)
    assert client.application is not None
    body = assert_contract(client.application, "GET", url, response)
    return response.status_code, body


def ids(body: dict[str, Any]) -> list[str]:
    return [item["resource_id"] for item in body["items"]]


def walk(client: FlaskClient, url: str) -> list[dict[str, Any]]:
    """Every item of a paginated list, following next_marker."""
    items: list[dict[str, Any]] = []
    marker = None
    sep = "&" if "?" in url else "?"
    for _ in range(100):
        page_url = url if marker is None else f"{url}{sep}marker={marker}"
        status, body = get(client, page_url)
        assert status == 200, body
        items.extend(body["items"])
        marker = body["next_marker"]
        if marker is None:
            return items
    raise AssertionError("pagination does not end")


# --- inventory --------------------------------------------------------------


def test_inventory_lists_every_row_sorted_with_the_row_shape(seeded_client: FlaskClient) -> None:
    status, body = get(seeded_client, "/v1/resources")
    assert status == 200
    assert ids(body) == ["inst-a", "inst-b", "inst-d", "inst-e", "vol-a", "inst-c"]
    assert body["next_marker"] is None
    inst_a = body["items"][0]
    assert inst_a == {
        "platform": "openstack", "cloud": "c1", "resource_type": "instance",
        "resource_id": "inst-a", "project_id": "p1", "state": "shutoff", "size": LARGE,
        "live": False, "created_at": at(0), "deleted_at": at(3), "last_event_at": at(3),
        "last_event_id": inst_a["last_event_id"],
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cloud=c2", ["inst-c"]),
        ("cloud=c1&resource_type=volume", ["vol-a"]),
        ("resource_type=instance&cloud=c1", ["inst-a", "inst-b", "inst-d", "inst-e"]),
        ("project_id=p2", ["inst-e"]),  # inst-b moved to p1
        ("project_id=p1&cloud=c1", ["inst-a", "inst-b", "inst-d", "vol-a"]),
        ("live=true", ["inst-b", "inst-e", "vol-a", "inst-c"]),
        ("live=false", ["inst-a", "inst-d"]),
        ("live=true&cloud=c1&project_id=p1&resource_type=instance", ["inst-b"]),
        ("cloud=nowhere", []),
    ],
)
def test_inventory_filters(seeded_client: FlaskClient, query: str, expected: list[str]) -> None:
    status, body = get(seeded_client, f"/v1/resources?{query}")
    assert status == 200
    assert ids(body) == expected


@pytest.mark.parametrize("query", ["", "cloud=c1", "live=true"])
def test_inventory_pages_cover_the_list_once(seeded_client: FlaskClient, query: str) -> None:
    _, whole = get(seeded_client, f"/v1/resources?{query}")
    for limit in (1, 2, 5):
        paged = walk(seeded_client, f"/v1/resources?{query}&limit={limit}")
        assert paged == whole["items"]


def test_inventory_page_has_a_marker_exactly_when_more_follow(seeded_client: FlaskClient) -> None:
    _, first = get(seeded_client, "/v1/resources?limit=5")
    assert len(first["items"]) == 5 and first["next_marker"]
    _, last = get(seeded_client, f"/v1/resources?limit=5&marker={first['next_marker']}")
    assert ids(last) == ["inst-c"] and last["next_marker"] is None
    _, exact = get(seeded_client, "/v1/resources?limit=6")
    assert exact["next_marker"] is None


# --- inventory as_of ----------------------------------------------------------


def _by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["resource_id"]: item for item in body["items"]}


def test_as_of_answers_what_was_live_with_that_instants_attributes(
    seeded_client: FlaskClient,
) -> None:
    status, body = get(seeded_client, f"/v1/resources?as_of={at(1.75)}")
    assert status == 200
    assert ids(body) == ["inst-a", "inst-b", "inst-e", "vol-a", "inst-c"]
    rows = _by_id(body)
    assert rows["inst-a"]["state"] == "shutoff" and rows["inst-a"]["size"] == SMALL
    assert rows["inst-b"]["project_id"] == "p2"
    assert rows["inst-e"]["state"] == "shutoff"
    for row in rows.values():
        assert row["live"] is True and row["deleted_at"] is None
    assert rows["inst-a"]["created_at"] == at(0)
    assert rows["inst-a"]["last_event_at"] == at(1)


def test_as_of_later_instant_sees_later_changes(seeded_client: FlaskClient) -> None:
    _, body = get(seeded_client, f"/v1/resources?as_of={at(2.5)}")
    rows = _by_id(body)
    assert rows["inst-a"]["size"] == LARGE
    assert rows["inst-a"]["created_at"] == at(0)  # the live period, not the interval
    assert rows["inst-a"]["last_event_at"] == at(2)
    assert rows["inst-b"]["project_id"] == "p1"
    _, after_delete = get(seeded_client, f"/v1/resources?as_of={at(3)}")
    assert "inst-a" not in ids(after_delete)  # [start, end): gone at its delete


def test_as_of_long_ago_and_before_anything(seeded_client: FlaskClient) -> None:
    _, body = get(seeded_client, f"/v1/resources?as_of={at(-18)}")
    assert ids(body) == ["inst-d"]
    _, empty = get(seeded_client, f"/v1/resources?as_of={at(0, days=-30)}")
    assert empty == {"items": [], "next_marker": None}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("project_id=p2", ["inst-b", "inst-e"]),
        ("cloud=c2", ["inst-c"]),
        ("resource_type=volume", ["vol-a"]),
        ("live=true&cloud=c1&resource_type=instance", ["inst-a", "inst-b", "inst-e"]),
    ],
)
def test_as_of_filters(seeded_client: FlaskClient, query: str, expected: list[str]) -> None:
    _, body = get(seeded_client, f"/v1/resources?as_of={at(1.75)}&{query}")
    assert ids(body) == expected


def test_as_of_pages(seeded_client: FlaskClient) -> None:
    _, whole = get(seeded_client, f"/v1/resources?as_of={at(1.75)}")
    assert walk(seeded_client, f"/v1/resources?as_of={at(1.75)}&limit=2") == whole["items"]


def test_as_of_accepts_any_offset(seeded_client: FlaskClient) -> None:
    _, utc = get(seeded_client, f"/v1/resources?as_of={at(1.75)}")
    _, shifted = get(seeded_client, "/v1/resources?as_of=2026-01-10T02:45:00%2B01:00")
    assert shifted == utc


# --- one resource ----------------------------------------------------------------


def test_get_resource_answers_the_current_row(seeded_client: FlaskClient) -> None:
    status, row = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-b")
    assert status == 200
    assert row["project_id"] == "p1" and row["live"] is True and row["state"] == "active"
    assert row["created_at"] == at(0.5) and row["last_event_at"] == at(2)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/resources/openstack/c1/instance/nope",
        "/v1/resources/openstack/c2/instance/inst-a",  # right id, wrong cloud
        "/v1/resources/openstack/c1/volume/inst-a",  # right id, wrong type
        "/v1/resources/other/c1/instance/inst-a",
        "/v1/resources/openstack/c%00/instance/inst-a",
        "/v1/resources/openstack/c1/instance/" + "x" * 300,
    ],
)
@pytest.mark.parametrize("suffix", ["", "/events", "/lifecycle"])
def test_unknown_resource_is_404(seeded_client: FlaskClient, path: str, suffix: str) -> None:
    status, body = get(seeded_client, path + suffix)
    assert status == 404
    assert body["error"]["code"] == "not_found"


def test_history_is_in_fold_order_with_source_and_received_at(seeded_client: FlaskClient) -> None:
    status, body = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-e/events")
    assert status == 200
    events = body["items"]
    # The create arrived last but happened first.
    assert [e["event_type"] for e in events] == [
        "compute.instance.create.end", "compute.instance.update",
    ]
    assert [e["timestamp"] for e in events] == [at(1), at(1.5)]
    assert events[0]["received_at"] > events[1]["received_at"]
    assert events[0]["payload"] == {"state": "active", "size": SMALL}
    _, deleted = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-d/events")
    assert [e["source"] for e in deleted["items"]] == ["collector", "reconciliation"]


def test_history_pages(seeded_client: FlaskClient) -> None:
    url = "/v1/resources/openstack/c1/instance/inst-a/events"
    _, whole = get(seeded_client, url)
    assert len(whole["items"]) == 4
    assert walk(seeded_client, url + "?limit=1") == whole["items"]
    assert walk(seeded_client, url + "?limit=3") == whole["items"]


def test_lifecycle_intervals_name_their_opening_event(seeded_client: FlaskClient) -> None:
    _, history = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-a/events")
    event_ids = [e["event_id"] for e in history["items"]]
    status, body = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-a/lifecycle")
    assert status == 200
    assert body == {"intervals": [
        {"start": at(0), "end": at(1), "project_id": "p1", "state": "active", "size": SMALL,
         "event_id": event_ids[0]},
        {"start": at(1), "end": at(2), "project_id": "p1", "state": "shutoff", "size": SMALL,
         "event_id": event_ids[1]},
        {"start": at(2), "end": at(3), "project_id": "p1", "state": "shutoff", "size": LARGE,
         "event_id": event_ids[2]},
    ]}


def test_lifecycle_open_interval_has_null_end(seeded_client: FlaskClient) -> None:
    _, body = get(seeded_client, "/v1/resources/openstack/c1/instance/inst-b/lifecycle")
    assert [(i["start"], i["end"], i["project_id"]) for i in body["intervals"]] == [
        (at(0.5), at(2), "p2"), (at(2), None, "p1"),
    ]


# --- usage ------------------------------------------------------------------------


def usage(client: FlaskClient, query: str) -> dict[str, Any]:
    status, body = get(client, f"/v1/usage?{query}")
    assert status == 200, body
    return body


def _seconds_by_key(body: dict[str, Any], *members: str) -> dict[tuple[str, ...], float]:
    return {tuple(item[m] for m in members): item["seconds"] for item in body["items"]}


def test_usage_by_resource_splits_moves_between_projects(seeded_client: FlaskClient) -> None:
    body = usage(seeded_client, f"from={at(0)}&to={at(4)}&cloud=c1")
    assert body["group_by"] == "resource" and body["from"] == at(0) and body["to"] == at(4)
    assert _seconds_by_key(body, "resource_id", "project_id") == {
        ("inst-a", "p1"): 3 * 3600.0,
        ("inst-b", "p1"): 2 * 3600.0,
        ("inst-b", "p2"): 1.5 * 3600.0,
        ("inst-e", "p2"): 3 * 3600.0,
        ("vol-a", "p1"): 3 * 3600.0,
    }
    inst_a = next(i for i in body["items"] if i["resource_id"] == "inst-a")
    assert inst_a["breakdown"] == [
        {"state": "active", "size": SMALL, "seconds": 3600.0},
        {"state": "shutoff", "size": SMALL, "seconds": 3600.0},
        {"state": "shutoff", "size": LARGE, "seconds": 3600.0},
    ]  # by state, then by size (its sorted JSON)


def test_usage_clips_to_the_period(seeded_client: FlaskClient) -> None:
    body = usage(seeded_client, f"from={at(0.5)}&to={at(1.25)}&cloud=c1&project_id=p1")
    assert _seconds_by_key(body, "resource_id") == {
        ("inst-a",): 0.75 * 3600, ("vol-a",): 0.25 * 3600,
    }
    inst_a = next(i for i in body["items"] if i["resource_id"] == "inst-a")
    assert [(b["state"], b["seconds"]) for b in inst_a["breakdown"]] == [
        ("active", 1800.0), ("shutoff", 900.0),
    ]


def test_usage_microsecond_precision(seeded_client: FlaskClient) -> None:
    body = usage(seeded_client, "from=2026-01-10T00:59:59.999999Z&to=2026-01-10T01:00:00.000001Z"
                 "&cloud=c1&project_id=p1")
    assert _seconds_by_key(body, "resource_id") == {("inst-a",): 2e-06, ("vol-a",): 1e-06}


def test_usage_group_by_project_and_type(seeded_client: FlaskClient) -> None:
    by_project = usage(seeded_client, f"from={at(0)}&to={at(4)}&group_by=project")
    assert {
        (i["cloud"], i["project_id"], i["resource_type"]): (i["seconds"], i["resources"])
        for i in by_project["items"]
    } == {
        ("c1", "p1", "instance"): (5 * 3600.0, 2),
        ("c1", "p1", "volume"): (3 * 3600.0, 1),
        ("c1", "p2", "instance"): (4.5 * 3600.0, 2),
        ("c2", "p1", "instance"): (4 * 3600.0, 1),
    }
    by_type = usage(seeded_client, f"from={at(0)}&to={at(4)}&group_by=resource_type&cloud=c1")
    assert {(i["resource_type"], i["seconds"], i["resources"]) for i in by_type["items"]} == {
        ("instance", 9.5 * 3600, 3), ("volume", 3 * 3600.0, 1),
    }
    assert all("resource_id" not in i for i in by_type["items"])


def test_usage_outside_any_life_is_empty(seeded_client: FlaskClient) -> None:
    body = usage(seeded_client, f"from={at(0, days=-30)}&to={at(0, days=-29)}")
    assert body["items"] == [] and body["next_marker"] is None


@pytest.mark.parametrize("group_by", ["resource", "project", "resource_type"])
def test_usage_pages(seeded_client: FlaskClient, group_by: str) -> None:
    url = f"/v1/usage?from={at(-24)}&to={at(4)}&group_by={group_by}"
    _, whole = get(seeded_client, url)
    assert len(whole["items"]) >= 3
    assert walk(seeded_client, url + "&limit=1") == whole["items"]
    assert walk(seeded_client, url + "&limit=2") == whole["items"]


# --- errors and roles ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/v1/resources?limit=0",
        "/v1/resources?limit=1001",
        "/v1/resources?limit=ten",
        "/v1/resources?live=yes",
        "/v1/resources?as_of=yesterday",
        "/v1/resources?as_of=2026-01-10T00:00:00",  # no offset
        f"/v1/resources?as_of={at(1)}&live=false",
        "/v1/resources?marker=garbage!!",
        "/v1/resources?marker=WyJyZXNvdXJjZXMiLFsib3BlbnN0YWNrIl1d",  # too short a key
        "/v1/resources/openstack/c1/instance/inst-a/events?marker=WyJldmVudHMiLFsieCIsMV1d",
        "/v1/resources/openstack/c1/instance/inst-a/events?limit=-1",
        "/v1/usage",
        f"/v1/usage?from={at(0)}",
        f"/v1/usage?from={at(1)}&to={at(1)}",
        f"/v1/usage?from={at(2)}&to={at(1)}",
        f"/v1/usage?from={at(0)}&to={at(1)}&group_by=flavor",
        f"/v1/usage?from={at(0)}&to=soon",
        f"/v1/usage?from={at(0)}&to={at(1)}&marker=eA",
        "/v1/resources?cloud=c%00",  # PostgreSQL cannot even compare it
        f"/v1/usage?from={at(0)}&to={at(1)}&project_id=%00",
        "/v1/resources?project_id=" + "p" * 256,
        "/v1/resources?projectid=p1",  # a misspelt filter never answers everything
        f"/v1/usage?from={at(0)}&to={at(1)}&resource_id=x",
        "/v1/resources/openstack/c1/instance/inst-a?verbose=1",
        "/v1/resources/openstack/c1/instance/inst-a/lifecycle?limit=1",
        "/v1/resources/openstack/c1/instance/inst-a/events?cloud=c1",
    ],
)
def test_bad_parameters_are_400(seeded_client: FlaskClient, url: str) -> None:
    status, body = get(seeded_client, url)
    assert status == 400
    assert body["error"]["code"] == "bad_request" and body["error"]["message"]


def test_marker_of_one_list_is_refused_by_another(seeded_client: FlaskClient) -> None:
    _, page = get(seeded_client, "/v1/resources?limit=1")
    status, _ = get(seeded_client, f"/v1/resources?limit=1&as_of={at(1)}&marker="
                    + page["next_marker"])
    assert status == 400
    status, _ = get(seeded_client, f"/v1/usage?from={at(0)}&to={at(4)}&marker="
                    + page["next_marker"])
    assert status == 400


READ_URLS = [
    "/v1/resources",
    "/v1/resources/openstack/c1/instance/inst-a",
    "/v1/resources/openstack/c1/instance/inst-a/events",
    "/v1/resources/openstack/c1/instance/inst-a/lifecycle",
    f"/v1/usage?from={at(0)}&to={at(1)}",
]


@pytest.mark.parametrize("url", READ_URLS)
def test_reads_need_the_read_role(seeded_client: FlaskClient, url: str) -> None:
    assert get(seeded_client, url, {})[0] == 401
    assert get(seeded_client, url, {"Authorization": "Bearer wrong"})[0] == 401
    status, body = get(seeded_client, url, HEADERS["ingest"])
    assert status == 403 and body["error"]["code"] == "forbidden"
    assert get(seeded_client, url, HEADERS["read"])[0] == 200
    assert get(seeded_client, url, HEADERS["admin"])[0] == 200


# --- a resource deleted and created again --------------------------------------------


def test_recreated_resource_has_two_live_periods(
    app: Flask, session_factory: sessionmaker[Session]
) -> None:
    ev = query_fixtures.event
    query_fixtures.seed(session_factory, [
        ev("compute.instance.create.end", "phoenix", at(0), state="active", size=SMALL),
        ev("compute.instance.delete.end", "phoenix", at(1)),
        ev("compute.instance.create.end", "phoenix", at(2), state="active", size=SMALL),
        ev("compute.instance.power_off.end", "phoenix", at(3), state="shutoff"),
    ])
    client = app.test_client()
    _, lifecycle = get(client, "/v1/resources/openstack/c1/instance/phoenix/lifecycle")
    assert [(i["start"], i["end"]) for i in lifecycle["intervals"]] == [
        (at(0), at(1)), (at(2), at(3)), (at(3), None),
    ]
    _, row = get(client, "/v1/resources/openstack/c1/instance/phoenix")
    assert row["created_at"] == at(2) and row["live"] is True
    _, during_first = get(client, f"/v1/resources?as_of={at(0.5)}")
    assert [(r["created_at"], r["state"]) for r in during_first["items"]] == [(at(0), "active")]
    _, gap = get(client, f"/v1/resources?as_of={at(1.5)}")
    assert gap["items"] == []
    _, later = get(client, f"/v1/resources?as_of={at(3.5)}")
    assert [(r["created_at"], r["state"]) for r in later["items"]] == [(at(2), "shutoff")]
    usage = get(client, f"/v1/usage?from={at(0)}&to={at(4)}")[1]
    assert [(i["seconds"], [(b["state"], b["seconds"]) for b in i["breakdown"]])
            for i in usage["items"]] == [(3 * 3600.0, [("active", 7200.0), ("shutoff", 3600.0)])]
