"""Project scoping of billing reads, on SQLite and PostgreSQL: bearer tokens
(auth_strategy=token), then keystone tokens (a member or reader of P reads P's).

A project reader bound to P reads P's statement (JSON and CSV), the summaries list
filtered to P (open and closed periods), 403 for another project's; price lists and
periods are cloud-wide facts it may read; every write stays admin's.  read is
unchanged.  Data: history.october (p1 1.90, p2 0.72, p3 unrated, p-free zero).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests_mock
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from tests.functional.billing.history import ACCEPT, PRICES, october, seed
from tests.functional.reporting import keystone_fake
from tests.functional.reporting.fixtures import ConfFactory, auth, project_readers_app
from tests.functional.reporting.keystone_fake import FakeKeystone

ADMIN, READ = auth("admin"), auth("read")
P1 = {"Authorization": "Bearer tok-p1"}
P2 = {"Authorization": "Bearer tok-p2"}
NOBODY = {"Authorization": "Bearer tok-p9"}
STATEMENTS = "/v1/statements?cloud=c1&period=2026-10"


@pytest.fixture
def scoped_app(make_conf: ConfFactory, db_url: str, tmp_path: Path) -> Iterator[Flask]:
    with project_readers_app(make_conf, db_url, tmp_path, ("p1", "p2", "p9")) as app:
        yield app


@pytest.fixture
def billed(scoped_app: Flask) -> FlaskClient:
    client = scoped_app.test_client()
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document,
                          headers=ADMIN).status_code == 201
    factory: sessionmaker[Session] = scoped_app.extensions[SESSIONMAKER_KEY]
    seed(factory, october())
    return client


def summaries(client: FlaskClient, headers: dict[str, str], query: str = "",
              period: str = "2026-10") -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    marker = None
    for _ in range(20):
        url = f"/v1/statements?cloud=c1&period={period}&limit=1{query}" + (
            f"&marker={marker}" if marker else "")
        response = client.get(url, headers=headers)
        assert response.status_code == 200, response.get_json()
        page = response.get_json()
        seen.extend((s["project_id"], s["total"]) for s in page["items"])
        marker = page["next_marker"]
        if marker is None:
            return seen
    raise AssertionError("pagination does not end")


def test_a_project_reader_reads_its_statement_only(billed: FlaskClient) -> None:
    own = billed.get(f"{STATEMENTS}&project_id=p1", headers=P1)
    assert own.status_code == 200
    as_read = billed.get(f"{STATEMENTS}&project_id=p1", headers=READ).get_json()
    assert {**own.get_json(), "computed_at": None} == {**as_read, "computed_at": None}
    assert own.get_json()["total"] == "1.90"
    other = billed.get(f"{STATEMENTS}&project_id=p2", headers=P1)
    assert other.status_code == 403
    assert other.get_json()["error"]["code"] == "forbidden"
    assert billed.get(f"{STATEMENTS}&project_id=p1", headers=P2).status_code == 403


def test_csv_is_scoped_alike(billed: FlaskClient) -> None:
    csv_accept = {"Accept": "text/csv"}
    own = billed.get(f"{STATEMENTS}&project_id=p2", headers={**P2, **csv_accept})
    assert own.status_code == 200 and own.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(own.get_data(as_text=True))))
    assert [(r["resource_id"], r["amount"]) for r in rows if r["record"] == "line"] == [
        ("inst-b", "0.72")]
    assert {r["record"]: r["value"] for r in rows}["total"] == "0.72"
    listed = billed.get(STATEMENTS, headers={**P1, **csv_accept})
    assert listed.status_code == 200
    rows = list(csv.DictReader(io.StringIO(listed.get_data(as_text=True))))
    assert [(r["project_id"], r["total"]) for r in rows] == [("p1", "1.90")]
    assert billed.get(f"{STATEMENTS}&project_id=p1",
                      headers={**P2, **csv_accept}).status_code == 403


def test_summaries_are_filtered_to_the_project(billed: FlaskClient) -> None:
    assert summaries(billed, P1) == [("p1", "1.90")]
    assert summaries(billed, P2) == [("p2", "0.72")]
    assert summaries(billed, NOBODY) == []  # a project without usage: an empty list
    assert summaries(billed, READ) == [("p-free", "0.00"), ("p1", "1.90"), ("p2", "0.72"),
                                       ("p3", "0.00")]


def test_closed_period_summaries_are_filtered_too(billed: FlaskClient) -> None:
    response = billed.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert response.status_code == 200, response.get_json()
    assert summaries(billed, P2) == [("p2", "0.72")]
    assert summaries(billed, READ) == [("p-free", "0.00"), ("p1", "1.90"), ("p2", "0.72"),
                                       ("p3", "0.00")]
    closed = billed.get(f"{STATEMENTS}&project_id=p1", headers=P1).get_json()
    assert closed["status"] == "closed" and closed["total"] == "1.90"


def test_price_lists_and_periods_are_cloud_wide_reads(billed: FlaskClient) -> None:
    """The same as read's, without who added a version or closed a period."""
    def without_who(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "items": [{**item, **{k: None for k in ("created_by", "closed_by")
                                              if k in item}} for item in body["items"]]}

    prices = billed.get("/v1/price-lists/default", headers=P1)
    assert prices.status_code == 200
    read = billed.get("/v1/price-lists/default", headers=READ).get_json()
    assert all(item["created_by"] for item in read["items"])
    assert prices.get_json() == without_who(read)
    listed = billed.get("/v1/periods/c1", headers=P1)
    assert listed.status_code == 200
    assert listed.get_json() == without_who(
        billed.get("/v1/periods/c1", headers=READ).get_json())


def test_writes_stay_admin(billed: FlaskClient) -> None:
    assert billed.put("/v1/price-lists/default", json=PRICES[0],
                      headers=P1).status_code == 403
    assert billed.post("/v1/periods/c1/2026-10/close", headers=P1).status_code == 403
    assert billed.get("/v1/periods/c1", headers=P1).get_json()["items"][0]["status"] == "open"


# --- the same with keystone tokens (auth_strategy=keystone, the default role map) ---

@pytest.fixture
def keystone() -> Iterator[FakeKeystone]:
    with requests_mock.Mocker() as mocker:
        yield FakeKeystone(mocker)


@pytest.fixture
def keystone_billed(keystone: FakeKeystone, db_url: str,
                    tmp_path: Path) -> Iterator[FlaskClient]:
    app = create_app(keystone_fake.keystone_conf(tmp_path, db_url))
    try:
        client = app.test_client()
        admin = {"X-Auth-Token": keystone.issue_system(["admin"])}
        for document in PRICES:
            assert client.put("/v1/price-lists/default", json=document,
                              headers=admin).status_code == 201
        seed(app.extensions[SESSIONMAKER_KEY], october())
        yield client
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_keystone_tokens_read_their_projects_statements(
    keystone: FakeKeystone, keystone_billed: FlaskClient
) -> None:
    client = keystone_billed
    member_p1 = {"X-Auth-Token": keystone.issue(["member"], "p1")}
    reader_p2 = {"X-Auth-Token": keystone.issue(["reader"], "p2")}
    admin = {"X-Auth-Token": keystone.issue_system(["admin"])}
    own = client.get(f"{STATEMENTS}&project_id=p1", headers=member_p1)
    assert own.status_code == 200, own.get_json()
    assert own.get_json()["total"] == "1.90"
    assert client.get(f"{STATEMENTS}&project_id=p2", headers=reader_p2).get_json()[
        "total"] == "0.72"
    for token, other in ((member_p1, "p2"), (reader_p2, "p1")):
        refused = client.get(f"{STATEMENTS}&project_id={other}", headers=token)
        assert refused.status_code == 403
        assert refused.get_json()["error"]["code"] == "forbidden"
    assert summaries(client, member_p1) == [("p1", "1.90")]
    assert summaries(client, reader_p2) == [("p2", "0.72")]
    assert summaries(client, admin) == [("p-free", "0.00"), ("p1", "1.90"), ("p2", "0.72"),
                                        ("p3", "0.00")]
    csv_rows = client.get(STATEMENTS, headers={**member_p1, "Accept": "text/csv"})
    assert [(r["project_id"], r["total"]) for r in
            csv.DictReader(io.StringIO(csv_rows.get_data(as_text=True)))] == [("p1", "1.90")]


def test_keystone_tokens_without_a_project_or_a_role_read_no_statement(
    keystone: FakeKeystone, keystone_billed: FlaskClient
) -> None:
    client = keystone_billed
    domain_scoped = {"X-Auth-Token": keystone.issue(["member"], None)}
    no_role = {"X-Auth-Token": keystone.issue(["load-balancer_member"], "p1")}
    for headers in (domain_scoped, no_role):
        for url in (STATEMENTS, f"{STATEMENTS}&project_id=p1"):
            response = client.get(url, headers=headers)
            assert response.status_code == 403, url
    assert client.get(STATEMENTS).status_code == 401
    assert client.get(STATEMENTS, headers={"X-Auth-Token": "unknown"}).status_code == 401
