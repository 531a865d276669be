"""A billing account's dated rates through the API (SQLite and PostgreSQL): a member
project priced at its account's rate for the time it is a member, hand-computed, on
its statement, the summaries (PostgreSQL: the set-based rating), the account's
statement, the close and a late fact's adjustment; carried forward; what is refused."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import default_accounts
from tests.functional.billing.history import ACCEPT, SMALL, event, seed
from tests.functional.billing.history import statement_of as _statement
from tests.functional.billing.history import summaries_of as _summaries
from tests.functional.reporting.fixtures import auth
from tests.unit.billing.test_account_price_terms import ACME
from tests.unit.billing.test_rating import V1

ADMIN, READ = auth("admin"), auth("read")
PRICES = {**copy.deepcopy(V1), "effective_from": "2026-09-01T00:00:00Z",
          "account_terms": copy.deepcopy(ACME)}


def _accounts(client: FlaskClient) -> None:
    for name in ("acme", "beta"):
        assert client.post("/v1/accounts", headers=ADMIN,
                           json={"account_id": name, "description": name}).status_code == 201


def _join(client: FlaskClient, account: str, project: str, at: str) -> Any:
    return client.post(f"/v1/accounts/{account}/memberships", headers=ADMIN,
                       json={"cloud": "c1", "project_id": project, "effective_from": at})


def _lines(document: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [(x["start"][:10], x["end"][:10], x["rate"], x["modifier"], x["amount"])
            for x in document["lines"]]


def _account(client: FlaskClient, name: str) -> dict[str, Any]:
    response = client.get(f"/v1/accounts/{name}/statement?period=2026-10", headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def test_a_member_is_priced_at_its_accounts_rate_while_it_is_a_member(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _accounts(client)
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    # p1 in acme from the 5th, moved to beta (no terms) on the 15th; p2 in no account
    assert _join(client, "acme", "p1", "2026-10-05T00:00:00Z").status_code == 201
    assert _join(client, "beta", "p1", "2026-10-15T00:00:00Z").status_code == 201
    seed(session_factory, [
        event("compute.instance.create.end", "inst-1", "2026-10-08T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-1", "2026-10-22T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-2", "2026-10-08T00:00:00Z",
              project_id="p2", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-2", "2026-10-22T00:00:00Z", project_id=""),
    ])
    p1 = _statement(client, "p1")
    assert _lines(p1) == [
        ("2026-10-08", "2026-10-10", "0.020", "1", "0.96"),  # 48 h x 0.020, before the term
        ("2026-10-10", "2026-10-15", "0.012", "1", "1.44"),  # 120 h x acme's 0.012
        ("2026-10-15", "2026-10-22", "0.020", "1", "3.36")]  # in beta: 168 h x 0.020
    assert p1["total"] == "5.76"
    # 336 h x 0.020 = 6.72, in lines cut where acme's rate begins and stops pricing p1
    assert [x[:2] for x in _lines(_statement(client, "p2"))] == [
        ("2026-10-08", "2026-10-10"), ("2026-10-10", "2026-10-15"),
        ("2026-10-15", "2026-10-22")]
    assert _statement(client, "p2")["total"] == "6.72"
    assert _summaries(client) == [("p1", "5.76", "5.76"), ("p2", "6.72", "6.72")]
    # the account's statement shows the lines at its rate, beta's at the version's
    (acme,) = _account(client, "acme")["projects"]
    assert (acme["from"][:10], acme["to"][:10], acme["subtotal"]) == (
        "2026-10-05", "2026-10-15", "2.40")
    assert [x[2] for x in _lines(acme)] == ["0.020", "0.012"]
    (beta,) = _account(client, "beta")["projects"]
    assert (beta["subtotal"], [x[2] for x in _lines(beta)]) == ("3.36", ["0.020"])

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    frozen = _statement(client, "p1")
    assert frozen["status"] == "closed" and frozen["lines"] == p1["lines"]
    assert _summaries(client) == [("p1", "5.76", "5.76"), ("p2", "6.72", "6.72")]
    # a membership changing the closed month is refused, as ever
    response = _join(client, "acme", "p2", "2026-10-12T00:00:00Z")
    assert response.status_code == 409

    # a late power-off at 10-12 00:00: 0.96 + 48 h x 0.012 = 0.576 -> 0.58, then shut off
    # (x 0.5) 72 h x 0.006 = 0.432 -> 0.43, and in beta 168 h x 0.010 = 1.68: 3.65, 2.11
    # less than the 5.76 frozen
    seed(session_factory, [event("compute.instance.power_off.end", "inst-1",
                                 "2026-10-12T00:00:00Z", state="shutoff")])
    november = _statement(client, "p1", "2026-11")
    assert [(a["period"], a["resource_id"], a["amount"]) for a in november["adjustments"]] == [
        ("2026-10", "inst-1", "-2.11")]
    assert _summaries(client, "2026-11") == [("p1", "0.00", "-2.11")]


def test_a_default_domain_account_is_priced_with_its_terms(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    october = {**copy.deepcopy(V1), "effective_from": "2026-09-01T00:00:00Z"}
    assert client.put("/v1/price-lists/default", json=october, headers=ADMIN).status_code == 201
    seed(session_factory, [
        event("compute.instance.create.end", "inst-1", "2026-10-30T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-1", "2026-11-02T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-2", "2026-10-30T00:00:00Z",
              project_id="p2", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-2", "2026-11-02T00:00:00Z", project_id="")])
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    before = _statement(client, "p1")
    # the sync books p1 into its domain's account, from the end of the closed October
    default_accounts.assign(session_factory, "c1", {"p1": ("c1-d1", "domain d1")}, [],
                            dt.datetime(2026, 11, 15), dt.datetime(2026, 11, 15))
    november = {**copy.deepcopy(V1), "effective_from": "2026-11-01T00:00:00Z",
                "account_terms": {"c1-d1": [{"rates": {
                    "instance": {"per": "hour", "by_flavor": {"m1.small": "0.012"}}}}]}}
    assert client.put("/v1/price-lists/default", json=november, headers=ADMIN
                      ).status_code == 201
    # November: 24 h x the domain account's 0.012 = 0.288 -> 0.29; p2, in no account,
    # 24 h x 0.020 = 0.48; October is what it was closed with (48 h x 0.020 = 0.96)
    assert _lines(_statement(client, "p1", "2026-11")) == [
        ("2026-11-01", "2026-11-02", "0.012", "1", "0.29")]
    assert _lines(_statement(client, "p2", "2026-11")) == [
        ("2026-11-01", "2026-11-02", "0.020", "1", "0.48")]
    assert _summaries(client, "2026-11") == [("p1", "0.29", "0.29"), ("p2", "0.48", "0.48")]
    assert _statement(client, "p1") == before and before["total"] == "0.96"


def _versions(client: FlaskClient) -> list[dict[str, Any]]:
    return client.get("/v1/price-lists/default", headers=READ).get_json()[  # type: ignore[no-any-return]
        "items"]


def test_a_version_that_omits_account_terms_carries_those_still_in_force(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    _accounts(client)
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    later = {**copy.deepcopy(V1), "effective_from": "2026-10-15T00:00:00Z"}
    assert client.put("/v1/price-lists/default", json=later, headers=ADMIN).status_code == 201
    (term,) = ACME["acme"]
    assert _versions(client)[1]["document"]["account_terms"] == {
        "acme": [{**term, "from": "2026-10-15T00:00:00.000000Z"}]}
    assert _join(client, "acme", "p1", "2026-10-01T00:00:00Z").status_code == 201
    seed(session_factory, [
        event("compute.instance.create.end", "inst-1", "2026-10-08T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-1", "2026-10-22T00:00:00Z", project_id="")])
    assert [(x["start"][:10], x["price_list_version"], x["rate"], x["amount"])
            for x in _statement(client, "p1")["lines"]] == [
        ("2026-10-08", "default/1", "0.020", "0.96"),
        ("2026-10-10", "default/1", "0.012", "1.44"),  # 120 h x 0.012
        ("2026-10-15", "default/2", "0.012", "1.44"),  # carried: the same
        ("2026-10-20", "default/2", "0.020", "0.96")]
    cleared = {**copy.deepcopy(V1), "effective_from": "2026-10-25T00:00:00Z",
               "account_terms": {}}
    assert client.put("/v1/price-lists/default", json=cleared, headers=ADMIN).status_code == 201
    assert _versions(client)[2]["document"]["account_terms"] == {}


def test_invalid_account_terms_are_refused_with_their_reason(client: FlaskClient) -> None:
    # no account acme yet: its terms would price nothing
    response = client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert (error["code"], error["message"]) == (
        "invalid_price_list",
        "account_terms.acme: there is no account acme (add it with POST /v1/accounts first)")
    _accounts(client)
    tiered = copy.deepcopy(PRICES)
    tiered["account_terms"]["acme"][0]["rates"]["floating_ip"] = {
        "per": "hour", "mode": "graduated", "tiers": [{"up_to": None, "rate": "0.001"}]}
    response = client.put("/v1/price-lists/default", json=tiered, headers=ADMIN)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == (
        "account_terms.acme[0].rates.floating_ip.tiers: an account's terms give a rate, not "
        "tiers (tiers price the quantity of the project's whole period, a term only a "
        "stretch of it)")
    assert _versions(client) == []


def test_carried_account_terms_that_do_not_fit_are_refused(client: FlaskClient) -> None:
    _accounts(client)
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    later = {**copy.deepcopy(V1), "effective_from": "2026-10-12T00:00:00Z"}
    del later["rates"]["floating_ip"]
    response = client.put("/v1/price-lists/default", json=later, headers=ADMIN)
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == (
        "the account_terms carried forward from default/1 do not fit this version "
        "(account_terms.acme[0].rates.floating_ip: the version has no rates.floating_ip to "
        "override); state account_terms in the version (an empty object clears them)")
    assert len(_versions(client)) == 1
