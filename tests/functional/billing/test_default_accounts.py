"""When the sync's default memberships take effect (``reporting.billing.
default_accounts``), on both backends: the month of the cloud's first observation,
or the end of its last closed period; never over a closed statement, never over a
project an operator placed."""

from __future__ import annotations

import datetime as dt

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import default_accounts
from tests.functional.billing.history import ACCEPT, PRICES, october, seed
from tests.functional.reporting.fixtures import auth

ADMIN = auth("admin")
AT = dt.datetime(2026, 11, 15, 12, 0, 0)
NOW = dt.datetime(2026, 11, 15, 12, 0, 5)


def _members(client: FlaskClient, account: str) -> list[tuple[str, str, str]]:
    body = client.get(f"/v1/accounts/{account}", headers=ADMIN).get_json()
    return [(m["project_id"], m["effective_from"], m["created_by"]) for m in body["memberships"]]


def test_before_any_close_from_the_month_of_the_first_observation(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    # Nothing observed c9 yet: the month of the run itself.
    report = default_accounts.assign(session_factory, "c9", {"p9": ("c9-d1", "domain d1")},
                                     [], AT, NOW)
    assert (report["accounts_added"], report["memberships_added"]) == (["c9-d1"], 1)
    assert _members(client, "c9-d1") == [
        ("p9", "2026-11-01T00:00:00.000000Z", "tally-sync (default account)")]
    # c1's collector heard its first notification on 2026-10-02.
    seed(session_factory, october())
    default_accounts.assign(session_factory, "c1", {"p1": ("c1-d1", "domain d1")}, [], AT, NOW)
    assert _members(client, "c1-d1")[0][:2] == ("p1", "2026-10-01T00:00:00.000000Z")


def test_after_a_close_from_the_end_of_the_last_closed_period(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    seed(session_factory, october())
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document,
                          headers=ADMIN).status_code == 201
    closed = client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200, closed.get_json()
    before = client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                        headers=ADMIN).data
    default_accounts.assign(session_factory, "c1", {"p1": ("c1-d1", "domain d1"),
                                                    "p2": ("c1-d1", "domain d1")}, [], AT, NOW)
    assert [m[:2] for m in _members(client, "c1-d1")] == [
        ("p1", "2026-11-01T00:00:00.000000Z"), ("p2", "2026-11-01T00:00:00.000000Z")]
    assert client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                      headers=ADMIN).data == before
    # October's account statement holds nothing: the membership began after it.
    statement = client.get("/v1/accounts/c1-d1/statement?period=2026-10", headers=ADMIN)
    assert statement.status_code == 200 and statement.get_json()["projects"] == []


def test_a_project_with_a_membership_is_never_touched(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.post("/v1/accounts", json={"account_id": "mine"},
                       headers=ADMIN).status_code == 201
    joined = client.post("/v1/accounts/mine/memberships", headers=ADMIN, json={
        "cloud": "c1", "project_id": "p1", "effective_from": "2026-11-10T00:00:00Z"})
    assert joined.status_code == 201
    report = default_accounts.assign(session_factory, "c1", {"p1": ("c1-d1", "domain d1")},
                                     [], AT, NOW)
    assert (report["accounts_added"], report["memberships_added"]) == ([], 0)
    assert client.get("/v1/accounts/c1-d1", headers=ADMIN).status_code == 404
    # The same project on another cloud is another project.
    report = default_accounts.assign(session_factory, "c2", {"p1": ("c2-d1", "domain d1")},
                                     [], AT, NOW)
    assert report["memberships_added"] == 1
