"""Billing accounts through the API on SQLite and PostgreSQL, amounts computed by hand:
a project moving between accounts mid-line, a second project, the close, CSV, a month
that is not billable on one of the account's clouds, and the refusals
(docs/statements.md, "Billing accounts")."""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import account_statements
from reporting.billing import statements as project_statements
from reporting.db.writes import base, postgresql
from tests.functional.billing.history import ACCEPT, PRICES, SMALL, event, october, seed
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.query_fixtures import assert_contract

ADMIN, READ = auth("admin"), auth("read")


def _add(client: FlaskClient, account: str, project: str, at: str, cloud: str = "c1") -> Any:
    return client.post(f"/v1/accounts/{account}/memberships", headers=ADMIN,
                       json={"cloud": cloud, "project_id": project, "effective_from": at})


def _statement(client: FlaskClient, account: str, period: str = "2026-10") -> dict[str, Any]:
    response = client.get(f"/v1/accounts/{account}/statement?period={period}", headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def _setup(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN
                          ).status_code == 201
    seed(factory, october())
    for name in ("acme", "beta"):
        assert client.post("/v1/accounts", headers=ADMIN,
                           json={"account_id": name, "description": f"{name} corp"}
                           ).status_code == 201
    # p1 in acme from September, moved to beta at 05:00 on the 2nd, while inst-a runs.
    assert _add(client, "acme", "p1", "2026-09-01T00:00:00Z").status_code == 201
    assert _add(client, "beta", "p1", "2026-10-02T05:00:00Z").status_code == 201
    assert _add(client, "acme", "p2", "2026-10-01T00:00:00Z").status_code == 201


def _amounts(section: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [(x["resource_id"], x["start"][:13], x["end"][:13], x["quantity"], x["amount"])
            for x in section["lines"]]


def test_a_project_moving_between_accounts_splits_its_lines(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    acme = _statement(client, "acme")
    assert (acme["status"], acme["provisional"]) == ("open", True)
    p1, p2 = acme["projects"]
    assert (p1["project_id"], p1["from"], p1["to"]) == (
        "p1", "2026-10-01T00:00:00.000000Z", "2026-10-02T05:00:00.000000Z")
    # inst-a's first 5 of its 10 active hours: 5 h x 0.020 = 0.10
    assert _amounts(p1) == [("inst-a", "2026-10-02T00", "2026-10-02T05", "5", "0.10")]
    # inst-b one day in p2 after the price change: 24 h x 0.030
    assert _amounts(p2) == [("inst-b", "2026-10-17T00", "2026-10-18T00", "24", "0.72")]
    assert acme["totals"] == [{"currency": "EUR", "subtotal": "0.82",
                               "adjustments_total": "0.00", "manual_total": "0.00",
                               "total": "0.82", "unrated_lines": 0}]
    beta = _statement(client, "beta")
    (section,) = beta["projects"]
    assert _amounts(section) == [
        ("inst-a", "2026-10-02T05", "2026-10-02T10", "5", "0.10"),
        ("inst-a", "2026-10-02T10", "2026-10-03T00", "14", "0.14"),
        ("inst-b", "2026-10-15T00", "2026-10-16T00", "24", "0.48"),
        ("inst-b", "2026-10-16T00", "2026-10-17T00", "24", "0.72"),
        ("vol-a", "2026-10-03T00", "2026-10-04T00", "2400", "0.36"),
    ]
    assert section["total"] == "1.80"
    # The two accounts' parts of p1 are p1's statement: 0.10 + 1.80 = 1.90.
    project = client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                         headers=READ).get_json()
    assert project["total"] == "1.90"

    # Closing the month freezes the account statements too: the same lines, dated by
    # the close, and a membership that would change the closed month is refused.
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _statement(client, "beta")
    assert (closed["status"], closed["provisional"]) == ("closed", False)
    assert closed["projects"][0]["lines"] == section["lines"]
    assert closed["totals"] == beta["totals"]
    again = client.get("/v1/accounts/beta/statement?period=2026-10", headers=READ)
    assert again.get_data() == client.get("/v1/accounts/beta/statement?period=2026-10",
                                          headers=READ).get_data()
    refused = _add(client, "acme", "p1", "2026-10-20T00:00:00Z")
    assert refused.status_code == 409
    assert "closed period 2026-10 of cloud c1" in refused.get_data(as_text=True)
    assert _add(client, "acme", "p1", "2026-11-01T00:00:00Z").status_code == 201


def test_the_csv_holds_the_json(client: FlaskClient,
                                session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    document = _statement(client, "acme")
    response = client.get("/v1/accounts/acme/statement?period=2026-10",
                          headers={**READ, "Accept": "text/csv"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [r["record"] for r in rows[:5]] == [
        "account_id", "period", "status", "provisional", "computed_at"]
    lines = [(r["project_id"], r["resource_id"], r["amount"]) for r in rows
             if r["record"] == "line"]
    assert lines == [(s["project_id"], x["resource_id"], x["amount"])
                     for s in document["projects"] for x in s["lines"]]
    assert [(r["currency"], r["value"]) for r in rows if r["record"] == "account_total"] == [
        ("EUR", "0.82")]


def test_accounts_are_listed_shown_and_never_edited(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    listed = client.get("/v1/accounts?limit=1", headers=READ).get_json()
    assert [a["account_id"] for a in listed["items"]] == ["acme"]
    following = client.get(f"/v1/accounts?marker={listed['next_marker']}", headers=READ)
    assert [a["account_id"] for a in following.get_json()["items"]] == ["beta"]
    shown = client.get("/v1/accounts/acme", headers=READ).get_json()
    assert [(m["project_id"], m["number"], m["effective_from"]) for m in shown["memberships"]
            ] == [("p1", 1, "2026-09-01T00:00:00.000000Z"),
                  ("p2", 1, "2026-10-01T00:00:00.000000Z")]
    assert client.post("/v1/accounts", headers=ADMIN,
                       json={"account_id": "acme"}).status_code == 409
    assert _add(client, "beta", "p1", "2026-10-02T05:00:00Z").status_code == 409
    assert client.post("/v1/accounts", headers=READ,
                       json={"account_id": "gamma"}).status_code == 403
    bad = client.post("/v1/accounts", headers=ADMIN, json={"account_id": "a/b"})
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "invalid_account"
    assert _add(client, "nobody", "p1", "2026-10-01T00:00:00Z").status_code == 404
    assert _add(client, "acme", "p1", "yesterday").status_code == 400
    assert client.post("/v1/accounts/acme/memberships", headers=ADMIN,
                       json={"cloud": "c1", "project_id": "p1",
                             "effective_from": "2026-12-01T00:00:00Z", "extra": 1}
                       ).status_code == 400
    assert client.get("/v1/accounts/nobody/statement?period=2026-10",
                      headers=READ).status_code == 404
    assert client.get("/v1/accounts/acme/statement?period=2999-01",
                      headers=READ).status_code == 409
    assert client.get("/v1/accounts/acme/statement", headers=READ).status_code == 400


def test_a_month_before_a_clouds_history_has_no_section_there(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """c1's history begins at its first notification, 10-02 00:00, so its September is
    not billable: a project's statement of it is 409 before_history, and its section
    would bill only a survivor a sync dated back.  c2, heard since August, bills its
    September: the account's statement of September is c2's section alone, naming c1."""
    _setup(client, session_factory)
    # prices from August on (V1's), so September's lines would be rated
    assert client.put("/v1/price-lists/default", headers=ADMIN, json={
        **PRICES[0], "effective_from": "2026-08-01T00:00:00Z"}).status_code == 201
    seed(session_factory, [
        # a survivor of c1's p1 a sync dated back to 09-01: 30 days x 24 h x 0.020 = 14.40
        {**event("compute.instance.create.end", "inst-s", "2026-09-01T00:00:00Z",
                 state="active", size=SMALL), "source": "reconciliation"},
        # c2's p9, heard since August: 10 h of September x 0.020 = 0.20
        event("compute.instance.create.end", "inst-c", "2026-08-20T00:00:00Z",
              project_id="p9", cloud="c2", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-c", "2026-09-01T10:00:00Z",
              project_id="", cloud="c2"),
    ])
    assert _add(client, "acme", "p9", "2026-08-01T00:00:00Z", cloud="c2").status_code == 201
    refused = client.get("/v1/statements?cloud=c1&period=2026-09&project_id=p1",
                         headers=READ)
    assert refused.status_code == 409
    url = "/v1/accounts/acme/statement?period=2026-09"
    september = assert_contract(app, "GET", url, client.get(url, headers=READ))
    assert [(x["cloud"], x["project_id"], x["total"]) for x in september["projects"]] == [
        ("c2", "p9", "0.20")]
    (unbilled,) = september["not_billable"]
    assert unbilled["cloud"] == "c1"
    assert unbilled["reason"] == refused.get_json()["error"]["message"]
    assert "2026-10-02T00:00:00.000000Z" in unbilled["reason"]
    assert [(t["currency"], t["total"]) for t in september["totals"]] == [("EUR", "0.20")]
    rows = list(csv.DictReader(io.StringIO(client.get(
        url, headers={**READ, "Accept": "text/csv"}).get_data(as_text=True))))
    assert [(r["cloud"], r["value"]) for r in rows if r["record"] == "not_billable"] == [
        ("c1", unbilled["reason"])]
    assert [r["record"] for r in rows][:6] == [
        "account_id", "period", "status", "provisional", "computed_at", "not_billable"]
    # Closing c2's September closes the account's: c1's can never be closed.
    assert client.post("/v1/periods/c2/2026-09/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _statement(client, "acme", "2026-09")
    assert (closed["status"], closed["projects"][0]["status"]) == ("closed", "closed")
    # ... and so a discount or a commitment in force then would change it: refused
    for kind, document in (("discounts", {"percent": "10", "reason": "late deal"}),
                           ("commitments", {"currency": "EUR", "minimum": "5"})):
        refused = client.post(f"/v1/accounts/acme/{kind}", headers=ADMIN, json={
            "effective_from": "2026-09-01T00:00:00Z", **document})
        assert refused.status_code == 409, refused.get_data(as_text=True)
        assert refused.get_json()["error"]["code"] == "period_closed"
    assert _statement(client, "acme", "2026-09") == closed
    # October is billable on both clouds: no such member, as before the rule.
    assert "not_billable" not in _statement(client, "acme")


def test_an_open_account_statement_reads_its_projects_facts_only(
        client: FlaskClient, session_factory: sessionmaker[Session],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With October closed and late facts pending on November, in p1 and elsewhere
    (p3, in no account), an account's November statement carries its members'
    adjustments without reading the cloud's late facts or any other project's
    intervals, and reads each member's lines and its cloud's prices once, however many
    stretches they make."""
    _setup(client, session_factory)
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    seed(session_factory, [
        # inst-a (p1) was really powered off at 05:00: 0.10 + 19 h x 0.010 = 0.29, 0.34
        # frozen: -0.05 on November, in p1's section at November's start (beta's)
        event("compute.instance.power_off.end", "inst-a", "2026-10-02T05:00:00Z",
              state="shutoff"),
        event("compute.instance.power_off.end", "inst-x", "2026-10-20T05:00:00Z",
              project_id="p3", state="shutoff"),
    ])
    # p1 goes to acme for ten days of November and back: two stretches in beta
    assert _add(client, "acme", "p1", "2026-11-10T00:00:00Z").status_code == 201
    assert _add(client, "beta", "p1", "2026-11-20T00:00:00Z").status_code == 201

    def cloud_wide(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("an account statement read the cloud's late facts")

    for seam in (base.Writes, postgresql.PostgresWrites):
        monkeypatch.setattr(seam, "late_events", cloud_wide)
    read: Counter[str] = Counter()
    intervals = project_statements.intervals

    def one_project(session: Session, cloud: str, *args: Any, **kwargs: Any) -> Any:
        project = args[2] if len(args) > 2 else kwargs.get("project_id")
        assert project is not None, "an account statement read every project's intervals"
        read[f"intervals {project}"] += 1
        return intervals(session, cloud, *args, **kwargs)

    timeline = account_statements.timeline

    def counted(session: Session, cloud: str) -> Any:
        read[f"timeline {cloud}"] += 1
        return timeline(session, cloud)

    monkeypatch.setattr(project_statements, "intervals", one_project)
    monkeypatch.setattr(account_statements, "timeline", counted)
    beta = _statement(client, "beta", "2026-11")
    assert [(x["project_id"], x["from"][:10], x["to"][:10]) for x in beta["projects"]] == [
        ("p1", "2026-11-01", "2026-11-10"), ("p1", "2026-11-20", "2026-12-01")]
    first, second = beta["projects"]
    assert [(a["period"], a["resource_id"], a["amount"]) for a in first["adjustments"]] == [
        ("2026-10", "inst-a", "-0.05")]
    assert second["adjustments"] == []
    assert beta["totals"][0]["total"] == "-0.05"
    assert read == {"intervals p1": 1, "timeline c1": 1}
    acme = _statement(client, "acme", "2026-11")
    assert [(x["project_id"], x["adjustments"]) for x in acme["projects"]] == [
        ("p1", []), ("p2", [])]
