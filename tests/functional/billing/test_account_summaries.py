"""Every account's summary of a period through the API on SQLite and PostgreSQL,
amounts computed by hand: each summary is its account statement's totals and sections
without their lines, paged by account id, in CSV too, and the refusals
(docs/statements.md, "Billing accounts").

Data: October 2026 of c1 (``history.october``); acme holds p1 until 10-02 05:00, when
p1 moves to beta, and p2 from October on, with a 25 % discount; beta has a minimum
commitment of 5.00 EUR; gamma holds no project and has a credit of 1.00.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, PRICES, october, seed
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.query_fixtures import assert_contract

ADMIN, READ = auth("admin"), auth("read")
URL = "/v1/account-summaries?period=2026-10"
OCT = "2026-10-01T00:00:00.000000Z"
MOVED = "2026-10-02T05:00:00.000000Z"
NOV = "2026-11-01T00:00:00.000000Z"
CSV = {"Accept": "text/csv"}


def _created(response: Any) -> None:
    assert response.status_code == 201, response.get_data(as_text=True)


def setup_accounts(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    for document in PRICES:
        _created(client.put("/v1/price-lists/default", json=document, headers=ADMIN))
    seed(factory, october())
    for name in ("gamma", "acme", "beta"):  # added out of order: listed by id
        _created(client.post("/v1/accounts", headers=ADMIN, json={"account_id": name}))
    for account, project, at in (("acme", "p1", "2026-09-01T00:00:00Z"),
                                 ("beta", "p1", "2026-10-02T05:00:00Z"),
                                 ("acme", "p2", "2026-10-01T00:00:00Z")):
        _created(client.post(f"/v1/accounts/{account}/memberships", headers=ADMIN, json={
            "cloud": "c1", "project_id": project, "effective_from": at}))
    _created(client.post("/v1/accounts/acme/discounts", headers=ADMIN, json={
        "effective_from": "2026-10-01T00:00:00Z", "percent": "25", "reason": "framework"}))
    _created(client.post("/v1/accounts/beta/commitments", headers=ADMIN, json={
        "effective_from": "2026-10-01T00:00:00Z", "currency": "EUR", "minimum": "5.00"}))
    _created(client.post("/v1/accounts/gamma/lines", headers=ADMIN, json={
        "kind": "credit", "cloud": "c1", "period": "2026-10", "amount": "1.00",
        "reason": "goodwill", "effective_at": "2026-10-15T00:00:00Z"}))


def _section(project: str, membership: int, start: str, end: str, total: str,
             status: str = "open") -> dict[str, Any]:
    return {"cloud": "c1", "project_id": project, "membership": membership, "from": start,
            "to": end, "status": status, "currency": "EUR", "subtotal": total,
            "adjustments_total": "0.00", "total": total, "unrated_lines": 0}


def _total(subtotal: str, manual: str, total: str, **terms: Any) -> dict[str, Any]:
    return {"currency": "EUR", "subtotal": subtotal, "adjustments_total": "0.00", **terms,
            "manual_total": manual, "total": total, "unrated_lines": 0}


def _without_lines(statement: dict[str, Any]) -> list[dict[str, Any]]:
    return [{name: value for name, value in section.items()
             if name not in ("lines", "tiers", "adjustments")}
            for section in statement["projects"]]


def _statement(client: FlaskClient, account: str) -> dict[str, Any]:
    response = client.get(f"/v1/accounts/{account}/statement?period=2026-10", headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def _summaries(app: Flask, client: FlaskClient, url: str = URL,
               headers: dict[str, str] = READ) -> dict[str, Any]:
    response = client.get(url, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return assert_contract(app, "GET", url, response)  # type: ignore[no-any-return]


def _assert_statements_agree(client: FlaskClient, items: list[dict[str, Any]]) -> None:
    """Each summary is its account's statement: totals, status, sections but lines."""
    for item in items:
        statement = _statement(client, item["account_id"])
        assert item["totals"] == statement["totals"], item["account_id"]
        assert item["sections"] == _without_lines(statement), item["account_id"]
        top = ["account_id", "period", "status", "provisional", "computed_at"]
        if statement["status"] == "open":  # dated when computed, by another request
            top.pop()
        assert {name: item[name] for name in top} == {name: statement[name] for name in top}
        assert set(item) == {*top, "computed_at", "sections", "totals"}


def test_each_summary_is_its_account_statement_without_lines(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    setup_accounts(client, session_factory)
    body = _summaries(app, client)
    assert body["next_marker"] is None
    acme, beta, gamma = body["items"]
    assert [x["account_id"] for x in body["items"]] == ["acme", "beta", "gamma"]
    # acme: p1's first 5 h of inst-a (0.10), p2's day of inst-b at 0.030 (0.72);
    # 25 % of 0.82 is 0.205, rounded half-even to 0.20
    assert acme["sections"] == [_section("p1", 1, OCT, MOVED, "0.10"),
                                _section("p2", 1, OCT, NOV, "0.72")]
    assert acme["totals"] == [_total("0.82", "0.00", "0.62", discount={
        "effective_from": OCT, "percent": "25", "amount": "-0.20"})]
    # beta: the rest of p1's month, 1.90 - 0.10 = 1.80, topped up to its minimum 5.00
    assert beta["sections"] == [_section("p1", 2, MOVED, NOV, "1.80")]
    assert beta["totals"] == [_total("1.80", "0.00", "5.00", commitment={
        "effective_from": OCT, "minimum": "5.00", "shortfall": "3.20"})]
    # gamma: no project, its credit alone
    assert (gamma["sections"], gamma["totals"]) == ([], [_total("0.00", "-1.00", "-1.00")])
    assert all((x["status"], x["provisional"]) == ("open", True) for x in body["items"])
    assert "not_billable" not in acme
    _assert_statements_agree(client, body["items"])

    # Closed, each summary is still its statement (sections closed, the same totals).
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _summaries(app, client)["items"]
    assert [x["status"] for x in closed] == ["closed"] * 3
    assert [s["status"] for x in closed for s in x["sections"]] == ["closed"] * 3
    assert [x["totals"] for x in closed] == [acme["totals"], beta["totals"], gamma["totals"]]
    _assert_statements_agree(client, closed)
    # each closed section names the closed statement it is cut from (p1's in both), in
    # the statement as the API describes it
    url = "/v1/accounts/beta/statement?period=2026-10"
    assert_contract(app, "GET", url, client.get(url, headers=READ))
    numbers = {x["project_id"]: x["number"] for x in client.get(
        "/v1/statements?cloud=c1&period=2026-10", headers=READ).get_json()["items"]}
    assert numbers["p1"] != numbers["p2"]
    assert [(s["project_id"], s["number"]) for x in closed for s in x["sections"]] == [
        ("p1", numbers["p1"]), ("p2", numbers["p2"]), ("p1", numbers["p1"])]


def test_a_month_not_billable_on_a_cloud_is_named_as_the_statement_names_it(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """c1's history begins on 10-02: September is not billable there."""
    setup_accounts(client, session_factory)
    url = "/v1/account-summaries?period=2026-09"
    items = _summaries(app, client, url)["items"]
    acme = _statement(client, "acme").get("not_billable")
    assert acme is None  # October is billable
    september = client.get("/v1/accounts/acme/statement?period=2026-09", headers=READ)
    assert items[0]["not_billable"] == september.get_json()["not_billable"]
    assert items[0]["not_billable"][0]["cloud"] == "c1"
    assert (items[0]["sections"], items[0]["totals"]) == ([], [])
    rows = list(csv.DictReader(io.StringIO(client.get(
        url, headers={**READ, **CSV}).get_data(as_text=True))))
    assert [(r["account_id"], r["record"], r["cloud"], r["value"]) for r in rows
            if r["record"] == "not_billable"] == [
        ("acme", "not_billable", "c1", items[0]["not_billable"][0]["reason"])]


def test_pages_of_one_account_follow_the_marker(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    setup_accounts(client, session_factory)
    whole = _summaries(app, client)["items"]
    seen: list[dict[str, Any]] = []
    url = URL + "&limit=1"
    while True:
        body = _summaries(app, client, url)
        assert len(body["items"]) == 1
        seen.extend(body["items"])
        if body["next_marker"] is None:
            break
        url = f"{URL}&limit=1&marker={body['next_marker']}"
    assert [x["account_id"] for x in seen] == ["acme", "beta", "gamma"]
    assert [x["totals"] for x in seen] == [x["totals"] for x in whole]
    # CSV pages: the marker in X-Next-Marker, the same rows as one page
    texts, marker = [], None
    while True:
        query = URL + "&limit=1" + (f"&marker={marker}" if marker else "")
        response = client.get(query, headers={**READ, **CSV})
        assert response.status_code == 200 and response.mimetype == "text/csv"
        texts.append(response.get_data(as_text=True))
        marker = response.headers.get("X-Next-Marker")
        if marker is None:
            break
    assert len(texts) == 3
    one = client.get(URL, headers={**READ, **CSV})
    assert "X-Next-Marker" not in one.headers
    assert texts[0] + "".join(t.split("\r\n", 1)[1] for t in texts[1:]) == \
        one.get_data(as_text=True)


def test_the_csv_has_a_row_per_section_and_per_currency_total(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    setup_accounts(client, session_factory)
    # a project id a spreadsheet would read as a formula: written after an apostrophe
    _created(client.post("/v1/accounts/gamma/memberships", headers=ADMIN, json={
        "cloud": "c1", "project_id": "=HYPERLINK(1)", "effective_from": OCT}))
    items = _summaries(app, client)["items"]
    text = client.get(URL, headers={**READ, **CSV}).get_data(as_text=True)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.split("\r\n", 1)[0] == (
        "account_id,period,record,value,cloud,project_id,membership,from,to,status,"
        "currency,subtotal,adjustments_total,discount_effective_from,discount_percent,"
        "discount_amount,commitment_effective_from,commitment_minimum,"
        "commitment_shortfall,manual_total,total,unrated_lines,number")
    assert [(r["account_id"], r["record"], r["project_id"], r["from"], r["total"])
            for r in rows] == [
        ("acme", "section", "p1", OCT, "0.10"), ("acme", "section", "p2", OCT, "0.72"),
        ("acme", "total", "", "", "0.62"),
        ("beta", "section", "p1", MOVED, "1.80"), ("beta", "total", "", "", "5.00"),
        ("gamma", "section", "'=HYPERLINK(1)", OCT, "0.00"),
        ("gamma", "total", "", "", "-1.00")]
    acme, beta = rows[2], rows[4]
    assert {name: acme[name] for name in (
        "period", "status", "currency", "subtotal", "adjustments_total",
        "discount_effective_from", "discount_percent", "discount_amount",
        "commitment_minimum", "manual_total", "unrated_lines")} == {
        "period": "2026-10", "status": "open", "currency": "EUR", "subtotal": "0.82",
        "adjustments_total": "0.00", "discount_effective_from": OCT,
        "discount_percent": "25", "discount_amount": "-0.20", "commitment_minimum": "",
        "manual_total": "0.00", "unrated_lines": "0"}
    assert (beta["commitment_minimum"], beta["commitment_shortfall"]) == ("5.00", "3.20")
    assert rows[0]["membership"] == "1" and rows[3]["membership"] == "2"
    assert rows[-1]["manual_total"] == "-1.00"  # a number Tally wrote: no apostrophe
    assert [x["project_id"] for x in items[2]["sections"]] == ["=HYPERLINK(1)"]


def test_refusals(app: Flask, client: FlaskClient,
                  session_factory: sessionmaker[Session]) -> None:
    setup_accounts(client, session_factory)
    listed = client.get("/v1/accounts?limit=1", headers=READ).get_json()["next_marker"]
    for query, message in (
            ("", "period must be a month YYYY-MM"),
            ("?period=2026-13", "period 2026-13 is not a month"),
            ("?period=2026-10&limit=0", "limit must be an integer between 1 and 1000"),
            ("?period=2026-10&limit=x", "limit must be an integer"),
            ("?period=2026-10&marker=%21", "marker is not valid for this list"),
            (f"?period=2026-10&marker={listed}", "marker is not valid for this list"),
            ("?period=2026-10&cloud=c1", "unknown query parameter(s): cloud")):
        url = "/v1/account-summaries" + query
        response = client.get(url, headers=READ)
        body = assert_contract(app, "GET", url, response)
        assert (response.status_code, body["error"]["code"]) == (400, "bad_request"), url
        assert message in body["error"]["message"], (url, body)
    url = "/v1/account-summaries?period=2999-01"
    response = client.get(url, headers=READ)
    body = assert_contract(app, "GET", url, response)
    assert (response.status_code, body["error"]["code"]) == (409, "period_not_started")
    assert body["error"]["message"] == client.get(
        "/v1/accounts/acme/statement?period=2999-01", headers=READ
    ).get_json()["error"]["message"]
    assert client.get(URL).status_code == 401
    assert client.get(URL, headers=auth("ingest")).status_code == 403
    as_admin, as_reader = (client.get(URL, headers=who).get_json()["items"]
                           for who in (ADMIN, READ))
    assert [(x["account_id"], x["totals"]) for x in as_admin] == [
        (x["account_id"], x["totals"]) for x in as_reader]
