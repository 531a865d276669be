"""A project's dated terms through the API (SQLite and PostgreSQL): its own rate and
a discount from their dates, hand-computed; the summaries (PostgreSQL: the set-based
rating), the close and a late fact's adjustment price it the same way; an invalid
term is refused with its reason."""

from __future__ import annotations

import copy
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, SMALL, event, seed
from tests.functional.billing.history import statement_of as _statement
from tests.functional.billing.history import summaries_of as _summaries
from tests.functional.reporting.fixtures import auth
from tests.unit.billing.test_project_terms import TERMS
from tests.unit.billing.test_rating import V1

ADMIN, READ = auth("admin"), auth("read")
PRICES = {**copy.deepcopy(V1), "effective_from": "2026-09-01T00:00:00Z",
          "project_terms": copy.deepcopy(TERMS)}


def test_terms_price_their_project_from_their_dates(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    seed(session_factory, [
        event("compute.instance.create.end", "inst-big", "2026-10-08T00:00:00Z",
              project_id="p-big", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-big", "2026-10-22T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-1", "2026-10-08T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-1", "2026-10-22T00:00:00Z", project_id=""),
    ])
    big = _statement(client, "p-big")
    assert [(x["start"][:10], x["rate"], x["modifier"], x["amount"]) for x in big["lines"]] == [
        ("2026-10-08", "0.020", "1", "0.96"),  # 48 h x 0.020
        ("2026-10-10", "0.015", "0.90", "3.24"),  # 240 h x 0.015 x 0.90
        ("2026-10-20", "0.020", "0.875", "0.84")]  # 48 h x 0.020 x 0.875
    assert big["total"] == "5.04"
    # 336 h x 0.020 = 6.72, in three lines cut at p-big's dates
    assert _statement(client, "p1")["total"] == "6.72"
    assert _summaries(client) == [("p-big", "5.04", "5.04"), ("p1", "6.72", "6.72")]

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    frozen = _statement(client, "p-big")
    assert frozen["status"] == "closed" and frozen["lines"] == big["lines"]
    assert _summaries(client) == [("p-big", "5.04", "5.04"), ("p1", "6.72", "6.72")]

    # a late power-off at 10-15 00:00: 0.96 + 120 h x 0.015 x 0.90 = 1.62, then shut
    # off (x 0.5) 120 h x 0.00675 = 0.81 and 48 h x 0.020 x 0.875 x 0.5 = 0.42: 3.81,
    # 1.23 less than the 5.04 frozen
    seed(session_factory, [event("compute.instance.power_off.end", "inst-big",
                                 "2026-10-15T00:00:00Z", project_id="p-big", state="shutoff")])
    november = _statement(client, "p-big", "2026-11")
    assert [(a["period"], a["resource_id"], a["amount"]) for a in november["adjustments"]] == [
        ("2026-10", "inst-big", "-1.23")]
    assert _summaries(client, "2026-11") == [("p-big", "0.00", "-1.23")]


def test_an_invalid_term_is_refused_with_its_reason(client: FlaskClient) -> None:
    prices = {**PRICES, "project_terms": {"p-big": [{"discount_percent": "120"}]}}
    response = client.put("/v1/price-lists/default", json=prices, headers=ADMIN)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert (error["code"], error["message"]) == (
        "invalid_price_list", "project_terms.p-big[0].discount_percent must be at most 100")


def _versions(client: FlaskClient) -> list[dict[str, Any]]:
    return client.get("/v1/price-lists/default", headers=READ).get_json()[  # type: ignore[no-any-return]
        "items"]


def test_a_version_that_omits_terms_carries_those_still_in_force(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    later = {**copy.deepcopy(V1), "effective_from": "2026-10-15T00:00:00Z"}
    assert client.put("/v1/price-lists/default", json=later, headers=ADMIN).status_code == 201
    carried = _versions(client)[1]["document"]["project_terms"]
    first, second = TERMS["p-big"]
    assert carried == {"p-big": [{**first, "from": "2026-10-15T00:00:00.000000Z"}, second]}
    seed(session_factory, [
        event("compute.instance.create.end", "inst-big", "2026-10-08T00:00:00Z",
              project_id="p-big", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-big", "2026-10-22T00:00:00Z",
              project_id="")])
    big = _statement(client, "p-big")
    assert [(x["start"][:10], x["price_list_version"], x["rate"], x["modifier"], x["amount"])
            for x in big["lines"]] == [
        ("2026-10-08", "default/1", "0.020", "1", "0.96"),
        ("2026-10-10", "default/1", "0.015", "0.90", "1.62"),  # 120 h x 0.015 x 0.90
        ("2026-10-15", "default/2", "0.015", "0.90", "1.62"),  # carried: the same
        ("2026-10-20", "default/2", "0.020", "0.875", "0.84")]


def test_an_empty_object_clears_the_terms(client: FlaskClient) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    later = {**copy.deepcopy(V1), "effective_from": "2026-10-25T00:00:00Z",
             "project_terms": {}}
    assert client.put("/v1/price-lists/default", json=later, headers=ADMIN).status_code == 201
    assert _versions(client)[1]["document"]["project_terms"] == {}


def test_carried_terms_that_do_not_fit_are_refused(client: FlaskClient) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    later = {**copy.deepcopy(V1), "effective_from": "2026-10-12T00:00:00Z"}
    del later["rates"]["instance"]
    response = client.put("/v1/price-lists/default", json=later, headers=ADMIN)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == (
        "the project_terms carried forward from default/1 do not fit this version "
        "(project_terms.p-big[0].rates.instance: the version has no rates.instance to "
        "override); state project_terms in the version (an empty object clears them)")
    assert len(_versions(client)) == 1
