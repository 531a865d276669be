"""Credits and charges booked by hand on an account, through the API on SQLite and
PostgreSQL, amounts computed by hand: a credit, a charge and a reversal on the
statement (JSON and CSV) and in its totals, the listing, the close freezing them, a
reversal booked on a later period, and every refusal storing nothing
(docs/statements.md, "Credits and charges")."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import manual_lines
from tests.functional.billing.close_in_flight import add_during_the_close
from tests.functional.billing.history import ACCEPT, PRICES, october, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")
OCT = "2026-10"


def _setup(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN
                          ).status_code == 201
    seed(factory, october())
    assert client.post("/v1/accounts", headers=ADMIN,
                       json={"account_id": "acme"}).status_code == 201
    # p1 in acme until 05:00 on the 2nd (inst-a's first 5 h: 0.10), p2 all month
    # (inst-b's day: 0.72): acme's October subtotal is 0.82.
    for project, at in (("p1", "2026-09-01T00:00:00Z"), ("p2", "2026-10-01T00:00:00Z")):
        assert client.post("/v1/accounts/acme/memberships", headers=ADMIN, json={
            "cloud": "c1", "project_id": project, "effective_from": at}).status_code == 201
    assert client.post("/v1/accounts", headers=ADMIN,
                       json={"account_id": "beta"}).status_code == 201
    assert client.post("/v1/accounts/beta/memberships", headers=ADMIN, json={
        "cloud": "c1", "project_id": "p1", "effective_from": "2026-10-02T05:00:00Z"}
    ).status_code == 201


def _line(kind: str, amount: str, reason: str, at: str = "2026-10-20T12:00:00Z",
          **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "cloud": "c1", "period": OCT, "amount": amount, "reason": reason,
            "effective_at": at, **extra}


def _book(client: FlaskClient, document: dict[str, Any], account: str = "acme") -> Any:
    return client.post(f"/v1/accounts/{account}/lines", headers=ADMIN, json=document)


def _booked(client: FlaskClient, document: dict[str, Any]) -> dict[str, Any]:
    response = _book(client, document)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def _statement(client: FlaskClient, period: str = OCT, **headers: str) -> Any:
    response = client.get(f"/v1/accounts/acme/statement?period={period}",
                          headers={**READ, **headers})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def _lines(client: FlaskClient, query: str = "") -> list[dict[str, Any]]:
    response = client.get(f"/v1/accounts/acme/lines{query}", headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["items"]  # type: ignore[no-any-return]


def test_a_credit_a_charge_and_a_reversal_on_the_statement(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    credit = _booked(client, _line("credit", "1.50", "outage of 2026-10-07"))
    assert (credit["line"], credit["kind"], credit["amount"], credit["currency"]) == (
        1, "credit", "-1.50", "EUR")
    assert credit["created_by"].startswith("token:") and credit["reversed_by"] is None
    assert credit["effective_at"] == "2026-10-20T12:00:00.000000Z"
    charge = _booked(client, _line("charge", "0.25", "=support hour", project_id="p2"))
    assert (charge["line"], charge["amount"], charge["project_id"]) == (2, "0.25", "p2")
    mistake = _booked(client, _line("charge", "3", "typed on the wrong account"))
    assert mistake["amount"] == "3.00"
    reversal = _booked(client, {"reverses": 3, "reason": "booked on acme by mistake"})
    assert (reversal["line"], reversal["kind"], reversal["amount"], reversal["reverses"],
            reversal["effective_at"], reversal["period"]) == (
        4, "credit", "-3.00", 3, "2026-10-20T12:00:00.000000Z", OCT)

    document = _statement(client).get_json()
    assert [(x["line"], x["kind"], x["amount"], x["project_id"], x["reverses"])
            for x in document["manual_lines"]] == [
        (1, "credit", "-1.50", None, None), (2, "charge", "0.25", "p2", None),
        (3, "charge", "3.00", None, None), (4, "credit", "-3.00", None, 3)]
    # 0.82 of usage; -1.50 + 0.25 + 3.00 - 3.00 = -1.25 by hand: -0.43 in all.
    assert document["totals"] == [{"currency": "EUR", "subtotal": "0.82",
                                   "adjustments_total": "0.00", "manual_total": "-1.25",
                                   "total": "-0.43", "unrated_lines": 0}]
    # The lines are the account's: p2's own statement and beta's are unchanged.
    project = client.get(f"/v1/statements?cloud=c1&period={OCT}&project_id=p2",
                         headers=READ).get_json()
    assert project["total"] == "0.72"
    beta = client.get(f"/v1/accounts/beta/statement?period={OCT}", headers=READ).get_json()
    assert beta["manual_lines"] == [] and beta["totals"][0]["total"] == "1.80"

    rows = list(csv.DictReader(io.StringIO(
        _statement(client, Accept="text/csv").get_data(as_text=True))))
    manual = [(r["line"], r["kind"], r["amount"], r["project_id"], r["reason"], r["reverses"])
              for r in rows if r["record"] == "manual_line"]
    assert manual == [("1", "credit", "-1.50", "", "outage of 2026-10-07", ""),
                      ("2", "charge", "0.25", "p2", "'=support hour", ""),
                      ("3", "charge", "3.00", "", "typed on the wrong account", ""),
                      ("4", "credit", "-3.00", "", "booked on acme by mistake", "3")]
    totals = {r["record"]: r["value"] for r in rows
              if r["record"].startswith("account_") and r["record"] != "account_id"}
    assert totals == {"account_subtotal": "0.82", "account_adjustments_total": "0.00",
                      "account_manual_total": "-1.25", "account_total": "-0.43",
                      "account_unrated_lines": "0"}

    listed = _lines(client)
    assert [(x["line"], x["reversed_by"]) for x in listed] == [
        (1, None), (2, None), (3, 4), (4, None)]
    page = client.get("/v1/accounts/acme/lines?limit=3", headers=READ).get_json()
    assert [x["line"] for x in page["items"]] == [1, 2, 3]
    rest = _lines(client, f"?marker={page['next_marker']}")
    assert [x["line"] for x in rest] == [4]
    assert _lines(client, "?period=2026-11") == [] and _lines(client, "?cloud=c2") == []
    assert [x["line"] for x in _lines(client, f"?cloud=c1&period={OCT}")] == [1, 2, 3, 4]

    # Never edited, never deleted: no request changes a line; a reversal is the way.
    for method, url in (("PUT", "/v1/accounts/acme/lines/1"),
                        ("PATCH", "/v1/accounts/acme/lines/1"),
                        ("DELETE", "/v1/accounts/acme/lines/1"),
                        ("PUT", "/v1/accounts/acme/lines"),
                        ("PATCH", "/v1/accounts/acme/lines"),
                        ("DELETE", "/v1/accounts/acme/lines")):
        refused = client.open(url, method=method, headers=ADMIN,
                              json={"amount": "0.01", "reason": "edited"})
        assert refused.status_code in (404, 405), (method, url, refused.status_code)
    assert _lines(client) == listed


def test_the_close_freezes_the_lines_and_a_later_period_reverses(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    _booked(client, _line("credit", "1.50", "outage"))
    _booked(client, _line("charge", "0.40", "setup fee", project_id="p1",
                          at="2026-10-01T00:00:00Z"))
    before = _statement(client).get_json()
    assert client.post(f"/v1/periods/c1/{OCT}/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _statement(client)
    document = closed.get_json()
    assert (document["status"], document["provisional"]) == ("closed", False)
    assert document["manual_lines"] == before["manual_lines"]
    # 0.82 - 1.50 + 0.40 = -0.28
    assert document["totals"] == before["totals"] and document["totals"][0]["total"] == "-0.28"

    refused = _book(client, _line("charge", "1.00", "late"))
    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "period_closed"
    refused = _book(client, {"reverses": 1, "reason": "undo"})
    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "period_closed"
    # Reversed on November instead: October answers the same bytes.
    missing_at = _book(client, {"reverses": 1, "reason": "undo", "period": "2026-11"})
    assert missing_at.status_code == 400
    reversal = _booked(client, {"reverses": 1, "reason": "the outage was ours to bear",
                                "period": "2026-11", "effective_at": "2026-11-03T00:00:00Z"})
    assert (reversal["line"], reversal["kind"], reversal["amount"], reversal["period"]) == (
        3, "charge", "1.50", "2026-11")
    assert _statement(client).get_data() == closed.get_data()
    november = _statement(client, "2026-11").get_json()
    assert [(x["line"], x["reverses"]) for x in november["manual_lines"]] == [(3, 1)]
    assert november["status"] == "open"
    assert november["totals"] == [{"currency": "EUR", "subtotal": "0.00",
                                   "adjustments_total": "0.00", "manual_total": "1.50",
                                   "total": "1.50", "unrated_lines": 0}]
    again = _book(client, {"reverses": 1, "reason": "twice", "period": "2026-11",
                           "effective_at": "2026-11-04T00:00:00Z"})
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "already_reversed"
    twice = _book(client, {"reverses": 3, "reason": "undo the undo"})
    assert twice.status_code == 409
    assert twice.get_json()["error"]["code"] == "reversal_of_reversal"
    assert [(x["line"], x["reversed_by"]) for x in _lines(client)] == [
        (1, 3), (2, None), (3, None)]
    # A reversal is booked on its line's period or a later one, never an earlier one.
    _booked(client, {**_line("charge", "1.00", "r"), "period": "2026-11",
                     "effective_at": "2026-11-05T00:00:00Z"})
    earlier = _book(client, {"reverses": 4, "reason": "r", "period": "2026-10",
                             "effective_at": "2026-10-03T00:00:00Z"})
    assert earlier.status_code == 400 and "before line 4's period" in earlier.get_data(
        as_text=True)


def test_refusals_store_nothing(client: FlaskClient,
                                session_factory: sessionmaker[Session]) -> None:
    _setup(client, session_factory)
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        ("nobody", _line("credit", "1.00", "r"), 404, "not_found"),
        ("acme", {**_line("credit", "1.00", "r"), "cloud": "c9"}, 404, "unknown_cloud"),
        ("acme", _line("credit", "1.00", "r", period="2026-09",
                       at="2026-09-10T00:00:00Z"), 409, "before_history"),
        ("acme", _line("credit", "1.00", "r", period="2027-01",
                       at="2027-01-10T00:00:00Z"), 409, "period_not_started"),
        ("acme", _line("credit", "0", "r"), 400, "invalid_line"),
        ("acme", _line("credit", "0.00", "r"), 400, "invalid_line"),
        ("acme", _line("credit", "-1.00", "r"), 400, "invalid_line"),
        ("acme", _line("credit", "1.005", "r"), 400, "invalid_line"),
        ("acme", _line("credit", "ten", "r"), 400, "invalid_line"),
        ("acme", {**_line("credit", "1", "r"), "amount": 1.5}, 400, "invalid_line"),
        ("acme", {k: v for k, v in _line("credit", "1.00", "r").items() if k != "reason"},
         400, "invalid_line"),
        ("acme", _line("credit", "1.00", "   "), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "x" * 1001), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", at="2026-11-01T00:00:00Z"), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", at="2026-09-30T23:59:59Z"), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", at="yesterday"), 400, "invalid_line"),
        ("acme", _line("refund", "1.00", "r"), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", extra=1), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", period="2026-13"), 400, "invalid_line"),
        ("acme", _line("credit", "1.00", "r", project_id="p-free"), 409, "not_a_member"),
        ("acme", {"reverses": 7, "reason": "r"}, 409, "unknown_line"),
        ("acme", {"reverses": "1", "reason": "r"}, 400, "invalid_line"),
        # Past the line numbers' 32-bit column, and past 64 bits (SQLite's driver
        # cannot bind that: once a 500).
        ("acme", {"reverses": 2**31, "reason": "r"}, 400, "invalid_line"),
        ("acme", {"reverses": 29819206801143402496, "reason": "r"}, 400, "invalid_line"),
        ("acme", {"reverses": 1, "reason": "r", "amount": "1.00"}, 400, "invalid_line"),
    ]
    for account, document, status, code in cases:
        response = _book(client, document, account)
        assert (response.status_code, response.get_json()["error"]["code"]) == (
            status, code), (document, response.get_json())
    assert client.post("/v1/accounts/acme/lines", headers=READ,
                       json=_line("credit", "1.00", "r")).status_code == 403
    assert _lines(client) == []
    assert _statement(client).get_json()["manual_lines"] == []
    # The reasons are clear: the closed period, the currency's decimals.
    decimals = _book(client, _line("credit", "1.005", "r")).get_json()["error"]["message"]
    assert "more decimals than EUR's minor unit (2)" in decimals
    assert client.get("/v1/accounts/acme/lines?marker=bogus", headers=READ).status_code == 400
    assert client.get("/v1/accounts/acme/lines?colour=red", headers=READ).status_code == 400
    assert client.get("/v1/accounts/nobody/lines", headers=READ).status_code == 404



def test_a_line_in_yen_has_no_decimals(client: FlaskClient,
                                       session_factory: sessionmaker[Session]) -> None:
    """Priced in JPY at 1.25 an hour: p1's inst-a 10 h active = 12.5 -> 12 (half to even)
    and 14 h shut off at half rate = 8.75 -> 9, 21 yen; a credit of 12 yen leaves 9."""
    assert client.put("/v1/price-lists/default", headers=ADMIN, json={
        "effective_from": "2026-10-01T00:00:00Z", "currency": "JPY",
        "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "1.25"}}},
        "state_modifiers": {"instance": {"shutoff": "0.5"}}}).status_code == 201
    seed(session_factory, october()[:3])
    assert client.post("/v1/accounts", headers=ADMIN,
                       json={"account_id": "acme"}).status_code == 201
    assert client.post("/v1/accounts/acme/memberships", headers=ADMIN, json={
        "cloud": "c1", "project_id": "p1", "effective_from": "2026-10-01T00:00:00Z"}
    ).status_code == 201
    refused = _book(client, _line("credit", "1.5", "r"))
    assert refused.status_code == 400
    assert "more decimals than JPY's minor unit (0)" in refused.get_json()["error"]["message"]
    booked = _booked(client, _line("credit", "12", "discount"))
    assert (booked["amount"], booked["currency"]) == ("-12", "JPY")
    assert _statement(client).get_json()["totals"] == [
        {"currency": "JPY", "subtotal": "21", "adjustments_total": "0",
         "manual_total": "-12", "total": "9", "unrated_lines": 0}]


def test_a_booking_waits_for_the_close_in_flight(pg_migrated_database: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL, two transactions: a line asked for while October is being closed
    waits for the close, then is refused; nothing slips in beside the frozen month."""
    raised, left = add_during_the_close(
        pg_migrated_database, monkeypatch,
        lambda session, now: manual_lines.book_excluding_closes(
            session, "acme", _line("credit", "1.00", "during the close"), "test", now),
        lambda session: manual_lines.of_period(session, "acme", OCT), holding_p2=False,
        what="the booking")
    assert isinstance(raised, manual_lines.LineRefused), raised
    assert "is closed" in str(raised)
    assert left == []
