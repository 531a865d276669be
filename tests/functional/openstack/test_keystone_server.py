"""``tally-reporting`` (gunicorn) with ``auth_strategy = keystone`` against the simulated
cloud's keystone: admin, read, project member and ingest access, revocation, and
keystone going away (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.functional.openstack.cloud import KeystoneCloud, event, keystone_cloud

VM = "/v1/resources/openstack/sim/instance/vm-{}"
USAGE = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T01:00:00Z"}


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


def test_keystone_gone_is_503_with_a_clear_message(cloud: KeystoneCloud) -> None:
    member = cloud.token("demo")
    cloud.sim.stop()  # keystone refuses connections from now on
    response = cloud.get("/v1/resources", member)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "keystone_unavailable"
    assert "keystone is unavailable" in response.json()["error"]["message"]
