"""Edges of statements and closes through the API (SQLite and PostgreSQL): amounts
beyond any fixed precision, the CSV as the same data as the JSON, closing an unknown
cloud, the empty statement of a closed period, a period that has not started."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.api.statements import CSV_FIELDS, LINE_FIELDS
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY
from tests.functional.billing.history import ACCEPT, PRICES, SMALL, event, october, seed
from tests.functional.reporting.fixtures import ConfFactory, auth
from tests.functional.reporting.test_unknown_cloud import clouds_file

ADMIN, READ = auth("admin"), auth("read")
# The largest rate and modifier a price list accepts: 12 digits each side of the point.
HUGE = "999999999999.999999999999"


def _cents(value: Fraction) -> str:
    """``value`` rounded half-even to the cent, as text (written apart from Tally's)."""
    whole, rest = divmod(value * 100, 1)
    whole = int(whole)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    return f"{whole // 100}.{whole % 100:02d}"


def _get(client: FlaskClient, query: str, headers: dict[str, str] = READ) -> Any:
    response = client.get(f"/v1/statements?{query}", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_amounts_beyond_any_fixed_precision_are_billed_and_stored_exactly(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    """A valid list whose amounts pass NUMERIC(18,2) and Python's 28 default digits:
    statements, summaries, the close and the booked adjustment keep every digit."""
    prices = {"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
              "rates": {"image": {"per": "gb_hour", "rate": HUGE},
                        "volume": {"per": "gb_hour", "rate": "0.000000000001",
                                   "type_modifiers": {"ssd": HUGE}}},
              "state_modifiers": {"image": {"active": HUGE}, "volume": {"in-use": HUGE}}}
    assert client.put("/v1/price-lists/default", json=prices, headers=ADMIN).status_code == 201
    seed(session_factory, [
        event("image.create.end", "img-1", "2026-10-01T00:00:00Z", resource_type="image",
              state="active", size={"size_gb": 1000}),
        event("image.delete.end", "img-1", "2026-10-02T00:00:00Z", resource_type="image",
              project_id=""),
        event("volume.create.end", "vol-1", "2026-10-03T00:00:00Z", resource_type="volume",
              state="in-use", size={"size_gb": 1, "type": "ssd"}),
        event("volume.delete.end", "vol-1", "2026-10-03T01:00:00Z", resource_type="volume",
              project_id=""),
    ])
    rate = Fraction(HUGE)
    image = _cents(24 * 1000 * rate * rate)  # 24 h x 1000 GB x rate x state modifier
    volume = _cents(1 * Fraction("0.000000000001") * rate * rate)  # 1 GB-h x type x state
    # 2.4e28: more digits than NUMERIC(18,2) or Python's default context hold.
    assert len(image) > 30
    total = _cents(Fraction(image) + Fraction(volume))
    body = _get(client, "cloud=c1&period=2026-10&project_id=p1")
    assert [line["amount"] for line in body["lines"]] == [image, volume]
    # the product of the two modifiers, every digit: (10^12 - 10^-12)^2
    assert body["lines"][1]["modifier"] == "999999999999999999999998.000000000000000000000001"
    assert (body["subtotal"], body["total"]) == (total, total)
    summary = _get(client, "cloud=c1&period=2026-10")["items"]
    assert [(s["project_id"], s["subtotal"]) for s in summary] == [("p1", total)]

    closed = client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200, closed.get_data(as_text=True)
    summary = _get(client, "cloud=c1&period=2026-10")["items"]  # the stored NUMERIC totals
    assert [(s["subtotal"], s["total"]) for s in summary] == [(total, total)]
    # the image really went at 12:00: half of it comes back as an adjustment, booked
    # (stored) by November's close
    seed(session_factory, [event("image.delete.end", "img-1", "2026-10-01T12:00:00Z",
                                 resource_type="image", project_id="")])
    half = _cents(12 * 1000 * rate * rate)
    refund = f"-{_cents(Fraction(image) - Fraction(half))}"
    november = _get(client, "cloud=c1&period=2026-11&project_id=p1")
    assert [a["amount"] for a in november["adjustments"]] == [refund]
    assert client.post("/v1/periods/c1/2026-11/close", headers=ADMIN, json=ACCEPT).status_code == 200
    summary = _get(client, "cloud=c1&period=2026-11")["items"]
    assert [(s["adjustments_total"], s["total"]) for s in summary] == [(refund, refund)]
    assert _get(client, "cloud=c1&period=2026-12&project_id=p1")["adjustments"] == []


def _parsed(text: str) -> dict[str, Any]:
    """A statement back from its CSV, by the layout docs/statements.md gives."""
    rows = list(csv.DictReader(io.StringIO(text)))
    document: dict[str, Any] = {}
    scalars = {"provisional": lambda v: v == "true", "unrated_lines": int}

    def cell(name: str, value: str) -> Any:
        if value == "":
            return None
        if name in ("size", "event_ids"):
            return json.loads(value)
        if name == "zero_rated":
            return {"true": True, "false": False}[value]
        return value

    for row in rows:
        assert set(row) == set(CSV_FIELDS)
        record = row["record"]
        if record == "line":
            document.setdefault("lines", []).append(
                {name: cell(name, row[name]) for name in LINE_FIELDS})
        elif record == "adjustment":
            document.setdefault("adjustments", []).append({
                name: cell(name, row[name])
                for name in ("period", "resource_type", "resource_id", "amount", "event_ids")})
        else:
            assert record not in document
            value = row["value"]
            document[record] = None if value == "" else scalars.get(record, str)(value)
    document.setdefault("lines", [])
    document.setdefault("adjustments", [])
    return document


def _csv(client: FlaskClient, query: str) -> str:
    response = client.get(f"/v1/statements?{query}", headers={**READ, "Accept": "text/csv"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    return response.get_data(as_text=True)


def test_the_csv_is_the_same_data_as_the_json(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN
                          ).status_code == 201
    seed(session_factory, [*october(),
                           event("compute.instance.create.end", "inst-n", "2026-11-02T00:00:00Z",
                                 state="active", size=SMALL),
                           event("compute.instance.delete.end", "inst-n", "2026-11-02T05:00:00Z",
                                 project_id="")])
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    late = event("compute.instance.power_off.end", "inst-a", "2026-10-02T05:00:00Z",
                 state="shutoff")
    seed(session_factory, [late])
    # open: a line and an adjustment (computed_at is the request's instant)
    query = "cloud=c1&period=2026-11&project_id=p1"
    body = _get(client, query)
    parsed = _parsed(_csv(client, query))
    assert body["lines"] and body["adjustments"] and body["unrated_lines"] == 0
    assert {**parsed, "computed_at": None} == {**body, "computed_at": None}
    # closed (stored bytes), with the adjustment booked: every member, exactly
    assert client.post("/v1/periods/c1/2026-11/close", headers=ADMIN, json=ACCEPT).status_code == 200
    text = _csv(client, query)
    body = _get(client, query)
    assert body["status"] == "closed" and body["adjustments"][0]["event_ids"] == [
        late["event_id"]]
    assert _parsed(text) == body
    assert list(_parsed(text)) == list(body)  # in the JSON's order
    records = [row["record"] for row in csv.DictReader(io.StringIO(text))]
    assert records == ["cloud", "project_id", "period", "currency", "status", "provisional",
                       "computed_at", "line", "adjustment", "subtotal", "adjustments_total",
                       "total", "unrated_lines"]
    # an unrated line and a zero-rated one
    for project in ("p3", "p-free"):
        query = f"cloud=c1&period=2026-10&project_id={project}"
        assert _parsed(_csv(client, query)) == _get(client, query)


def test_closing_a_cloud_tally_knows_nothing_about_is_404(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES[0], headers=ADMIN).status_code == 201
    seed(session_factory, october())
    for cloud in ("typo", "default"):
        response = client.post(f"/v1/periods/{cloud}/2026-10/close", headers=ADMIN, json=ACCEPT)
        assert response.status_code == 404, cloud
        error = response.get_json()["error"]
        assert error["code"] == "unknown_cloud" and repr(cloud) in error["message"]
        assert client.get(f"/v1/periods/{cloud}", headers=READ).get_json()["items"] == []
    # nothing was stored: default may still take effect in November, for every cloud
    later = {**PRICES[1], "effective_from": "2026-11-10T00:00:00Z"}
    assert client.put("/v1/price-lists/default", json=later, headers=ADMIN).status_code == 201
    # a cloud with history, or with a price list of its own, closes
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    own = {**PRICES[0], "effective_from": "2026-12-01T00:00:00Z"}
    assert client.put("/v1/price-lists/c9", json=own, headers=ADMIN).status_code == 201
    # ... once something observed it: c9 is known (its own list) but has no history, so
    # its October is not billable and nothing is stored
    unobserved = client.post("/v1/periods/c9/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert unobserved.status_code == 409
    assert unobserved.get_json()["error"]["code"] == "before_history"
    assert client.get("/v1/periods/c9", headers=READ).get_json()["items"] == []


def test_with_a_clouds_file_only_its_clouds_close(
    make_conf: ConfFactory, db_url: str, tmp_path: Path,
    session_factory: sessionmaker[Session],
) -> None:
    seed(session_factory, october())  # history of c1 in the database
    conf = make_conf(db_url, sync={"clouds_file": clouds_file(tmp_path / "c.yaml", "c2")})
    app = create_app(conf)
    try:
        named = app.test_client()
        refused = named.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT)
        assert refused.status_code == 404
        assert "clouds file names no cloud 'c1'" in refused.get_json()["error"]["message"]
        # c2: configured, so known, but nothing observed it yet: not billable (409)
        unobserved = named.post("/v1/periods/c2/2026-10/close", headers=ADMIN, json=ACCEPT)
        assert unobserved.status_code == 409
        assert "nothing has observed the cloud" in unobserved.get_json()["error"]["message"]
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_the_empty_statement_of_a_closed_period_never_changes(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    seed(session_factory, october())  # no price list yet: the close bills in no currency
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    query = "/v1/statements?cloud=c1&period=2026-10&project_id=p-none"
    before = client.get(query, headers=READ).get_data()
    assert json.loads(before)["currency"] is None and json.loads(before)["lines"] == []
    later = {**PRICES[0], "effective_from": "2026-11-01T00:00:00Z"}
    assert client.put("/v1/price-lists/default", json=later, headers=ADMIN).status_code == 201
    assert client.get(query, headers=READ).get_data() == before
    # and a project with lines keeps the currency its close froze as well
    frozen = client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                        headers=READ).get_json()
    assert frozen["currency"] is None


@pytest.mark.parametrize("accept", ["application/json", "text/csv"])
@pytest.mark.parametrize("query", ["project_id=p1&", ""])
def test_a_period_that_has_not_started_has_no_statement(
    client: FlaskClient, session_factory: sessionmaker[Session], query: str, accept: str
) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES[0], headers=ADMIN).status_code == 201
    seed(session_factory, october())
    response = client.get(f"/v1/statements?{query}cloud=c1&period=2999-01",
                          headers={**READ, "Accept": accept})
    assert response.status_code == 409
    error = response.get_json()["error"]
    assert error["code"] == "period_not_started" and "2999-01" in error["message"]
    # the current month has started: its statement answers (provisional)
    current = client.get(f"/v1/statements?{query}cloud=c1&period=2026-10",
                         headers={**READ, "Accept": accept})
    assert current.status_code == 200
