"""An account reader (a bearer token bound to a billing account) reads that account
and the projects it holds now, nothing else (SQLite and PostgreSQL).

Data: the billing history of October 2026 on cloud c3 (p1, p2, p3, p-free; the
default list prices it), October closed; acme holds p1 and p3 of c3 from September on,
with a discount of 12.5 % from October, beta holds p2.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.session import SESSIONMAKER_KEY
from tests.functional.billing import history
from tests.functional.billing.history import ACCEPT
from tests.functional.reporting.fixtures import ConfFactory, auth, project_readers_app

ACME, BETA, GHOST = ({"Authorization": f"Bearer tok-account-{name}"}
                     for name in ("acme", "beta", "ghost"))
READ, ADMIN = auth("read"), auth("admin")
USAGE = "/v1/usage?from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z&group_by=project"
SUMMARIES = "/v1/statements?cloud=c3&period=2026-10"


@pytest.fixture
def client(make_conf: ConfFactory, db_url: str, tmp_path: Path) -> Iterator[FlaskClient]:
    with project_readers_app(make_conf, db_url, tmp_path, (),
                             ("acme", "beta", "ghost")) as app:
        yield _seeded(app)


def _seeded(app: Flask) -> FlaskClient:
    client = app.test_client()
    factory: sessionmaker[Session] = app.extensions[SESSIONMAKER_KEY]
    history.seed(factory, [{**item, "cloud": "c3"} for item in history.october()])
    for document in history.PRICES:
        assert client.put("/v1/price-lists/default", json=document,
                          headers=ADMIN).status_code == 201
    for account, projects in (("acme", ("p1", "p3")), ("beta", ("p2",))):
        assert client.post("/v1/accounts", json={"account_id": account},
                           headers=ADMIN).status_code == 201
        for project in projects:
            join(client, account, project, "2026-09-01T00:00:00Z")
    assert client.post("/v1/accounts/acme/discounts", headers=ADMIN, json={
        "effective_from": "2026-10-01T00:00:00Z", "percent": "12.5",
        "reason": "framework agreement"}).status_code == 201
    closed = client.post("/v1/periods/c3/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200, closed.get_json()
    return client


def join(client: FlaskClient, account: str, project: str, effective_from: str) -> None:
    response = client.post(f"/v1/accounts/{account}/memberships", headers=ADMIN, json={
        "cloud": "c3", "project_id": project, "effective_from": effective_from})
    assert response.status_code == 201, response.get_json()


def answer(client: FlaskClient, url: str, headers: dict[str, str]) -> tuple[int, Any]:
    response = client.get(url, headers=headers)
    return response.status_code, response.get_json()


def refused(client: FlaskClient, url: str, headers: dict[str, str]) -> str:
    status, body = answer(client, url, headers)
    assert (status, body["error"]["code"]) == (403, "forbidden"), body
    message: str = body["error"]["message"]
    return message


def projects_of(client: FlaskClient, headers: dict[str, str]) -> tuple[set[str], set[str]]:
    """The projects of October's usage and of October's summaries the caller gets."""
    status, usage = answer(client, USAGE, headers)
    assert status == 200, usage
    status, summaries = answer(client, SUMMARIES, headers)
    assert status == 200, summaries
    return ({item["project_id"] for item in usage["items"]},
            {item["project_id"] for item in summaries["items"]})


def test_an_account_reader_reads_its_own_account_as_read_does(client: FlaskClient) -> None:
    status, listed = answer(client, "/v1/accounts", ACME)
    assert status == 200, listed
    assert [item["account_id"] for item in listed["items"]] == ["acme"]
    assert [item["account_id"] for item in answer(client, "/v1/accounts", READ)[1]["items"]
            ] == ["acme", "beta"]
    for url in ("/v1/accounts/acme", "/v1/accounts/acme/statement?period=2026-10",
                "/v1/accounts/acme/lines", "/v1/accounts/acme/commitments",
                "/v1/accounts/acme/discounts"):
        status, body = answer(client, url, ACME)
        assert status == 200, (url, body)
        assert body == answer(client, url, READ)[1], url
    csv = {"Accept": "text/csv"}
    url = "/v1/accounts/acme/statement?period=2026-10"
    mine = client.get(url, headers={**ACME, **csv})
    assert mine.status_code == 200 and mine.data == client.get(
        url, headers={**READ, **csv}).data
    assert b"account_discount_amount" in mine.data
    statement = answer(client, url, ACME)[1]
    assert {section["project_id"] for section in statement["projects"]} == {"p1", "p3"}
    (total,) = statement["totals"]
    assert total["discount"]["percent"] == "12.5"
    assert [x["percent"] for x in answer(client, "/v1/accounts/acme/discounts", ACME)[1][
        "items"]] == ["12.5"]


def test_an_account_reader_gets_its_own_account_summary_alone(client: FlaskClient) -> None:
    url = "/v1/account-summaries?period=2026-10"
    status, mine = answer(client, url, ACME)
    assert status == 200, mine
    everyone = answer(client, url, READ)[1]
    assert [item["account_id"] for item in everyone["items"]] == ["acme", "beta"]
    # October is closed: the same summary, to the byte of computed_at
    assert mine == {"items": everyone["items"][:1], "next_marker": None}
    assert [x["account_id"] for x in answer(client, url, BETA)[1]["items"]] == ["beta"]
    text = client.get(url, headers={**ACME, "Accept": "text/csv"}).get_data(as_text=True)
    assert [line.split(",", 1)[0] for line in text.splitlines()[1:]] == ["acme"] * 3
    # past its own account, a page is empty (read's marker after acme)
    after_acme = answer(client, url + "&limit=1", READ)[1]["next_marker"]
    assert answer(client, f"{url}&marker={after_acme}", ACME) == (
        200, {"items": [], "next_marker": None})
    assert answer(client, f"{url}&marker={after_acme}", BETA)[1]["items"] == \
        everyone["items"][1:]
    assert refused(client, url, GHOST) == "the token reads account ghost, which does not exist"


def test_another_account_is_refused_naming_the_one_the_token_reads(
        client: FlaskClient) -> None:
    for url in ("/v1/accounts/beta", "/v1/accounts/beta/statement?period=2026-10",
                "/v1/accounts/beta/lines", "/v1/accounts/beta/commitments",
                "/v1/accounts/beta/discounts", "/v1/accounts/nosuch"):
        assert refused(client, url, ACME) == \
            f"the token reads account acme only, not {url.split('/')[3]}", url


def test_an_account_reader_reads_the_projects_its_account_holds(client: FlaskClient) -> None:
    assert projects_of(client, ACME) == ({"p1", "p3"}, {"p1", "p3"})
    assert projects_of(client, BETA) == ({"p2"}, {"p2"})
    everyone = projects_of(client, READ)
    assert {"p1", "p2", "p3", "p-free"} <= everyone[0] and everyone[0] == everyone[1]
    mine = answer(client, SUMMARIES + "&project_id=p3", ACME)
    assert mine == answer(client, SUMMARIES + "&project_id=p3", READ)
    for url in (SUMMARIES + "&project_id=p2", USAGE + "&project_id=p-free"):
        assert "is outside the projects your token may read" in refused(client, url, ACME)


def test_a_project_that_moved_out_leaves_its_reads_not_the_accounts_past(
        client: FlaskClient) -> None:
    before = answer(client, "/v1/accounts/acme/statement?period=2026-10", ACME)[1]
    join(client, "beta", "p1", "2026-11-01T00:00:00Z")
    join(client, "beta", "p3", "2099-01-01T00:00:00Z")  # not yet: acme holds p3 now
    assert projects_of(client, ACME) == ({"p3"}, {"p3"})
    assert projects_of(client, BETA) == ({"p1", "p2"}, {"p1", "p2"})
    refused(client, SUMMARIES + "&project_id=p1", ACME)
    # October's account statement is closed: p1 was acme's then, and stays on it.
    assert answer(client, "/v1/accounts/acme/statement?period=2026-10", ACME) == (200, before)


def test_a_token_of_an_account_that_does_not_exist_reads_nothing(
        client: FlaskClient) -> None:
    for url in ("/v1/accounts", "/v1/accounts/ghost", USAGE, SUMMARIES):
        assert refused(client, url, GHOST) == \
            "the token reads account ghost, which does not exist", url


def test_writes_and_cloud_wide_reads_stay_refused(client: FlaskClient) -> None:
    for method, url, body in (
            ("POST", "/v1/accounts", {"account_id": "mine"}),
            ("POST", "/v1/accounts/acme/lines", {"cloud": "c3", "kind": "credit",
                                                  "amount": "1.00", "reason": "r"}),
            ("POST", "/v1/accounts/acme/discounts", {
                "effective_from": "2026-11-01T00:00:00Z", "percent": "50", "reason": "r"}),
            ("POST", "/v1/accounts/acme/memberships", {
                "cloud": "c3", "project_id": "p2", "effective_from": "2026-11-02T00:00:00Z"}),
            ("PUT", "/v1/price-lists/default", history.PRICES[0]),
            ("GET", "/v1/clouds", None), ("GET", "/v1/sync-runs", None),
            ("GET", "/v1/periods/c3/2026-10/export?format=json", None)):
        response = client.open(url, method=method, json=body, headers=ACME)
        assert response.status_code == 403, (method, url, response.get_json())
