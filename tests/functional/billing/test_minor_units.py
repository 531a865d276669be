"""Amounts follow the currency's ISO 4217 minor units, hand-computed (SQLite and
PostgreSQL): JPY to the yen, KWD to the fils (3 places), per line, in summaries, in a
close and its frozen lines, in the hand-off (the notice's totals, the export in JSON
and CSV), in adjustments and CSV; a period closed when every currency was rounded to
hundredths keeps its hundredths."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import currencies, handoff
from reporting.db.billing_models import BillingPeriod
from tests.functional.billing.history import ACCEPT, SMALL, event, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")


def prices(currency: str, rate: str) -> dict[str, Any]:
    return {"effective_from": "2026-10-01T00:00:00Z", "currency": currency,
            "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": rate}}},
            "state_modifiers": {"instance": {"shutoff": "0.5"}}}


def month() -> list[dict[str, Any]]:
    """p1: inst-a 10 h active then 14 h shut off (half rate); p2: inst-b 3 h."""
    return [
        event("compute.instance.create.end", "inst-a", "2026-10-02T00:00:00Z", state="active",
              size=SMALL),
        event("compute.instance.power_off.end", "inst-a", "2026-10-02T10:00:00Z",
              state="shutoff"),
        event("compute.instance.delete.end", "inst-a", "2026-10-03T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-b", "2026-10-05T00:00:00Z", state="active",
              size=SMALL, project_id="p2"),
        event("compute.instance.delete.end", "inst-b", "2026-10-05T03:00:00Z", project_id=""),
    ]


# The late fact: inst-a was really powered off at 05:00 (5 h active, 19 h shut off).
LATE = ("compute.instance.power_off.end", "inst-a", "2026-10-02T05:00:00Z")

CASES = {
    # JPY, 1.25 an hour.  p1: 10 h = 12.5 -> 12 (half to even), 14 h x 0.625 = 8.75 -> 9;
    # subtotal 21.  p2: 3 h = 3.75 -> 4.  Late: 5 h = 6.25 -> 6, 19 h x 0.625 = 11.875
    # -> 12: 18, so November carries 18 - 21 = -3.
    "JPY": ("1.25", ["12", "9"], "21", "4", "-3"),
    # KWD, 0.01234 an hour.  p1: 10 h = 0.1234 -> 0.123, 14 h x 0.00617 = 0.08638 ->
    # 0.086; subtotal 0.209.  p2: 3 h = 0.03702 -> 0.037.  Late: 5 h = 0.0617 -> 0.062,
    # 19 h x 0.00617 = 0.11723 -> 0.117: 0.179, so November carries -0.030.
    "KWD": ("0.01234", ["0.123", "0.086"], "0.209", "0.037", "-0.030"),
    # EUR as ever: 0.0125 an hour.  p1: 0.125 -> 0.12, 0.0875 -> 0.09; 0.21.  p2:
    # 0.0375 -> 0.04.  Late: 0.0625 -> 0.06, 0.11875 -> 0.12: 0.18, so -0.03.
    "EUR": ("0.0125", ["0.12", "0.09"], "0.21", "0.04", "-0.03"),
}


def _get(client: FlaskClient, query: str, csv_text: bool = False) -> Any:
    headers = {**READ, "Accept": "text/csv"} if csv_text else READ
    response = client.get(f"/v1/statements?{query}", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True) if csv_text else response.get_json()


def _summaries(client: FlaskClient, period: str) -> list[tuple[str, str, str, str]]:
    items = _get(client, f"cloud=c1&period={period}")["items"]
    return [(i["project_id"], i["subtotal"], i["adjustments_total"], i["total"])
            for i in items]


@pytest.mark.parametrize("currency", list(CASES))
def test_amounts_are_rounded_to_the_currencys_minor_unit(
        client: FlaskClient, session_factory: sessionmaker[Session], currency: str) -> None:
    rate, lines, p1, p2, credit = CASES[currency]
    zero = currencies.places(currency)
    nothing = "0" if zero == 0 else "0." + "0" * zero
    assert client.put("/v1/price-lists/default", json=prices(currency, rate),
                      headers=ADMIN).status_code == 201
    seed(session_factory, month())
    open_statement = _get(client, "cloud=c1&period=2026-10&project_id=p1")
    assert [line["amount"] for line in open_statement["lines"]] == lines
    assert (open_statement["currency"], open_statement["subtotal"],
            open_statement["total"]) == (currency, p1, p1)
    assert _summaries(client, "2026-10") == [("p1", p1, nothing, p1), ("p2", p2, nothing, p2)]

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    closed = _get(client, "cloud=c1&period=2026-10&project_id=p1")
    assert [line["amount"] for line in closed["lines"]] == lines
    assert (closed["subtotal"], closed["total"]) == (p1, p1)
    assert _summaries(client, "2026-10") == [("p1", p1, nothing, p1), ("p2", p2, nothing, p2)]
    empty = _get(client, "cloud=c1&period=2026-10&project_id=p-none")
    assert (empty["subtotal"], empty["total"]) == (nothing, nothing)
    rows = list(csv.DictReader(io.StringIO(
        _get(client, "cloud=c1&period=2026-10&project_id=p1", csv_text=True))))
    assert [r["amount"] for r in rows if r["record"] == "line"] == lines
    # The hand-off: the notice's totals and the export, JSON and CSV, alike.
    with session_factory() as session:
        period = session.get(BillingPeriod, ("c1", "2026-10"))
        assert period is not None
        notice = json.loads(handoff.notice_body(session, period))
    assert [(x["project_id"], x["currency"], x["subtotal"], x["adjustments_total"],
             x["total"]) for x in notice["statements"]] == [
        ("p1", currency, p1, nothing, p1), ("p2", currency, p2, nothing, p2)]
    export = client.get("/v1/periods/c1/2026-10/export?format=json", headers=READ)
    assert export.status_code == 200, export.get_data(as_text=True)
    exported = [x["statement"] for x in export.get_json()["statements"]]
    assert [[line["amount"] for line in x["lines"]] for x in exported][0] == lines
    assert [(x["subtotal"], x["total"]) for x in exported] == [(p1, p1), (p2, p2)]
    table = client.get("/v1/periods/c1/2026-10/export?format=csv", headers=READ)
    exported_rows = list(csv.DictReader(io.StringIO(table.get_data(as_text=True))))
    assert [r["amount"] for r in exported_rows
            if r["record"] == "line" and r["project_id"] == "p1"] == lines
    assert [(r["project_id"], r["currency"], r["subtotal"], r["total"])
            for r in exported_rows if r["record"] == "statement"] == [
        ("p1", currency, p1, p1), ("p2", currency, p2, p2)]

    seed(session_factory, [event(*LATE, state="shutoff")])
    november = _get(client, "cloud=c1&period=2026-11&project_id=p1")
    assert [a["amount"] for a in november["adjustments"]] == [credit]
    assert (november["subtotal"], november["adjustments_total"], november["total"]) == (
        nothing, credit, credit)
    assert _summaries(client, "2026-11") == [("p1", nothing, credit, credit)]


def test_a_period_closed_in_hundredths_keeps_them(
        client: FlaskClient, session_factory: sessionmaker[Session],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A JPY month closed before revision 0020 was rounded to hundredths (as every
    currency was; the revision records 2 for it): its frozen lines still render so,
    and a late fact's adjustment is measured in those hundredths."""
    with monkeypatch.context() as before:  # the close as Tally did it before 0020
        before.setattr(currencies, "minor_units", lambda code: 2)
        assert client.put("/v1/price-lists/default", json=prices("JPY", "1.25"),
                          headers=ADMIN).status_code == 201
        seed(session_factory, month())
        assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    with session_factory() as session:
        row = session.get(BillingPeriod, ("c1", "2026-10"))
        assert row is not None and row.minor_units == 2
    closed = _get(client, "cloud=c1&period=2026-10&project_id=p1")
    # 12.5 and 8.75 in hundredths, as billed then
    assert [line["amount"] for line in closed["lines"]] == ["12.50", "8.75"]
    assert (closed["subtotal"], closed["total"]) == ("21.25", "21.25")
    assert _summaries(client, "2026-10") == [("p1", "21.25", "0.00", "21.25"),
                                             ("p2", "3.75", "0.00", "3.75")]
    # November is rounded to the yen; October's correction is 6.25 + 11.88 - 21.25
    seed(session_factory, [event(*LATE, state="shutoff")])
    november = _get(client, "cloud=c1&period=2026-11&project_id=p1")
    assert [a["amount"] for a in november["adjustments"]] == ["-3.12"]
    assert (november["subtotal"], november["total"]) == ("0", "-3.12")

