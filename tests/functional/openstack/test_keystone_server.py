"""``tally-reporting`` (gunicorn) with ``auth_strategy = keystone`` against the simulated
cloud's keystone: admin, read, project member, reader-only and ingest access,
revocation, expiry, and keystone going away or stalling (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from simcloud.identity import User
from tests.conftest import sqlite_copy
from tests.functional.openstack.cloud import (
    KeystoneCloud,
    event,
    keystone_cloud,
    reporting_config,
    stalled_listener,
)
from tests.functional.reporting.fixtures import start_server

VM = "/v1/resources/openstack/sim/instance/vm-{}"
USAGE = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T01:00:00Z"}
# [keystone_authtoken] http_connect_timeout of the stalling-keystone tests: the
# middleware's limit on each connection and on each wait for an answer (whole seconds).
STALL_TIMEOUT_S = 2
# A generous bound on the answer: a request waits at most two timeouts (discovery and
# the service user's login, or a validation and its one retry) plus a short backoff.
STALL_BOUND_S = 3 * STALL_TIMEOUT_S + 1


@pytest.fixture
def cloud(db_url: str, tmp_path: Path) -> Iterator[KeystoneCloud]:
    with keystone_cloud(db_url, tmp_path) as running:
        yield running


def _ids(response: requests.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["resource_id"] for item in response.json()["items"]]


def test_roles_and_project_scope_end_to_end(cloud: KeystoneCloud) -> None:
    admin, auditor = cloud.token("admin"), cloud.token("auditor")
    member, collector = cloud.token("demo"), cloud.token("collector")

    # admin and the cloud-wide reader see both projects.
    for token in (admin, auditor):
        assert _ids(cloud.get("/v1/resources", token)) == ["vm-1", "vm-2"]
        assert cloud.get(VM.format(2) + "/lifecycle", token).status_code == 200
    assert cloud.get("/v1/sync-runs", auditor).status_code == 200

    # The member of the first project sees it and nothing else.
    assert _ids(cloud.get("/v1/resources", member)) == ["vm-1"]
    usage = cloud.get("/v1/usage", member, **USAGE).json()["items"]
    assert [(i["resource_id"], i["project_id"], i["seconds"]) for i in usage] == [
        ("vm-1", cloud.member_project, 3600)]
    for suffix in ("", "/events", "/lifecycle"):
        assert cloud.get(VM.format(1) + suffix, member).status_code == 200
        assert cloud.get(VM.format(2) + suffix, member).status_code == 404
    refused = cloud.get("/v1/resources", member, project_id=cloud.other_project)
    assert refused.status_code == 403
    assert cloud.get("/v1/usage", member, project_id=cloud.other_project,
                     **USAGE).status_code == 403
    assert cloud.get("/v1/sync-runs", member).status_code == 403

    # ingest: may post events, may not read.
    assert cloud.get("/v1/resources", collector).status_code == 403
    posted = requests.post(f"{cloud.api.base_url}/v1/events", timeout=60,
                           json={"events": [event(3, cloud.member_project)]},
                           headers={"X-Auth-Token": member})
    assert posted.status_code == 403


def test_bad_revoked_and_missing_tokens_are_401(cloud: KeystoneCloud) -> None:
    assert cloud.get("/v1/resources", None).status_code == 401
    assert cloud.get("/v1/resources", "not-a-token").status_code == 401
    member = cloud.token("demo")
    assert cloud.get("/v1/resources", member).status_code == 200
    cloud.sim.identity.revoke(member)
    response = cloud.get("/v1/resources", member)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert cloud.get("/healthz", None).status_code == 200


def test_a_reader_only_token_reads_its_project_only(cloud: KeystoneCloud) -> None:
    assert cloud.sim.identity.users["viewer"].roles == ("reader",)
    viewer = cloud.token("viewer")  # scoped to the member's project, role reader alone
    assert _ids(cloud.get("/v1/resources", viewer)) == ["vm-1"]
    usage = cloud.get("/v1/usage", viewer, **USAGE).json()["items"]
    assert [(i["resource_id"], i["project_id"]) for i in usage] == [
        ("vm-1", cloud.member_project)]
    for suffix in ("", "/events", "/lifecycle"):
        assert cloud.get(VM.format(1) + suffix, viewer).status_code == 200
        assert cloud.get(VM.format(2) + suffix, viewer).status_code == 404
    assert cloud.get("/v1/resources", viewer,
                     project_id=cloud.other_project).status_code == 403
    for path in ("/v1/sync-runs", "/v1/clouds", "/v1/rejected-events"):
        assert cloud.get(path, viewer).status_code == 403, path
    posted = requests.post(f"{cloud.api.base_url}/v1/events", timeout=60,
                           json={"events": [event(4, cloud.member_project)]},
                           headers={"X-Auth-Token": viewer})
    assert posted.status_code == 403


# Seconds a token lives in the expiry test.  The requests that cache it must all be
# answered before it expires: on a machine too slow for that, a new token is tried.
TOKEN_TTL_S = 5


def test_expired_token_is_401(db_url: str, tmp_path: Path) -> None:
    # With the token cache on: a token cached while valid is refused once it expired.
    with keystone_cloud(db_url, tmp_path, token_cache_time=300) as cloud:
        # What `tally-simcloud serve --token-ttl 5` sets.
        cloud.sim.identity.token_ttl = dt.timedelta(seconds=TOKEN_TTL_S)
        for _ in range(10):
            member = cloud.token("demo")
            known = cloud.sim.identity.validate(member)
            assert known is not None
            # four requests, so that both gunicorn workers cache it
            codes = [cloud.get("/v1/resources", member).status_code for _ in range(4)]
            if dt.datetime.now(dt.UTC) < known.expires_at:  # all answered while valid
                assert codes == [200] * 4
                break
        else:
            pytest.fail(f"no token outlived four requests ({TOKEN_TTL_S} s each time)")
        wait = (known.expires_at - dt.datetime.now(dt.UTC)).total_seconds() + 0.5
        time.sleep(max(wait, 0))
        for _ in range(4):
            response = cloud.get("/v1/resources", member)
            assert response.status_code == 401, response.text
            assert response.json()["error"]["code"] == "unauthorized"
        assert cloud.get("/v1/resources", cloud.token("demo")).status_code == 200


def test_keystone_gone_is_503_with_a_clear_message(cloud: KeystoneCloud) -> None:
    member = cloud.token("demo")
    cloud.sim.stop()  # keystone refuses connections from now on
    response = cloud.get("/v1/resources", member)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "keystone_unavailable"
    assert "keystone is unavailable" in response.json()["error"]["message"]


def _timed_get(url: str, headers: dict[str, str]) -> tuple[requests.Response, float]:
    started = time.monotonic()
    response = requests.get(url, headers=headers, timeout=60)
    return response, time.monotonic() - started


def _assert_stalled_503(response: requests.Response, elapsed: float) -> None:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "keystone_unavailable"
    assert "keystone is unavailable" in error["message"]
    # ConnectTimeout, or a DiscoveryFailure when the service user's login stalled.
    assert "keystone did not answer in time" in error["message"], error["message"]
    # keystone's address and the option are in the operator's log, not in the answer.
    assert "127.0.0.1" not in error["message"], error["message"]
    assert elapsed < STALL_BOUND_S, f"503 after {elapsed:.1f} s"


def _assert_timeout_logged(log: Path) -> None:
    text = log.read_text(errors="replace")
    assert f"http_connect_timeout = {STALL_TIMEOUT_S} s" in text, text[-2000:]


# An auth_url ending in /v3 lets keystoneauth skip the stalled discovery and stall on
# the service user's login (ConnectTimeout); another path ends in a DiscoveryFailure.
@pytest.mark.parametrize("auth_path", ["/v3", "/identity/v3"])
def test_keystone_that_accepts_and_never_answers_is_503_within_the_timeouts(
    tmp_path: Path, auth_path: str, sqlite_migrated_template: Path
) -> None:
    # The database plays no part: SQLite only.
    db_url = sqlite_copy(sqlite_migrated_template, tmp_path / "tally.sqlite")
    service = User("svc", "tally", "secret", "svcp", "service", ("service",))
    with stalled_listener() as keystone:
        config = reporting_config(tmp_path, db_url, keystone + auth_path, service, "",
                                  http_connect_timeout=STALL_TIMEOUT_S)
        api = start_server(config, tmp_path / "reporting.log")
        try:
            url = api.base_url + "/v1/resources"
            # The user's token, then a service token beside it (validated first).
            for headers in ({"X-Auth-Token": "user-token"},
                            {"X-Auth-Token": "user-token", "X-Service-Token": "svc-token"}):
                _assert_stalled_503(*_timed_get(url, headers))
            # Without a token no keystone is asked: a plain 401, at once.
            assert requests.get(url, timeout=60).status_code == 401
        finally:
            api.stop()
    assert "Traceback" not in api.log.read_text(errors="replace")
    _assert_timeout_logged(api.log)


def test_keystone_stalling_on_validation_is_503_within_the_timeouts(
    db_url: str, tmp_path: Path
) -> None:
    with keystone_cloud(db_url, tmp_path, http_connect_timeout=STALL_TIMEOUT_S) as cloud:
        member = cloud.token("demo")
        assert cloud.get("/v1/resources", member).status_code == 200  # logged in, validated
        # From now on keystone takes longer than the bound to answer anything.
        cloud.sim.world.faults.set("identity", delay_s=STALL_BOUND_S + 5)
        try:
            _assert_stalled_503(*_timed_get(cloud.api.base_url + "/v1/resources",
                                            {"X-Auth-Token": member}))
        finally:
            cloud.sim.world.faults.clear()
        assert cloud.get("/v1/resources", member).status_code == 200  # keystone is back
        _assert_timeout_logged(cloud.api.log)
