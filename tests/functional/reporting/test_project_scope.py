"""Project scoping of every query endpoint (auth_strategy=token; the keystone strategy
is in tests/functional/reporting/test_auth_keystone.py, every route's decision in
test_scope_routes.py), on SQLite and PostgreSQL.

A project reader bound to P sees P's rows only: lists filtered to P, another
project's resource 404, a filter naming another project 403. read and admin
still see every project. Data: query_fixtures.seeded_history (inst-b moved from
p2 to p1 at +2h; inst-e is p2's; the rest is p1's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import sessionmaker

from reporting.db.session import SESSIONMAKER_KEY
from tests.functional.reporting import query_fixtures
from tests.functional.reporting.fixtures import ConfFactory, auth, project_readers_app
from tests.functional.reporting.query_fixtures import assert_contract, at

P1 = {"Authorization": "Bearer tok-p1"}
P2 = {"Authorization": "Bearer tok-p2"}
RESOURCE = "/v1/resources/openstack/c1/instance/{}"
USAGE = f"/v1/usage?from={at(0)}&to={at(3)}"


@pytest.fixture
def scoped_app(make_conf: ConfFactory, db_url: str, tmp_path: Path) -> Iterator[Flask]:
    with project_readers_app(make_conf, db_url, tmp_path, ("p1", "p2")) as app:
        yield app


@pytest.fixture
def client(scoped_app: Flask) -> FlaskClient:
    factory: sessionmaker[Any] = scoped_app.extensions[SESSIONMAKER_KEY]
    return query_fixtures.seeded_client(scoped_app, factory)


def get(client: FlaskClient, url: str, headers: dict[str, str]) -> tuple[int, Any]:
    response = client.get(url, headers=headers)
    assert client.application is not None
    return response.status_code, assert_contract(client.application, "GET", url, response)


def walk(client: FlaskClient, url: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    marker = None
    sep = "&" if "?" in url else "?"
    for _ in range(50):
        status, body = get(client, url if marker is None else f"{url}{sep}marker={marker}",
                           headers)
        assert status == 200, body
        items.extend(body["items"])
        marker = body["next_marker"]
        if marker is None:
            return items
    raise AssertionError("pagination does not end")


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["resource_id"] for item in items]


def test_inventory_is_filtered_to_the_project(client: FlaskClient) -> None:
    assert ids(walk(client, "/v1/resources", P1)) == ["inst-a", "inst-b", "inst-d", "vol-a",
                                                      "inst-c"]
    assert ids(walk(client, "/v1/resources", P2)) == ["inst-e"]
    # A page at a time covers the same rows (the scope is in the keyset query).
    assert ids(walk(client, "/v1/resources?limit=2", P1)) == ids(
        walk(client, "/v1/resources", P1))
    assert ids(walk(client, "/v1/resources?project_id=p1&live=true", P1)) == [
        "inst-b", "vol-a", "inst-c"]
    assert len(walk(client, "/v1/resources", auth("read"))) == 6


def test_as_of_shows_what_the_project_owned_then(client: FlaskClient) -> None:
    # At +1h inst-b still belonged to p2.
    assert ids(walk(client, f"/v1/resources?as_of={at(1)}", P2)) == ["inst-b", "inst-e"]
    assert ids(walk(client, f"/v1/resources?as_of={at(1)}", P1)) == ["inst-a", "vol-a",
                                                                      "inst-c"]


@pytest.mark.parametrize("path", ["/v1/resources", f"/v1/resources?as_of={at(1)}", USAGE])
def test_a_filter_naming_another_project_is_403(client: FlaskClient, path: str) -> None:
    sep = "&" if "?" in path else "?"
    status, body = get(client, f"{path}{sep}project_id=p2", P1)
    assert status == 403
    assert body["error"]["code"] == "forbidden"
    assert "p2" in body["error"]["message"]
    status, _ = get(client, f"{path}{sep}project_id=p2", auth("read"))
    assert status == 200


@pytest.mark.parametrize("suffix", ["", "/events", "/lifecycle"])
def test_another_projects_resource_is_404(client: FlaskClient, suffix: str) -> None:
    status, body = get(client, RESOURCE.format("inst-e") + suffix, P1)
    assert (status, body["error"]["code"]) == (404, "not_found")
    assert get(client, RESOURCE.format("inst-e") + suffix, P2)[0] == 200
    # inst-b belongs to p1 now: its whole history and lifecycle are p1's.
    assert get(client, RESOURCE.format("inst-b") + suffix, P2)[0] == 404
    status, body = get(client, RESOURCE.format("inst-b") + suffix, P1)
    assert status == 200
    if suffix == "/lifecycle":
        assert [iv["project_id"] for iv in body["intervals"]] == ["p2", "p1"]
    for role in ("read", "admin"):
        assert get(client, RESOURCE.format("inst-e") + suffix, auth(role))[0] == 200


@pytest.mark.parametrize("group_by", ["resource", "project", "resource_type"])
def test_usage_counts_only_the_projects_intervals(client: FlaskClient, group_by: str) -> None:
    url = f"{USAGE}&group_by={group_by}"
    p2 = walk(client, url, P2)
    everything = walk(client, url, auth("read"))
    if group_by != "resource_type":
        assert {item["project_id"] for item in p2} == {"p2"}
        assert [i for i in everything if i["project_id"] == "p2"] == p2
    if group_by == "resource":
        # inst-b's p2 share (+0.5h to +2h) is p2's; its p1 share is p1's.
        inst_b = {item["project_id"]: item["seconds"] for item in everything
                  if item["resource_id"] == "inst-b"}
        assert [i["seconds"] for i in p2 if i["resource_id"] == "inst-b"] == [inst_b["p2"]]
        p1 = walk(client, url, P1)
        assert [i["seconds"] for i in p1 if i["resource_id"] == "inst-b"] == [inst_b["p1"]]
    total_p2 = sum(item["seconds"] for item in p2)
    assert total_p2 == pytest.approx((1.5 + 2) * 3600)  # inst-b 1.5h, inst-e 2h


@pytest.mark.parametrize("path", ["/v1/rejected-events", "/v1/sync-runs",
                                  "/v1/resource-types"])
def test_cloud_wide_endpoints_refuse_project_readers(client: FlaskClient, path: str) -> None:
    response = client.get(path, headers=P1)
    assert response.status_code == 403
    assert client.get(path, headers=auth("read")).status_code == 200


def test_project_reader_cannot_ingest(client: FlaskClient) -> None:
    assert client.post("/v1/events", json={"events": []}, headers=P1).status_code == 403
