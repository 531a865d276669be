"""Bad prices are permanent (a version is never removed), so they are refused at PUT:
text no database can hold, duplicate keys, and a ``default`` version refused for a
closed month it could never price (SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, PRICES, SMALL, event, october, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")


def _put(client: FlaskClient, name: str, document: dict[str, Any]) -> Any:
    return client.put(f"/v1/price-lists/{name}", json=document, headers=ADMIN)


@pytest.mark.parametrize(("zero_rated", "said"), [
    (["p\x00"], "zero_rated_projects[0] holds a NUL character (U+0000)"),
    (["p1", "\udc00"], "zero_rated_projects[1] holds a lone surrogate (U+DC00)"),
])
def test_text_no_database_holds_is_refused_and_nothing_is_stored(
        client: FlaskClient, session_factory: sessionmaker[Session], zero_rated: list[str],
        said: str) -> None:
    seed(session_factory, october())
    response = _put(client, "default", {**copy.deepcopy(PRICES[0]),
                                        "zero_rated_projects": zero_rated})
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["code"] == "invalid_price_list" and said in error["message"]
    assert client.get("/v1/price-lists/default", headers=READ).get_json()["items"] == []
    # nothing was stored, so the month still prices and closes
    assert _put(client, "default", PRICES[0]).status_code == 201
    summaries = client.get("/v1/statements?cloud=c1&period=2026-10", headers=READ)
    assert summaries.status_code == 200 and summaries.get_json()["items"]
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200


def test_a_member_written_twice_is_refused_with_its_line(client: FlaskClient) -> None:
    body = ('{"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",\n'
            ' "rates": {"instance": {"per": "hour",\n'
            '   "by_flavor": {"m1.small": "0.005", "m1.small": "0.500"}}}}')
    response = client.put("/v1/price-lists/default", data=body, headers=ADMIN,
                          content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == (
        "the price list names a member twice: duplicate key 'm1.small' at line 3, column 39")
    assert client.get("/v1/price-lists/default", headers=READ).get_json()["items"] == []
    assert client.put("/v1/price-lists/default", data=body.replace('"m1.small": "0.500"',
                                                                   '"m1.large": "0.500"'),
                      headers=ADMIN, content_type="application/json").status_code == 201


def _on(cloud: str) -> list[dict[str, Any]]:
    return [event("compute.instance.create.end", f"{cloud}-vm", "2026-10-02T00:00:00Z",
                  state="active", size=SMALL, cloud=cloud)]


def test_a_default_version_is_refused_only_for_months_default_could_price(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """c2 has its own list since September: ``default`` never prices c2, so c2's closed
    October does not block a ``default`` version in October.  c3's own list starts in
    November, so ``default`` priced c3's October: that close blocks it."""
    seed(session_factory, _on("c2") + _on("c3"))
    assert _put(client, "default", PRICES[0]).status_code == 201
    assert _put(client, "c2", {**PRICES[0], "effective_from": "2026-09-01T00:00:00Z"}
                ).status_code == 201
    assert client.post("/v1/periods/c2/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    mid_october = {**PRICES[1], "effective_from": "2026-10-20T00:00:00Z"}
    created = _put(client, "default", mid_october)
    assert created.status_code == 201, created.get_json()
    # a version of c2's own list in its closed October is still refused
    refused = _put(client, "c2", {**PRICES[1], "effective_from": "2026-10-25T00:00:00Z"})
    assert refused.status_code == 409
    assert "closed period 2026-10 of cloud c2" in refused.get_json()["error"]["message"]

    assert _put(client, "c3", {**PRICES[0], "effective_from": "2026-11-01T00:00:00Z"}
                ).status_code == 201
    assert client.post("/v1/periods/c3/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    refused = _put(client, "default", {**PRICES[1], "effective_from": "2026-10-25T00:00:00Z"})
    assert refused.status_code == 409
    assert refused.get_json()["error"]["message"] == (
        "effective_from falls before the end of closed period 2026-10 of cloud c3, which "
        "this version would price; a closed statement never changes")


def test_a_version_prices_only_until_the_next_version_of_its_list(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    """c2's own versions take effect on 09-01 and 10-01 and October is closed: a version
    from 09-15 prices only until 10-01, so it is accepted; one from 10-05 is not."""
    seed(session_factory, _on("c2"))
    assert _put(client, "c2", {**PRICES[0], "effective_from": "2026-09-01T00:00:00Z"}
                ).status_code == 201
    assert _put(client, "c2", PRICES[0]).status_code == 201
    assert client.post("/v1/periods/c2/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    assert _put(client, "c2", {**PRICES[1], "effective_from": "2026-09-15T00:00:00Z"}
                ).status_code == 201
    assert _put(client, "c2", {**PRICES[1], "effective_from": "2026-10-05T00:00:00Z"}
                ).status_code == 409
