"""A run process's runs of one cloud share a keystoneauth session
(reporting.openstack.kept_session): one token and one version discovery for many
runs, a new token on a 401 or near expiry, a new session when the clouds.yaml entry
resolves differently, after a failed run, or past its age."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from reporting.openstack.adapter import OpenStackAdapter
from reporting.openstack.kept_session import SessionKeeper
from reporting.sync.observation import ObserveRequest, RunAborted
from tests.unit.sync.openstack.conftest import (
    AUTH_URL,
    NOVA,
    FakeCloud,
    api,
    deadline,
    token_body,
    write_clouds_yaml,
)

AT = dt.datetime(2026, 3, 10, 12, 0)
CONFIG = {"os_cloud": "testcloud"}


def observe(env: dict[str, str], keeper: SessionKeeper | None, cloud: str = "c1"):
    adapter = OpenStackAdapter(cloud, CONFIG, budget_s=30, environ=env, sessions=keeper)
    return adapter.observe(ObserveRequest(cloud, AT, None, deadline()))


def token_requests(fake_cloud: FakeCloud) -> list:
    return [r for r in fake_cloud.requested("/auth/tokens") if r.method == "POST"]


def nova_discovery(fake_cloud: FakeCloud) -> list:
    return [r for r in fake_cloud.mock.request_history
            if r.url.rstrip("/") == NOVA and r.method == "GET"]


def numbered_tokens(fake_cloud: FakeCloud) -> None:
    """Each token request gets a token of its own: tok-1, tok-2, ..."""
    issued = iter(range(1, 1000))

    def answer(request, context):
        context.headers["X-Subject-Token"] = f"tok-{next(issued)}"
        context.status_code = 201
        return token_body()

    fake_cloud.mock.post(f"{AUTH_URL}/auth/tokens", json=answer)


def test_runs_of_one_cloud_share_one_token_and_one_discovery(fake_cloud: FakeCloud,
                                                            clouds_env) -> None:
    keeper = SessionKeeper()
    for _ in range(3):
        observation = observe(clouds_env, keeper)
        assert observation.errors == []
        assert "instance" in observation.enumerated_types
    assert len(token_requests(fake_cloud)) == 1
    assert len(nova_discovery(fake_cloud)) == 1
    assert keeper.clouds() == ["c1"]


def test_without_a_keeper_every_run_authenticates(fake_cloud: FakeCloud, clouds_env) -> None:
    for _ in range(2):
        assert observe(clouds_env, None).errors == []
    assert len(token_requests(fake_cloud)) == 2


def test_a_revoked_token_is_replaced_on_its_401_and_the_run_completes(
        fake_cloud: FakeCloud, clouds_env) -> None:
    numbered_tokens(fake_cloud)
    keeper = SessionKeeper()
    assert observe(clouds_env, keeper).errors == []
    servers = api("nova_v2.47_servers-details-resp.json")

    def servers_answer(request, context):
        if request.headers.get("X-Auth-Token") == "tok-1":  # revoked meanwhile
            context.status_code = 401
            return {"error": {"code": 401, "message": "The request you have made "
                                                      "requires authentication."}}
        if "marker" in request.qs:
            return {"servers": [], "servers_links": []}
        return servers

    fake_cloud.mock.get(f"{NOVA}/servers/detail", json=servers_answer)
    observation = observe(clouds_env, keeper)
    assert observation.errors == []
    assert "instance" in observation.enumerated_types
    assert len(token_requests(fake_cloud)) == 2
    assert fake_cloud.requested("/servers/detail")[-1].headers["X-Auth-Token"] == "tok-2"


def test_a_token_near_its_expiry_is_replaced_before_it_is_used(fake_cloud: FakeCloud,
                                                                 clouds_env) -> None:
    # keystoneauth renews a token within 120 s of its expiry: the first one issued
    # here expires in 60 s, every later one in an hour.
    issued = iter(range(1, 1000))

    def answer(request, context):
        number = next(issued)
        body = token_body()
        if number == 1:
            body.expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=60)
        context.headers["X-Subject-Token"] = f"tok-{number}"
        context.status_code = 201
        return body

    fake_cloud.mock.post(f"{AUTH_URL}/auth/tokens", json=answer)
    keeper = SessionKeeper()
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 2
    sent_before = len(fake_cloud.mock.request_history)
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 2
    second_run = fake_cloud.mock.request_history[sent_before:]
    assert second_run and {r.headers.get("X-Auth-Token") for r in second_run} == {"tok-2"}


def test_a_changed_entry_gets_a_new_session_with_its_credentials(
        fake_cloud: FakeCloud, clouds_env, tmp_path: Path) -> None:
    keeper = SessionKeeper()
    assert observe(clouds_env, keeper).errors == []
    path = write_clouds_yaml(tmp_path)  # the same entry: the session is kept
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 1
    text = path.read_text().replace("password: secret", "password: rotated")
    path.write_text(text)
    assert observe(clouds_env, keeper).errors == []
    requests = token_requests(fake_cloud)
    assert len(requests) == 2
    sent = json.loads(requests[-1].body)["auth"]["identity"]["password"]["user"]["password"]
    assert sent == "rotated"


def test_a_failed_run_drops_its_session(fake_cloud: FakeCloud, clouds_env) -> None:
    keeper = SessionKeeper()
    assert observe(clouds_env, keeper).errors == []
    fake_cloud.mock.get(f"{NOVA}/servers/detail", status_code=500,
                        json={"computeFault": {"code": 500, "message": "boom"}})
    # The probe fails: the run aborts, and its session is gone with it.
    with pytest.raises(RunAborted):
        observe(clouds_env, keeper)
    assert keeper.clouds() == []
    fake_cloud.pages(f"{NOVA}/servers/detail", "servers", [], [])
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 2


def test_a_session_past_its_age_is_built_again(fake_cloud: FakeCloud, clouds_env) -> None:
    now = [1000.0]
    keeper = SessionKeeper(max_age_s=600, clock=lambda: now[0])
    assert observe(clouds_env, keeper).errors == []
    now[0] += 599
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 1
    now[0] += 1
    assert observe(clouds_env, keeper).errors == []
    assert len(token_requests(fake_cloud)) == 2
    assert len(nova_discovery(fake_cloud)) == 2


def test_two_clouds_keep_a_session_each(fake_cloud: FakeCloud, clouds_env) -> None:
    keeper = SessionKeeper()
    for cloud in ("c1", "c2", "c1", "c2"):
        assert observe(clouds_env, keeper, cloud).errors == []
    assert keeper.clouds() == ["c1", "c2"]
    assert len(token_requests(fake_cloud)) == 2
