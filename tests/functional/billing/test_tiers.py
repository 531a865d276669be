"""Tiers through the API (SQLite and PostgreSQL), hand-computed: a project's period
quantity of volumes priced graduated and by volume (type-wide, and a volume type's
own tiers beside them); the summaries (PostgreSQL: the
set-based rating of the lines, the tier lines added), the close, and late facts'
adjustments of the tier line on the next open periods; a bad tier is refused."""

from __future__ import annotations

import copy
import csv as csvlib
import io
import json
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, SMALL, event, seed
from tests.functional.billing.history import statement_of as _statement
from tests.functional.billing.history import summaries_of as _summaries
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.query_fixtures import assert_contract
from tests.unit.billing.test_rating import V1
from tests.unit.billing.test_tiers import GRADUATED, VOLUME

ADMIN, READ = auth("admin"), auth("read")


def _prices(volume: dict[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(V1), "effective_from": "2026-09-01T00:00:00Z",
            "rates": {**copy.deepcopy(V1["rates"]), "volume": copy.deepcopy(volume)}}


def _volume(rid: str, day: int, hours: int, size_gb: int, project: str = "p1",
            volume_type: str = "standard") -> list[dict[str, Any]]:
    return [event("volume.create.end", rid, f"2026-10-{day:02d}T00:00:00Z",
                  resource_type="volume", project_id=project, state="available",
                  size={"size_gb": size_gb, "type": volume_type}),
            event("volume.delete.end", rid, f"2026-10-{day:02d}T{hours:02d}:00:00Z",
                  resource_type="volume", project_id="")]


def _adjustments(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(a["period"], a["resource_type"], a["resource_id"], a["amount"])
            for a in document["adjustments"]]


def test_graduated_tiers_close_and_late_facts_adjust_the_tier_line(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=_prices(GRADUATED),
                      headers=ADMIN).status_code == 201
    # p1: 50 GB for 20 h (1000 GB-h, 0.20 at the first tier's rate) and 25 GB for 20 h
    # (500 GB-h, 0.10): Q = 1500 = 500 x 0.0002 + 1000 x 0.0001 = 0.20, tier line -0.10.
    # p2: 10 GB for 10 h, 100 GB-h in the first tier: 0.02, tier line 0.00
    seed(session_factory, [*_volume("vol-a", 2, 20, 50), *_volume("vol-b", 5, 20, 25),
                           *_volume("vol-c", 6, 10, 10, project="p2")])
    open_p1 = _statement(client, "p1")
    url = "/v1/statements?cloud=c1&period=2026-10&project_id=p1"
    assert_contract(app, "GET", url, client.get(url, headers=READ))  # "tiers" is documented
    assert [x["amount"] for x in open_p1["lines"]] == ["0.20", "0.10"]
    (tier,) = open_p1["tiers"]
    assert (tier["resource_type"], tier["quantity"], tier["amount_tiered_unrounded"],
            tier["amount"]) == ("volume", "1500", "0.2", "-0.10")
    assert [(x["up_to"], x["quantity"]) for x in tier["tiers"]] == [("500", "500"),
                                                                    (None, "1000")]
    assert open_p1["subtotal"] == "0.20"
    assert _statement(client, "p2")["tiers"][0]["amount"] == "0.00"
    assert _summaries(client) == [("p1", "0.20", "0.20"), ("p2", "0.02", "0.02")]
    csv = client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                     headers={**READ, "Accept": "text/csv"}).get_data(as_text=True)
    (row,) = [r for r in csvlib.DictReader(io.StringIO(csv)) if r["record"] == "tier"]
    assert json.loads(row["value"]) == tier
    assert (row["resource_type"], row["price_list_version"], row["quantity"], row["unit"],
            row["rate"], row["amount_unrounded"], row["amount"], row["resource_id"]) == (
        "volume", "default/1", "1500", "gb_hour", "0.0002", "-0.1", "-0.10", "")

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _statement(client, "p1")
    assert closed["status"] == "closed"
    assert (closed["lines"], closed["tiers"], closed["subtotal"]) == (
        open_p1["lines"], open_p1["tiers"], "0.20")
    assert _summaries(client) == [("p1", "0.20", "0.20"), ("p2", "0.02", "0.02")]

    # a late 25 GB for 20 h on 10-07: Q = 2000 = 0.10 + 0.15 = 0.25; vol-d's line 0.10,
    # the tier line -0.15 instead of the -0.10 frozen: -0.05 on November
    seed(session_factory, _volume("vol-d", 7, 20, 25))
    november = _statement(client, "p1", "2026-11")
    assert _adjustments(november) == [("2026-10", "volume", "vol-d", "0.10"),
                                      ("2026-10", "volume", "default/1", "-0.05")]
    assert november["adjustments"][1]["event_ids"]
    assert november["total"] == "0.05"
    assert _summaries(client, "2026-11") == [("p1", "0.00", "0.05")]
    assert _statement(client, "p2", "2026-11")["adjustments"] == []

    # closing November books them; one more late 500 GB-h: Q = 2500 = 0.10 + 0.20 =
    # 0.30, the tier line -0.20 against -0.10 frozen and -0.05 booked: -0.05 on December
    assert client.post("/v1/periods/c1/2026-11/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    seed(session_factory, _volume("vol-e", 8, 20, 25))
    december = _statement(client, "p1", "2026-12")
    assert _adjustments(december) == [("2026-10", "volume", "vol-e", "0.10"),
                                      ("2026-10", "volume", "default/1", "-0.05")]
    # frozen 0.20 + booked 0.05 + pending 0.05 = 0.30, October recomputed
    assert _statement(client, "p1", "2026-11")["adjustments_total"] == "0.05"


def test_volume_tiers_price_the_whole_quantity_at_the_tier_reached(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=_prices(VOLUME),
                      headers=ADMIN).status_code == 201
    # p1: 1500 GB-h reach the second tier: 1500 x 0.0001 = 0.15 (lines 0.30, tier -0.15);
    # p2: 500 GB-h stay in the first (up_to inclusive): 0.10, tier line 0.00
    seed(session_factory, [*_volume("vol-a", 2, 20, 50), *_volume("vol-b", 5, 20, 25),
                           *_volume("vol-c", 6, 20, 25, project="p2")])
    assert _statement(client, "p1")["tiers"][0]["amount"] == "-0.15"
    assert _summaries(client) == [("p1", "0.15", "0.15"), ("p2", "0.10", "0.10")]
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    assert _summaries(client) == [("p1", "0.15", "0.15"), ("p2", "0.10", "0.10")]
    # p2 moves up a tier by a late 10 h of 10 GB: 600 GB-h x 0.0001 = 0.06; its lines
    # 0.10 + 0.02, the tier line -0.06 against 0.00 frozen
    seed(session_factory, _volume("vol-f", 9, 10, 10, project="p2"))
    assert _adjustments(_statement(client, "p2", "2026-11")) == [
        ("2026-10", "volume", "vol-f", "0.02"), ("2026-10", "volume", "default/1", "-0.06")]
    assert _summaries(client, "2026-11") == [("p2", "0.00", "-0.04")]


def test_a_bad_tier_is_refused_naming_it(client: FlaskClient) -> None:
    volume = {**GRADUATED, "tiers": [{"up_to": "500", "rate": "0.0002"},
                                     {"up_to": "100", "rate": "0.0001"},
                                     {"up_to": None, "rate": "0"}]}
    response = client.put("/v1/price-lists/default", json=_prices(volume), headers=ADMIN)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert (error["code"], error["message"]) == (
        "invalid_price_list",
        "rates.volume.tiers[1].up_to must be greater than rates.volume.tiers[0].up_to (500)")


def test_the_account_statement_carries_the_tier_line_where_the_period_begins(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=_prices(GRADUATED),
                      headers=ADMIN).status_code == 201
    seed(session_factory, [*_volume("vol-a", 2, 20, 50), *_volume("vol-b", 5, 20, 25),
                           *_volume("vol-c", 6, 10, 10, project="p2")])
    assert client.post("/v1/accounts", json={"account_id": "acme"},
                       headers=ADMIN).status_code == 201
    for project, since in (("p1", "2026-09-01T00:00:00Z"), ("p2", "2026-10-04T00:00:00Z")):
        assert client.post("/v1/accounts/acme/memberships", headers=ADMIN, json={
            "cloud": "c1", "project_id": project, "effective_from": since}).status_code == 201
    url = "/v1/accounts/acme/statement?period=2026-10"
    for period_closed in (False, True):
        body = assert_contract(app, "GET", url, client.get(url, headers=READ))
        # p1 belongs from before the period: its section has the tier line (-0.10) and
        # 0.20; p2 joined on the 4th: its tier line (0.00) stays on its own statement
        p1, p2 = body["projects"]
        assert (p1["project_id"], p1["tiers"], p1["subtotal"]) == (
            "p1", _statement(client, "p1")["tiers"], "0.20")
        assert (p2["project_id"], "tiers" in p2, p2["subtotal"]) == ("p2", False, "0.02")
        assert body["totals"][0]["total"] == "0.22"
        csv = client.get(url, headers={**READ, "Accept": "text/csv"}).get_data(as_text=True)
        (row,) = [r for r in csvlib.DictReader(io.StringIO(csv)) if r["record"] == "tier"]
        assert (row["project_id"], row["amount"]) == ("p1", "-0.10")
        if not period_closed:
            assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                               json=ACCEPT).status_code == 200


def test_a_flavors_tiers_and_a_late_power_off(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    prices = _prices(V1["rates"]["volume"])
    prices["rates"]["instance"] = {"per": "hour", "by_flavor": {"m1.small": {
        "mode": "graduated", "tiers": [{"up_to": "100", "rate": "0.020"},
                                       {"up_to": None, "rate": "0.010"}]}}}
    assert client.put("/v1/price-lists/default", json=prices, headers=ADMIN).status_code == 201
    # inst-a 104 h and inst-b 24 h of m1.small: 128 h = 100 x 0.020 + 28 x 0.010 = 2.28
    # (lines 2.08 + 0.48, tier line -0.28)
    seed(session_factory, [
        event("compute.instance.create.end", "inst-a", "2026-10-02T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-a", "2026-10-06T08:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-b", "2026-10-10T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-b", "2026-10-11T00:00:00Z", project_id="")])
    october = _statement(client, "p1")
    assert [(x["flavor"], x["quantity"], x["amount"]) for x in october["tiers"]] == [
        ("m1.small", "128", "-0.28")]
    assert october["subtotal"] == "2.28"
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    # a late power-off of inst-a at 10-04: 48 h active (0.96) and 56 h shut off at half
    # rate (0.56); Q stays 128 but W = 48 + 28 + 24 = 100: owed 2.28 x 100 / 128 =
    # 1.78125, the lines 2.00, the tier line -0.21875 -> -0.22 (against -0.28 frozen);
    # 1.78 recomputed = 2.28 - 0.56 + 0.06
    seed(session_factory, [event("compute.instance.power_off.end", "inst-a",
                                 "2026-10-04T00:00:00Z", state="shutoff")])
    november = _statement(client, "p1", "2026-11")
    assert _adjustments(november) == [("2026-10", "instance", "inst-a", "-0.56"),
                                      ("2026-10", "instance", "default/1", "0.06")]
    assert _summaries(client, "2026-11") == [("p1", "0.00", "-0.50")]


def test_a_volume_types_tiers_are_a_group_of_their_own(
        app: Flask, client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    bulk = {"mode": "graduated", "tiers": [{"up_to": "1000", "rate": "0.0001"},
                                           {"up_to": None, "rate": "0.00005"}]}
    assert client.put("/v1/price-lists/default", headers=ADMIN, json=_prices(
        {**GRADUATED, "by_volume_type": {"bulk": bulk}})).status_code == 201
    # p1: vol-a standard 1000 GB-h in the type-wide group: 500 x 0.0002 + 500 x 0.0001 =
    # 0.15 (the line 0.20, tier line -0.05); vol-b and vol-c bulk, 1000 + 500 GB-h: Q =
    # 1500 = 1000 x 0.0001 + 500 x 0.00005 = 0.125 (the lines 0.10 + 0.05, tier line
    # -0.025 -> -0.02, half-even); subtotal 0.35 - 0.05 - 0.02 = 0.28
    seed(session_factory, [*_volume("vol-a", 2, 20, 50),
                           *_volume("vol-b", 3, 20, 50, volume_type="bulk"),
                           *_volume("vol-c", 4, 20, 25, volume_type="bulk")])
    url = "/v1/statements?cloud=c1&period=2026-10&project_id=p1"
    open_p1 = assert_contract(app, "GET", url, client.get(url, headers=READ))
    assert [x["amount"] for x in open_p1["lines"]] == ["0.20", "0.10", "0.05"]
    assert [(x.get("volume_type"), x["quantity"], x["amount_unrounded"], x["amount"])
            for x in open_p1["tiers"]] == [(None, "1000", "-0.05", "-0.05"),
                                           ("bulk", "1500", "-0.025", "-0.02")]
    assert "volume_type" not in open_p1["tiers"][0]
    assert open_p1["subtotal"] == "0.28"
    assert _summaries(client) == [("p1", "0.28", "0.28")]
    csv = client.get(url, headers={**READ, "Accept": "text/csv"}).get_data(as_text=True)
    rows = [r for r in csvlib.DictReader(io.StringIO(csv)) if r["record"] == "tier"]
    assert [json.loads(row["value"]) for row in rows] == open_p1["tiers"]
    assert [row["amount"] for row in rows] == ["-0.05", "-0.02"]

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    closed = _statement(client, "p1")
    assert (closed["status"], closed["tiers"], closed["subtotal"]) == (
        "closed", open_p1["tiers"], "0.28")
    assert _summaries(client) == [("p1", "0.28", "0.28")]

    # late: vol-d bulk 1000 GB-h makes the bulk group 2500 GB-h = 0.10 + 0.075 = 0.175
    # (lines 0.25, tier line -0.075 -> -0.08 against -0.02 frozen: -0.06); vol-e
    # standard 500 GB-h makes the type-wide 1500 GB-h = 0.20 (lines 0.30, tier line
    # -0.10 against -0.05 frozen: -0.05); each adjusted under its own name
    seed(session_factory, [*_volume("vol-d", 7, 20, 50, volume_type="bulk"),
                           *_volume("vol-e", 8, 20, 25)])
    url = "/v1/statements?cloud=c1&period=2026-11&project_id=p1"
    november = assert_contract(app, "GET", url, client.get(url, headers=READ))
    assert _adjustments(november) == [("2026-10", "volume", "vol-d", "0.10"),
                                      ("2026-10", "volume", "vol-e", "0.10"),
                                      ("2026-10", "volume", "default/1", "-0.05"),
                                      ("2026-10", "volume", "default/1[bulk]", "-0.06")]
    assert all(a["event_ids"] for a in november["adjustments"])
    assert _summaries(client, "2026-11") == [("p1", "0.00", "0.09")]

    # closing November books them; a late bulk 500 GB-h: 3000 GB-h = 0.10 + 0.10 = 0.20
    # (lines 0.30, tier line -0.10 against -0.02 frozen and -0.06 booked: -0.02), the
    # type-wide group untouched
    assert client.post("/v1/periods/c1/2026-11/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    seed(session_factory, _volume("vol-f", 9, 20, 25, volume_type="bulk"))
    assert _adjustments(_statement(client, "p1", "2026-12")) == [
        ("2026-10", "volume", "vol-f", "0.05"), ("2026-10", "volume", "default/1[bulk]", "-0.02")]
    assert _summaries(client, "2026-12") == [("p1", "0.00", "0.03")]


def test_a_volume_type_with_a_modifier_and_its_own_rate_is_refused(client: FlaskClient) -> None:
    volume = {**GRADUATED, "by_volume_type": {"ssd": "0.0003"}}
    response = client.put("/v1/price-lists/default", json=_prices(volume), headers=ADMIN)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"].startswith(
        "rates.volume.type_modifiers.ssd and rates.volume.by_volume_type.ssd both price "
        "volume type ssd: give one")
