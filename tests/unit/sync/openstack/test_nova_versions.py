"""Which nova listings prove an instance gone: the version document, and 2.69."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from reporting.openstack.adapter import (
    OpenStackAdapter,
    VersionDocumentUnreadable,
    document_maximum,
)
from reporting.sync.observation import ObserveRequest, RunAborted
from tests.unit.sync.openstack.conftest import (
    NOVA,
    FakeCloud,
    api,
    deadline,
    write_clouds_yaml,
)
from tests.unit.sync.openstack.test_adapter import ALL, by_type, observe

SINCE = dt.datetime(2026, 3, 10, 11, 0)
DELETED = {"id": "dead-1", "tenant_id": "p1", "status": "DELETED",
           "OS-EXT-STS:vm_state": "deleted",
           "OS-SRV-USG:terminated_at": "2026-03-10T11:50:01.123456",
           "updated": "2026-03-10T11:50:02Z"}


def nova_speaks(fake_cloud: FakeCloud, version: str) -> None:
    document = api("nova_v21-version-get-resp.json")
    document["version"]["version"] = version
    fake_cloud.mock.get(NOVA, json=document)
    fake_cloud.mock.get(NOVA + "/", json=document)


def servers(fake_cloud: FakeCloud, fixture: str) -> None:
    live = api(fixture)["servers"]

    def answer(request, context):
        if "marker" in request.qs:
            return {"servers": []}
        if request.qs.get("deleted") == ["true"]:
            return {"servers": [DELETED]}
        return {"servers": live}

    fake_cloud.mock.get(f"{NOVA}/servers/detail", json=answer)


def microversions(fake_cloud: FakeCloud) -> set:
    return {r.headers.get("OpenStack-API-Version") for r in fake_cloud.requested("servers")}


def test_an_unreadable_version_document_is_an_error_never_microversion_2_1(
        fake_cloud: FakeCloud, clouds_env):
    # A read-only application credential whose access rules do not name the document.
    refusal = {"error": {"code": 401, "title": "Unauthorized",
                         "message": "The request you have made requires authentication."}}
    fake_cloud.mock.get(NOVA, status_code=401, json=refusal)
    fake_cloud.mock.get(NOVA + "/", status_code=401, json=refusal)
    servers(fake_cloud, "nova_servers-details-resp.json")
    observation = observe(clouds_env, since=SINCE)
    assert "instance" not in observation.enumerated_types  # no delete from absence
    assert observation.enumerated_types == ALL - {"instance"}
    [error] = observation.errors
    assert error.startswith(f"enumerating instance: nova's version document ({NOVA}/) could "
                            "not be read, so its microversion is unknown: nova answered GET / "
                            "with HTTP 401: The request you have made requires authentication.")
    # What it listed is still observed, and the deletes nova proves still reported.
    assert by_type(observation, "instance")
    assert [d.resource_id for d in observation.deletions] == ["dead-1"]
    assert microversions(fake_cloud) == {None}


def test_a_version_document_behind_a_dead_proxy_is_an_error(fake_cloud: FakeCloud, clouds_env):
    page = "<html><body><h1>503 Service Unavailable</h1>\nNo server is available.</body></html>"
    fake_cloud.mock.get(NOVA, status_code=503, text=page, headers={"Content-Type": "text/html"})
    fake_cloud.mock.get(NOVA + "/", status_code=503, text=page,
                        headers={"Content-Type": "text/html"})
    servers(fake_cloud, "nova_servers-details-resp.json")
    observation = observe(clouds_env)
    assert "instance" not in observation.enumerated_types
    assert observation.errors[0].endswith(
        "nova answered GET / with HTTP 503: 503 Service Unavailable No server is available.")


def test_only_a_document_that_says_so_is_read_without_microversions(fake_cloud: FakeCloud,
                                                                    clouds_env):
    # A v2.0 endpoint: its document names no version.  Read without a microversion,
    # flavors from the catalogue, and (below 2.69) no delete from absence, no error.
    nova_speaks(fake_cloud, "")
    servers(fake_cloud, "nova_servers-details-resp.json")
    observation = observe(clouds_env, since=SINCE)
    assert observation.errors == []
    assert microversions(fake_cloud) == {None}
    assert fake_cloud.requested("/flavors/detail")
    assert "instance" not in observation.enumerated_types
    assert [d.resource_id for d in observation.deletions] == ["dead-1"]


def test_below_2_69_absence_proves_nothing_but_nova_deletes_still_book(
        fake_cloud: FakeCloud, clouds_env):
    nova_speaks(fake_cloud, "2.68")
    servers(fake_cloud, "nova_v2.47_servers-details-resp.json")
    observation = observe(clouds_env, since=SINCE)
    assert observation.errors == []
    assert microversions(fake_cloud) == {"compute 2.68"}
    assert "instance" not in observation.enumerated_types
    assert observation.enumerated_types == ALL - {"instance"}
    [deletion] = observation.deletions
    assert deletion.deleted_at == dt.datetime(2026, 3, 10, 11, 50, 1, 123456)


def test_from_2_69_the_instance_listing_is_complete(fake_cloud: FakeCloud, clouds_env):
    nova_speaks(fake_cloud, "2.69")
    servers(fake_cloud, "nova_v2.47_servers-details-resp.json")
    observation = observe(clouds_env, since=SINCE)
    assert observation.errors == [] and "instance" in observation.enumerated_types


def test_keystoneauth_without_a_maximum_is_checked_against_the_document(
        fake_cloud: FakeCloud, clouds_env):
    # keystoneauth read nothing at the catalog URL (401); the document at <endpoint>/
    # answers: its maximum is used, never 2.1.
    fake_cloud.mock.get(NOVA, status_code=401, json={})
    servers(fake_cloud, "nova_v2.47_servers-details-resp.json")
    observation = observe(clouds_env, since=SINCE)
    assert observation.errors == []
    assert microversions(fake_cloud) == {"compute 2.69"}
    assert "instance" in observation.enumerated_types


def test_nova_missing_from_the_catalog_is_worded_as_such(fake_cloud: FakeCloud,
                                                        tmp_path: Path):
    env = {"OS_CLIENT_CONFIG_FILE": str(write_clouds_yaml(tmp_path, region_name="RegionThree"))}
    adapter = OpenStackAdapter("c1", {"os_cloud": "testcloud"}, budget_s=30, environ=env)
    with pytest.raises(RunAborted) as caught:
        adapter.observe(ObserveRequest("c1", dt.datetime(2026, 3, 10), None, deadline()))
    assert str(caught.value) == ('the clouds.yaml entry "testcloud": the catalog lists no '
                                 "compute endpoint (interface public, region RegionThree)")


def test_document_maximum_reads_both_shapes() -> None:
    assert document_maximum(api("nova_v21-version-get-resp.json")) == (2, 104)
    assert document_maximum({"versions": [{"id": "v2.0", "version": ""},
                                           {"id": "v2.1", "version": "2.90"}]}) == (2, 90)
    assert document_maximum({"version": {"id": "v2.0", "version": ""}}) is None
    # Digits Python's int() refuses are no version (once an uncaught ValueError).
    with pytest.raises(VersionDocumentUnreadable):
        document_maximum({"version": {"id": "v2.1", "version": "2.\u00b9"}})
