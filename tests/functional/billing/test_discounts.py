"""Percentage discounts of billing accounts, through the API on SQLite and
PostgreSQL, amounts computed by hand: the discount on the statement (JSON and CSV)
and in its totals, off the usage before the minimum commitment and the credits and
charges, a later discount replacing one, "0" ending it, the listing, the refusals
storing nothing, and a closed period's account statement never changing
(docs/statements.md, "Discounts")."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import discounts
from tests.functional.billing.account_terms_setup import (
    ADMIN,
    NOV,
    NOV_START,
    OCT,
    OCT_START,
    READ,
    csv_totals,
    statement,
    totals,
    two_accounts,
)
from tests.functional.billing.close_in_flight import add_during_the_close
from tests.functional.billing.history import ACCEPT
from tests.functional.reporting.query_fixtures import assert_contract

APPLIED_OCT = "2026-10-01T00:00:00.000000Z"


def _discount(client: FlaskClient, at: str, percent: str, account: str = "acme",
              **extra: Any) -> Any:
    return client.post(f"/v1/accounts/{account}/discounts", headers=ADMIN, json={
        "effective_from": at, "percent": percent, "reason": "framework agreement", **extra})


def _discounted(client: FlaskClient, at: str, percent: str, **extra: Any) -> dict[str, Any]:
    response = _discount(client, at, percent, **extra)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def test_a_discount_comes_off_the_usage_before_the_commitment_and_the_credits(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    url = "/v1/accounts/acme/discounts"
    added = assert_contract(app, "POST", url, _discount(client, OCT_START, "12.50"))
    assert (added["account_id"], added["effective_from"], added["percent"],
            added["reason"]) == ("acme", APPLIED_OCT, "12.5", "framework agreement")
    assert added["created_by"].startswith("token:")
    # 0.82 × 12.5 % = 0.1025 → 0.10 off: 0.72.
    statement_url = f"/v1/accounts/acme/statement?period={OCT}"
    document = assert_contract(app, "GET", statement_url, client.get(statement_url, headers=READ))
    assert document["totals"] == [{
        "currency": "EUR", "subtotal": "0.82", "adjustments_total": "0.00",
        "discount": {"effective_from": APPLIED_OCT, "percent": "12.5", "amount": "-0.10"},
        "manual_total": "0.00", "total": "0.72", "unrated_lines": 0}]
    # A minimum of 1.00 tops up the discounted usage, 0.72, by 0.28 (not 0.18).
    assert client.post("/v1/accounts/acme/commitments", headers=ADMIN, json={
        "effective_from": OCT_START, "currency": "EUR", "minimum": "1"}).status_code == 201
    (total,) = totals(client)
    assert (total["discount"]["amount"], total["commitment"]["shortfall"], total["total"]) == (
        "-0.10", "0.28", "1.00")
    # A credit counts after both: 0.82 - 0.10 + 0.28 - 1.50 = -0.50.
    assert client.post("/v1/accounts/acme/lines", headers=ADMIN, json={
        "kind": "credit", "cloud": "c1", "period": OCT, "amount": "1.50", "reason": "outage",
        "effective_at": "2026-10-20T00:00:00Z"}).status_code == 201
    (total,) = totals(client)
    assert (total["manual_total"], total["total"]) == ("-1.50", "-0.50")
    assert list(total) == ["currency", "subtotal", "adjustments_total", "discount",
                           "commitment", "manual_total", "total", "unrated_lines"]
    assert_contract(app, "GET", statement_url, client.get(statement_url, headers=READ))
    assert csv_totals(client) == [
        ("account_subtotal", "EUR", "0.82"), ("account_adjustments_total", "EUR", "0.00"),
        ("account_discount_effective_from", "EUR", APPLIED_OCT),
        ("account_discount_percent", "EUR", "12.5"),
        ("account_discount_amount", "EUR", "-0.10"),
        ("account_commitment_effective_from", "EUR", APPLIED_OCT),
        ("account_commitment_minimum", "EUR", "1.00"),
        ("account_commitment_shortfall", "EUR", "0.28"),
        ("account_manual_total", "EUR", "-1.50"), ("account_total", "EUR", "-0.50"),
        ("account_unrated_lines", "EUR", "0")]
    # Still in force in November: no usage, nothing off, the minimum in full.
    assert totals(client, NOV) == [{
        "currency": "EUR", "subtotal": "0.00", "adjustments_total": "0.00",
        "discount": {"effective_from": APPLIED_OCT, "percent": "12.5", "amount": "0.00"},
        "commitment": {"effective_from": APPLIED_OCT, "minimum": "1.00", "shortfall": "1.00"},
        "manual_total": "0.00", "total": "1.00", "unrated_lines": 0}]
    # The discount is acme's: beta's statement, and a project's, are as before.
    assert totals(client, account="beta") == [{
        "currency": "EUR", "subtotal": "1.80", "adjustments_total": "0.00",
        "manual_total": "0.00", "total": "1.80", "unrated_lines": 0}]
    assert client.get(f"/v1/statements?cloud=c1&period={OCT}&project_id=p2",
                      headers=READ).get_json()["total"] == "0.72"
    listed = assert_contract(app, "GET", url, client.get(url, headers=READ))
    assert listed["items"] == [added]


def test_a_later_discount_replaces_one_and_zero_ends_it(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    without = {k: v for k, v in statement(client, NOV).get_json().items()
               if k != "computed_at"}
    _discounted(client, OCT_START, "100")
    # All of the usage off.
    (total,) = totals(client)
    assert (total["discount"], total["total"]) == (
        {"effective_from": APPLIED_OCT, "percent": "100", "amount": "-0.82"}, "0.00")
    # "0" from November ends it: November is as with no discount at all.
    ended = _discounted(client, NOV_START, "0")
    assert ended["percent"] == "0"
    assert "discount" not in totals(client, NOV)[0]
    assert {k: v for k, v in statement(client, NOV).get_json().items()
            if k != "computed_at"} == without
    assert [r for r, _c, _v in csv_totals(client, NOV)] == [
        "account_subtotal", "account_adjustments_total", "account_manual_total",
        "account_total", "account_unrated_lines"]
    # A later discount replaces the one before from its instant on: October keeps 100,
    # December on is 7.25.
    _discounted(client, "2026-12-01T00:00:00Z", "7.25")
    assert totals(client)[0]["discount"]["percent"] == "100"
    assert totals(client, "2026-12")[0]["discount"]["percent"] == "7.25"
    listed = client.get("/v1/accounts/acme/discounts", headers=READ).get_json()["items"]
    assert [(x["effective_from"][:10], x["percent"]) for x in listed] == [
        ("2026-10-01", "100"), ("2026-11-01", "0"), ("2026-12-01", "7.25")]
    page = client.get("/v1/accounts/acme/discounts?limit=2", headers=READ).get_json()
    assert [x["percent"] for x in page["items"]] == ["100", "0"]
    rest = client.get(f"/v1/accounts/acme/discounts?marker={page['next_marker']}",
                      headers=READ).get_json()
    assert [x["percent"] for x in rest["items"]] == ["7.25"] and rest["next_marker"] is None


def test_refusals_store_nothing(client: FlaskClient,
                                session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    cases: list[tuple[str, dict[str, Any], int, str, str]] = [
        ("nobody", {}, 404, "not_found", "no account nobody"),
        ("acme", {"effective_from": "2026-10-15T00:00:00Z"}, 400, "invalid_discount",
         "not a month's start (00:00Z on the 1st): a discount applies to whole periods"),
        ("acme", {"effective_from": "2026-10-01T00:00:00+02:00"}, 400, "invalid_discount",
         "not a month's start"),
        ("acme", {"effective_from": "2026-10-01"}, 400, "invalid_discount", "RFC 3339"),
        ("acme", {"effective_from": None}, 400, "invalid_discount", "RFC 3339"),
        ("acme", {"percent": "100.01"}, 400, "invalid_discount", "percent 100.01 is above 100"),
        ("acme", {"percent": "12.345"}, 400, "invalid_discount", "more than 2 decimals"),
        ("acme", {"percent": "-5"}, 400, "invalid_discount", "from 0 to 100"),
        ("acme", {"percent": 12.5}, 400, "invalid_discount", "JSON numbers are refused"),
        ("acme", {"percent": "ten"}, 400, "invalid_discount", "from 0 to 100"),
        ("acme", {"percent": ""}, 400, "invalid_discount", "from 0 to 100"),
        ("acme", {"reason": ""}, 400, "invalid_discount", "reason is required"),
        ("acme", {"reason": "   "}, 400, "invalid_discount", "reason is required"),
        ("acme", {"reason": "x" * 1001}, 400, "invalid_discount", "1 to 1000"),
        ("acme", {"reason": "a\x00b"}, 400, "invalid_discount", "storable"),
        ("acme", {"reason": 7}, 400, "invalid_discount", "reason is required"),
        ("acme", {"extra": 1}, 400, "invalid_discount", "unknown member(s): extra"),
    ]
    base = {"effective_from": OCT_START, "percent": "12.5", "reason": "agreed"}
    for account, change, status, code, message in cases:
        response = client.post(f"/v1/accounts/{account}/discounts", headers=ADMIN,
                               json={**base, **change})
        error = response.get_json()["error"]
        assert (response.status_code, error["code"]) == (status, code), (change, error)
        assert message in error["message"], (change, error)
    for missing in ("effective_from", "percent", "reason"):
        response = client.post("/v1/accounts/acme/discounts", headers=ADMIN,
                               json={k: v for k, v in base.items() if k != missing})
        assert response.status_code == 400, missing
    assert client.post("/v1/accounts/acme/discounts", headers=READ,
                       json=base).status_code == 403
    assert client.get("/v1/accounts/acme/discounts", headers=READ).get_json()["items"] == []
    assert "discount" not in totals(client)[0]
    _discounted(client, OCT_START, "12.5")
    again = _discount(client, OCT_START, "20")
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "conflict"
    assert "discounts are never edited" in again.get_json()["error"]["message"]
    assert [x["percent"] for x in client.get("/v1/accounts/acme/discounts",
                                             headers=READ).get_json()["items"]] == ["12.5"]
    assert client.get("/v1/accounts/acme/discounts?marker=bogus",
                      headers=READ).status_code == 400
    assert client.get("/v1/accounts/acme/discounts?colour=red",
                      headers=READ).status_code == 400
    assert client.get("/v1/accounts/nobody/discounts", headers=READ).status_code == 404


def test_a_closed_account_statement_never_changes(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    _discounted(client, OCT_START, "12.5")
    assert client.post(f"/v1/periods/c1/{OCT}/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = statement(client)
    document = closed.get_json()
    assert document["status"] == "closed"
    assert (document["totals"][0]["discount"]["amount"], document["totals"][0]["total"]) == (
        "-0.10", "0.72")
    # From November on: October answers the same bytes.
    _discounted(client, NOV_START, "50")
    assert statement(client).get_data() == closed.get_data()
    assert totals(client, NOV)[0]["discount"]["percent"] == "50"
    # beta's October is closed too (its one cloud is): a discount from September, in
    # force in October, would change it: refused, naming the period.
    refused = _discount(client, "2026-09-01T00:00:00Z", "10", account="beta")
    error = refused.get_json()["error"]
    assert (refused.status_code, error["code"]) == (409, "period_closed")
    assert "account beta for period 2026-10 is closed" in error["message"]
    assert _discount(client, OCT_START, "10", account="beta").status_code == 409
    assert _discount(client, NOV_START, "10", account="beta").status_code == 201
    # November's does not end September's before October: still refused.
    assert _discount(client, "2026-09-01T00:00:00Z", "10", account="beta").status_code == 409
    # acme's September one ends at October's own: October is untouched.
    assert _discount(client, "2026-09-01T00:00:00Z", "90").status_code == 201
    assert statement(client).get_data() == closed.get_data()
    assert [x["effective_from"][:7] for x in client.get(
        "/v1/accounts/beta/discounts", headers=READ).get_json()["items"]] == [NOV]


def test_a_discount_waits_for_the_close_in_flight(pg_migrated_database: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL, two transactions: a discount asked for while October is being
    closed waits for the close, then is refused: October's account statement was
    closed without it and never changes."""
    document = {"effective_from": OCT_START, "percent": "12.5", "reason": "agreed"}
    raised, left = add_during_the_close(
        pg_migrated_database, monkeypatch,
        lambda session, now: discounts.add_excluding_closes(session, "acme", document,
                                                            "test", now),
        lambda session: discounts.of_account(session, "acme"), what="the discount")
    assert isinstance(raised, discounts.DiscountRefused), raised
    assert "2026-10 is closed" in str(raised)
    assert left == []
