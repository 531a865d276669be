"""Minimum commitments of billing accounts, through the API on SQLite and PostgreSQL,
amounts computed by hand: the top-up on the statement (JSON and CSV) and in its
totals, before the credits and charges, a later commitment replacing one, "0" ending
it, another currency, the listing, the refusals storing nothing, and a closed
period's account statement never changing (docs/statements.md, "Minimum
commitments")."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import commitments
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


def _commit(client: FlaskClient, at: str, minimum: str, currency: str = "EUR",
            account: str = "acme", **extra: Any) -> Any:
    return client.post(f"/v1/accounts/{account}/commitments", headers=ADMIN, json={
        "effective_from": at, "currency": currency, "minimum": minimum, **extra})


def _committed(client: FlaskClient, at: str, minimum: str, **extra: Any) -> dict[str, Any]:
    response = _commit(client, at, minimum, **extra)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def test_a_minimum_tops_up_the_usage_before_the_credits(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    added = _committed(client, OCT_START, "5")
    assert (added["account_id"], added["effective_from"], added["currency"],
            added["minimum"]) == ("acme", "2026-10-01T00:00:00.000000Z", "EUR", "5.00")
    assert added["created_by"].startswith("token:")
    # 0.82 of usage under a minimum of 5.00: a shortfall of 4.18, 5.00 in all.
    assert totals(client) == [{
        "currency": "EUR", "subtotal": "0.82", "adjustments_total": "0.00",
        "commitment": {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "5.00",
                       "shortfall": "4.18"},
        "manual_total": "0.00", "total": "5.00", "unrated_lines": 0}]
    # A credit counts after the commitment: 0.82 + 4.18 - 1.50 = 3.50.
    assert client.post("/v1/accounts/acme/lines", headers=ADMIN, json={
        "kind": "credit", "cloud": "c1", "period": OCT, "amount": "1.50", "reason": "outage",
        "effective_at": "2026-10-20T00:00:00Z"}).status_code == 201
    (total,) = totals(client)
    assert (total["commitment"]["shortfall"], total["manual_total"], total["total"]) == (
        "4.18", "-1.50", "3.50")
    assert csv_totals(client) == [
        ("account_subtotal", "EUR", "0.82"), ("account_adjustments_total", "EUR", "0.00"),
        ("account_commitment_effective_from", "EUR", "2026-10-01T00:00:00.000000Z"),
        ("account_commitment_minimum", "EUR", "5.00"),
        ("account_commitment_shortfall", "EUR", "4.18"),
        ("account_manual_total", "EUR", "-1.50"), ("account_total", "EUR", "3.50"),
        ("account_unrated_lines", "EUR", "0")]
    # Still in force in November: no usage, the minimum in full.
    assert totals(client, NOV) == [{
        "currency": "EUR", "subtotal": "0.00", "adjustments_total": "0.00",
        "commitment": {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "5.00",
                       "shortfall": "5.00"},
        "manual_total": "0.00", "total": "5.00", "unrated_lines": 0}]
    # The commitment is acme's: beta's statement, and a project's, are as before.
    assert totals(client, account="beta") == [{
        "currency": "EUR", "subtotal": "1.80", "adjustments_total": "0.00",
        "manual_total": "0.00", "total": "1.80", "unrated_lines": 0}]
    assert client.get(f"/v1/statements?cloud=c1&period={OCT}&project_id=p2",
                      headers=READ).get_json()["total"] == "0.72"


def test_usage_above_the_minimum_and_a_later_commitment_ending_it(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    without = {k: v for k, v in statement(client, NOV).get_json().items()
               if k != "computed_at"}
    _committed(client, OCT_START, "0.50")
    # 0.82 is above 0.50: no top-up.
    (total,) = totals(client)
    assert (total["commitment"], total["total"]) == (
        {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "0.50",
         "shortfall": "0.00"}, "0.82")
    # "0" from November ends it: November is as with no commitment at all.
    ended = _committed(client, NOV_START, "0")
    assert ended["minimum"] == "0.00"
    assert "commitment" not in totals(client, NOV)[0]
    assert {k: v for k, v in statement(client, NOV).get_json().items()
            if k != "computed_at"} == without
    assert [r for r, _c, _v in csv_totals(client, NOV)] == [
        "account_subtotal", "account_adjustments_total", "account_manual_total",
        "account_total", "account_unrated_lines"]
    # A later commitment replaces the one before from its instant on: October keeps
    # 0.50, December on is 1.00.
    _committed(client, "2026-12-01T00:00:00Z", "1.00")
    assert totals(client)[0]["commitment"]["minimum"] == "0.50"
    listed = client.get("/v1/accounts/acme/commitments", headers=READ).get_json()["items"]
    assert [(x["effective_from"][:10], x["minimum"]) for x in listed] == [
        ("2026-10-01", "0.50"), ("2026-11-01", "0.00"), ("2026-12-01", "1.00")]
    page = client.get("/v1/accounts/acme/commitments?limit=2", headers=READ).get_json()
    assert [x["minimum"] for x in page["items"]] == ["0.50", "0.00"]
    rest = client.get(f"/v1/accounts/acme/commitments?marker={page['next_marker']}",
                      headers=READ).get_json()
    assert [x["minimum"] for x in rest["items"]] == ["1.00"] and rest["next_marker"] is None


def test_a_commitment_in_another_currency_is_a_total_of_its_own(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """beta's clouds bill in EUR; a commitment of 100 JPY is never added to euros."""
    two_accounts(client, session_factory)
    assert _commit(client, OCT_START, "100.5", "JPY", "beta").status_code == 400
    _committed(client, OCT_START, "100", currency="JPY", account="beta")
    assert totals(client, account="beta") == [
        {"currency": "EUR", "subtotal": "1.80", "adjustments_total": "0.00",
         "manual_total": "0.00", "total": "1.80", "unrated_lines": 0},
        {"currency": "JPY", "subtotal": "0", "adjustments_total": "0",
         "commitment": {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "100",
                        "shortfall": "100"},
         "manual_total": "0", "total": "100", "unrated_lines": 0}]


def test_refusals_store_nothing(client: FlaskClient,
                                session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    cases: list[tuple[str, dict[str, Any], int, str, str]] = [
        ("nobody", {}, 404, "not_found", "no account nobody"),
        ("acme", {"effective_from": "2026-10-15T00:00:00Z"}, 400, "invalid_commitment",
         "not a month's start"),
        ("acme", {"effective_from": "2026-10-01T00:00:01Z"}, 400, "invalid_commitment",
         "not a month's start"),
        ("acme", {"effective_from": "2026-10-01T00:00:00+02:00"}, 400, "invalid_commitment",
         "not a month's start"),
        ("acme", {"effective_from": "2026-10-01"}, 400, "invalid_commitment", "RFC 3339"),
        ("acme", {"effective_from": None}, 400, "invalid_commitment", "RFC 3339"),
        ("acme", {"currency": "eur"}, 400, "invalid_commitment", "ISO 4217"),
        ("acme", {"currency": "XXX"}, 400, "invalid_commitment", "with a minor unit"),
        ("acme", {"currency": 978}, 400, "invalid_commitment", "ISO 4217"),
        ("acme", {"minimum": "-1.00"}, 400, "invalid_commitment", "non-negative"),
        ("acme", {"minimum": 5}, 400, "invalid_commitment", "JSON numbers are refused"),
        ("acme", {"minimum": "ten"}, 400, "invalid_commitment", "non-negative"),
        ("acme", {"minimum": "1.005"}, 400, "invalid_commitment",
         "more decimals than EUR's minor unit (2)"),
        ("acme", {"minimum": ""}, 400, "invalid_commitment", "non-negative"),
        ("acme", {"extra": 1}, 400, "invalid_commitment", "unknown member(s): extra"),
    ]
    base = {"effective_from": OCT_START, "currency": "EUR", "minimum": "5.00"}
    for account, change, status, code, message in cases:
        response = client.post(f"/v1/accounts/{account}/commitments", headers=ADMIN,
                               json={**base, **change})
        error = response.get_json()["error"]
        assert (response.status_code, error["code"]) == (status, code), (change, error)
        assert message in error["message"], (change, error)
    missing = client.post("/v1/accounts/acme/commitments", headers=ADMIN,
                          json={"currency": "EUR", "minimum": "1"})
    assert missing.status_code == 400
    assert client.post("/v1/accounts/acme/commitments", headers=READ,
                       json=base).status_code == 403
    assert client.get("/v1/accounts/acme/commitments", headers=READ).get_json()["items"] == []
    assert "commitment" not in totals(client)[0]
    _committed(client, OCT_START, "5.00")
    again = _commit(client, OCT_START, "6.00")
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "conflict"
    assert "commitments are never edited" in again.get_json()["error"]["message"]
    assert [x["minimum"] for x in client.get("/v1/accounts/acme/commitments",
                                             headers=READ).get_json()["items"]] == ["5.00"]
    assert client.get("/v1/accounts/acme/commitments?marker=bogus",
                      headers=READ).status_code == 400
    assert client.get("/v1/accounts/acme/commitments?colour=red",
                      headers=READ).status_code == 400
    assert client.get("/v1/accounts/nobody/commitments", headers=READ).status_code == 404


def test_a_closed_account_statement_never_changes(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    two_accounts(client, session_factory)
    _committed(client, OCT_START, "5.00")
    assert client.post(f"/v1/periods/c1/{OCT}/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = statement(client)
    document = closed.get_json()
    assert document["status"] == "closed"
    assert document["totals"][0]["commitment"]["shortfall"] == "4.18"
    assert document["totals"][0]["total"] == "5.00"
    # From November on: October answers the same bytes.
    _committed(client, NOV_START, "20.00")
    assert statement(client).get_data() == closed.get_data()
    assert totals(client, NOV)[0]["commitment"]["shortfall"] == "20.00"
    # beta's October is closed too (its one cloud is): a commitment from September,
    # in force in October, would change it: refused, naming the period.
    refused = _commit(client, "2026-09-01T00:00:00Z", "1.00", account="beta")
    error = refused.get_json()["error"]
    assert (refused.status_code, error["code"]) == (409, "period_closed")
    assert "account beta for period 2026-10 is closed" in error["message"]
    assert _commit(client, NOV_START, "1.00", account="beta").status_code == 201
    # November's does not end September's before October: still refused.
    assert _commit(client, "2026-09-01T00:00:00Z", "1.00", account="beta").status_code == 409
    # acme's September one ends at October's own: October is untouched.
    assert _commit(client, "2026-09-01T00:00:00Z", "9.00").status_code == 201
    assert statement(client).get_data() == closed.get_data()

def test_a_commitment_waits_for_the_close_in_flight(pg_migrated_database: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL, two transactions: a commitment asked for while October is being
    closed waits for the close, then is refused: October's account statement was
    closed without it and never changes."""
    document = {"effective_from": OCT_START, "currency": "EUR", "minimum": "5.00"}
    raised, left = add_during_the_close(
        pg_migrated_database, monkeypatch,
        lambda session, now: commitments.add_excluding_closes(session, "acme", document,
                                                              "test", now),
        lambda session: commitments.of_account(session, "acme"), what="the commitment")
    assert isinstance(raised, commitments.CommitmentRefused), raised
    assert "2026-10 is closed" in str(raised)
    assert left == []
