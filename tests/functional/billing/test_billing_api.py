"""Price lists, statements, closing and adjustments through the API (SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import billing_metrics
from tests.functional.billing.history import ACCEPT, PRICES, event, october, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")


@pytest.fixture
def billed(client: FlaskClient, session_factory: sessionmaker[Session]) -> FlaskClient:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN).status_code == 201
    seed(session_factory, october())
    return client


def statement(client: FlaskClient, project: str, period: str = "2026-10") -> dict[str, Any]:
    response = client.get(f"/v1/statements?cloud=c1&period={period}&project_id={project}",
                          headers=READ)
    assert response.status_code == 200, response.get_json()
    return response.get_json()  # type: ignore[no-any-return]


def test_price_lists_are_versioned(client: FlaskClient) -> None:
    first = client.put("/v1/price-lists/default", json=PRICES[0], headers=ADMIN)
    assert first.status_code == 201 and first.get_json()["version"] == "default/1"
    assert first.get_json()["created_by"].startswith("token:")
    assert client.put("/v1/price-lists/default", json=PRICES[1], headers=ADMIN).status_code == 201
    listed = client.get("/v1/price-lists/default", headers=READ).get_json()
    assert [v["version"] for v in listed["items"]] == ["default/1", "default/2"]
    assert listed["items"][1]["document"] == PRICES[1]
    again = client.put("/v1/price-lists/default", json=PRICES[1], headers=ADMIN)
    assert again.status_code == 409 and "never edited" in again.get_json()["error"]["message"]
    assert client.put("/v1/price-lists/default", json=PRICES[0], headers=READ).status_code == 403
    assert client.get("/v1/price-lists/default").status_code == 401


@pytest.mark.parametrize(("change", "reason"), [
    ({"currency": "euro"}, "currency must be an ISO 4217 code"),
    ({"currency": "USD"}, "currency USD differs from EUR"),
    ({"rates": {"image": {"per": "gb_hour", "rate": 0.5}}}, "must be a non-negative decimal string"),
    ({"extra": 1}, "unknown member(s): extra"),
])
def test_an_invalid_price_list_is_400_with_the_reason(
    client: FlaskClient, change: dict[str, Any], reason: str
) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES[0], headers=ADMIN).status_code == 201
    document = {**copy.deepcopy(PRICES[0]), "effective_from": "2026-12-01T00:00:00Z", **change}
    response = client.put("/v1/price-lists/default", json=document, headers=ADMIN)
    assert response.status_code == 400
    assert reason in response.get_json()["error"]["message"]
    assert client.put("/v1/price-lists/default", data="[1]", headers=ADMIN,
                      content_type="application/json").status_code == 400


def test_summaries_are_paginated(billed: FlaskClient) -> None:
    seen, marker = [], None
    while True:
        query = "/v1/statements?cloud=c1&period=2026-10&limit=2" + (
            f"&marker={marker}" if marker else "")
        page = billed.get(query, headers=READ).get_json()
        seen.extend(page["items"])
        marker = page["next_marker"]
        if marker is None:
            break
    assert [(s["project_id"], s["total"], s["unrated_lines"]) for s in seen] == [
        ("p-free", "0.00", 0), ("p1", "1.90", 0), ("p2", "0.72", 0), ("p3", "0.00", 1)]


@pytest.mark.parametrize("query", [
    "period=2026-10", "cloud=c1", "cloud=c1&period=2026-13", "cloud=c1&period=26-10",
    "cloud=c1&period=2026-10&project=p1", "cloud=c1&period=2026-10&project_id=p1&limit=5",
])
def test_bad_statement_requests(billed: FlaskClient, query: str) -> None:
    response = billed.get(f"/v1/statements?{query}", headers=READ)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "bad_request"


def billed_amount(cloud: str, currency: str) -> float:
    value = billing_metrics.CLOSED_BILLED_AMOUNT.labels(cloud=cloud, currency=currency)
    return float(value._value.get())


def test_closing_freezes_and_late_facts_become_adjustments(
    billed: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    assert billed.post("/v1/periods/c1/2026-10/close", headers=READ).status_code == 403
    billed_before = billed_amount("c1", "EUR")
    closed = billed.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200
    # October bills 1.90 + 0.72 (p1, p2); the zero-rated and unrated projects 0.
    assert billed_amount("c1", "EUR") - billed_before == pytest.approx(2.62)
    row = closed.get_json()
    assert row["status"] == "closed" and row["closed_by"].startswith("token:")
    assert row["cutoff_seq"] > 0
    # what it accepted: p3's unrated line, and the history beginning at the first
    # notification (inst-a's create, 10-02)
    assert (row["accepted_unrated_lines"], row["accepted_partial_history_from"]) == (
        1, "2026-10-02T00:00:00.000000Z")
    again = billed.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).get_json()
    assert again == row
    frozen = billed.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                        headers=READ).get_data()
    assert json.loads(frozen)["status"] == "closed" and json.loads(frozen)["provisional"] is False

    # inst-a really stopped at 05:00, not 10:00: 5 h active (0.10) + 19 h half rate (0.19)
    late = event("compute.instance.power_off.end", "inst-a", "2026-10-02T05:00:00Z",
                 state="shutoff")
    seed(session_factory, [late])
    assert billed.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                      headers=READ).get_data() == frozen
    november = statement(billed, "p1", "2026-11")
    assert november["adjustments"] == [{"period": "2026-10", "resource_type": "instance",
                                        "resource_id": "inst-a", "amount": "-0.05",
                                        "event_ids": [late["event_id"]]}]
    assert (november["subtotal"], november["adjustments_total"], november["total"]) == (
        "0.00", "-0.05", "-0.05")

    # closing November books it; a later fact is the next adjustment, on December
    assert billed.post("/v1/periods/c1/2026-11/close", headers=ADMIN, json=ACCEPT).status_code == 200
    booked = billed.get("/v1/statements?cloud=c1&period=2026-11&project_id=p1",
                        headers=READ).get_data()
    assert json.loads(booked)["adjustments"] == november["adjustments"]
    later = event("compute.instance.delete.end", "inst-a", "2026-10-02T20:00:00Z",
                  project_id="")
    seed(session_factory, [later])
    assert billed.get("/v1/statements?cloud=c1&period=2026-11&project_id=p1",
                      headers=READ).get_data() == booked
    december = statement(billed, "p1", "2026-12")
    # shutoff now lasts 15 h (0.15) instead of 19 h (0.19)
    assert [(a["period"], a["amount"], a["event_ids"]) for a in december["adjustments"]] == [
        ("2026-10", "-0.04", [later["event_id"]])]
    summary = billed.get("/v1/statements?cloud=c1&period=2026-12", headers=READ).get_json()
    assert summary["items"] == [{"project_id": "p1", "subtotal": "0.00",
                                 "adjustments_total": "-0.04", "total": "-0.04",
                                 "unrated_lines": 0, "number": None}]
    metrics = billed.get("/metrics").get_data(as_text=True)
    for name in ('tally_periods_closed_total{cloud="c1"}',
                 'tally_adjustments_booked_total{cloud="c1"}',
                 'tally_adjustments_booked_amount_total{cloud="c1",direction="credit"}',
                 'tally_statements_computed_total{cloud="c1",kind="closed"}',
                 'tally_statements_computed_total{cloud="c1",kind="summary"}'):
        assert name in metrics
    assert 'tally_closed_billed_amount_total{cloud="c1",currency="EUR"}' in metrics


def test_periods_and_bad_closes(billed: FlaskClient) -> None:
    unfinished = billed.post("/v1/periods/c1/2999-01/close", headers=ADMIN, json=ACCEPT)
    assert unfinished.status_code == 409
    assert unfinished.get_json()["error"]["code"] == "period_not_ended"
    assert billed.post("/v1/periods/c1/2026-1/close", headers=ADMIN, json=ACCEPT).status_code == 400
    assert billed.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    listed = billed.get("/v1/periods/c1", headers=READ).get_json()
    by_name = {p["period"]: p for p in listed["items"]}
    assert by_name["2026-10"]["status"] == "closed" and by_name["2026-10"]["ended"] is True
    assert by_name["2026-11"]["status"] == "open" and by_name["2026-11"]["closed_at"] is None
    assert listed["items"][-1]["period"] == "2026-10"
    page = billed.get("/v1/periods/c1?limit=1", headers=READ).get_json()
    rest = billed.get(f"/v1/periods/c1?marker={page['next_marker']}", headers=READ).get_json()
    assert [p["period"] for p in page["items"] + rest["items"]] == [
        p["period"] for p in listed["items"]]
    # a version may not take effect inside a closed period
    inside = {**PRICES[1], "effective_from": "2026-10-20T00:00:00Z"}
    response = billed.put("/v1/price-lists/default", json=inside, headers=ADMIN)
    assert response.status_code == 409 and "closed period 2026-10" in response.get_json()[
        "error"]["message"]
