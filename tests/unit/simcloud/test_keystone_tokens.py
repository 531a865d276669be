"""The simulated keystone validates and revokes tokens as keystonemiddleware asks,
and lists Tally's Reporting API in its catalog when given its URL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import requests

from simcloud.api.keystone import TALLY_SERVICE_TYPE
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer, running_simcloud
from tests.unit.simcloud.apihelp import password_token

TALLY_URL = "http://127.0.0.1:8779"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCloudServer]:
    with running_simcloud(WorldConfig(seed=3, scale=10)) as server:
        server.tally_url = TALLY_URL
        yield server


def _tokens_url(sim: SimCloudServer) -> str:
    return f"{sim.base_url}/identity/v3/auth/tokens"


def validate(sim: SimCloudServer, caller: str, subject: str, method: str = "GET",
             **params: str) -> requests.Response:
    return requests.request(method, _tokens_url(sim), params=params or None, timeout=10,
                            headers={"X-Auth-Token": caller, "X-Subject-Token": subject})


def test_service_token_validates_a_user_token(sim: SimCloudServer) -> None:
    service = password_token(sim, "tally")
    user = password_token(sim, "demo")
    response = validate(sim, service, user)
    assert response.status_code == 200
    assert response.headers["X-Subject-Token"] == user
    token = response.json()["token"]
    demo = sim.identity.users["demo"]
    assert token["user"]["id"] == demo.id
    assert token["project"] == {"id": demo.project_id, "name": demo.project_name,
                                "domain": {"id": "default", "name": "Default"}}
    assert {role["name"] for role in token["roles"]} == {"member", "reader"}
    issued = dt.datetime.fromisoformat(token["issued_at"])
    expires = dt.datetime.fromisoformat(token["expires_at"])
    assert expires - issued == sim.identity.token_ttl
    assert TALLY_SERVICE_TYPE in {entry["type"] for entry in token["catalog"]}
    assert validate(sim, service, user, "HEAD").status_code == 200
    assert "catalog" not in validate(sim, service, user, nocatalog="1").json()["token"]


def test_catalog_lists_tally_under_its_service_type(sim: SimCloudServer) -> None:
    user = password_token(sim, "demo")
    token = validate(sim, password_token(sim, "admin"), user).json()["token"]
    (tally,) = [entry for entry in token["catalog"] if entry["type"] == TALLY_SERVICE_TYPE]
    assert tally["name"] == "tally"
    assert {(ep["interface"], ep["url"]) for ep in tally["endpoints"]} == {
        (iface, TALLY_URL) for iface in ("public", "internal", "admin")}


def test_unknown_or_revoked_token_is_404(sim: SimCloudServer) -> None:
    service = password_token(sim, "tally")
    assert validate(sim, service, "no-such-token").status_code == 404
    user = password_token(sim, "demo")
    assert validate(sim, service, user, "DELETE").status_code == 204
    assert validate(sim, service, user).status_code == 404
    assert validate(sim, service, user, "DELETE").status_code == 404


def test_bad_caller_token_is_401_and_an_unprivileged_caller_403(sim: SimCloudServer) -> None:
    user = password_token(sim, "demo")
    assert validate(sim, "bogus", user).status_code == 401
    other = password_token(sim, "demo")
    response = validate(sim, other, user)
    assert response.status_code == 403
    assert "validate_token" in response.json()["error"]["message"]
    assert validate(sim, user, user).status_code == 200  # a token may look at itself


def test_tokens_expire(sim: SimCloudServer) -> None:
    # The identity's own clock, moved by the test: the token expires when told to,
    # however slowly the machine runs (a wall-clock TTL raced a loaded machine).
    now = [dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)]
    clock, ttl = sim.identity.clock, sim.identity.token_ttl
    sim.identity.clock = lambda: now[0]
    try:
        sim.identity.token_ttl = dt.timedelta(seconds=60)
        try:
            short = password_token(sim, "demo")
        finally:
            sim.identity.token_ttl = ttl
        service = password_token(sim, "tally")
        now[0] += dt.timedelta(seconds=59)
        assert validate(sim, service, short).status_code == 200
        now[0] += dt.timedelta(seconds=1)
        assert validate(sim, service, short).status_code == 404
        # An expired token gets nothing from the other simulated APIs either.
        response = requests.get(f"{sim.base_url}/compute/v2.1/flavors/detail",
                                headers={"X-Auth-Token": short}, timeout=10)
        assert response.status_code == 401
    finally:
        sim.identity.clock = clock


def test_no_tally_url_no_catalog_entry() -> None:
    with running_simcloud(WorldConfig(seed=3, scale=0)) as server:
        token = password_token(server, "demo")
        body = validate(server, token, token).json()["token"]
        assert TALLY_SERVICE_TYPE not in {entry["type"] for entry in body["catalog"]}
