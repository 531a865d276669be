"""Listings that are not complete are never read as complete: on the simulated cloud
with the fault switched on, no live resource is ever deleted."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
import yaml

from reporting.db.session import ENGINE_KEY
from simcloud.config import WorldConfig
from simcloud.identity import READ_ONLY_RULES
from tests.functional.sync.conftest import START, Syncer
from tests.functional.sync.test_failures import failed_run, other_syncer
from tests.functional.sync.test_run_process import change_entry

T1 = START + dt.timedelta(hours=6)
T2 = T1 + dt.timedelta(hours=3)
T3 = T2 + dt.timedelta(hours=3)
TYPES = ["floating_ip", "image", "instance", "loadbalancer", "volume"]
CAP = 5
LATER = T1 + dt.timedelta(hours=18)


@pytest.fixture
def world_config(request) -> WorldConfig:
    name = request.node.name
    caps = {s: CAP for s in ("compute", "block-storage", "network", "image", "load-balancer")}
    return WorldConfig(seed=11, scale=80, daily_turnover=0.5, daily_operations=1.0,
                       hidden_image_fraction=0.2,
                       page_caps=caps if "page_caps" in name else {},
                       nova_max_microversion="2.38" if "below_2_47" in name
                       else "2.60" if "below_2_69" in name else "2.100")


def live_rows_deleted(syncer: Syncer, at: dt.datetime) -> list[tuple[str, str]]:
    """Rows held deleted whose resource the cloud still holds at ``at``."""
    alive = {(r["resource_type"], r["resource_id"]) for r in syncer.truth(at, live=True)}
    return sorted(key for key, row in syncer.rows().items() if not row.live and key in alive)


def instance_rows_alive(syncer: Syncer, at: dt.datetime, ids: set[str]) -> bool:
    rows = syncer.rows()
    return all(rows[("instance", rid)].live for rid in ids if ("instance", rid) in rows)


def down_cell_instances(syncer: Syncer, at: dt.datetime) -> set[str]:
    """Put 30 % of the servers in a down cell; the live instances at ``at`` it hides."""
    faults = syncer.world.world.faults
    faults.down_cell_fraction = 0.3
    return {r["resource_id"] for r in syncer.truth(at, live=True, resource_type="instance")
            if faults.in_down_cell(r["resource_id"])}

def test_down_cell_with_an_unreadable_version_document_deletes_no_instance(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    hidden = down_cell_instances(syncer, T2)
    syncer.world.world.faults.nova_version_document = 401
    # The run process keeps the T1 run's session, nova's version read then included
    # (reporting.openstack.kept_session); a changed entry makes the next run read the
    # document again, as a new run process would.
    change_entry(Path(os.environ["OS_CLIENT_CONFIG_FILE"]), "sim-admin")
    assert hidden
    syncer.advance(T2)
    run = failed_run(syncer, syncer.sync(T2))
    [error] = [e for e in run.stats["errors"] if e.startswith("enumerating instance: ")]
    assert "nova's version document" in error and "could not be read" in error
    assert "HTTP 401" in error
    assert run.stats["enumerated_types"] == [t for t in TYPES if t != "instance"]
    assert instance_rows_alive(syncer, T2, hidden)
    assert live_rows_deleted(syncer, T2) == []


def test_the_seeds_read_only_credential_with_a_down_cell_deletes_no_instance(
        syncer: Syncer, tmp_path: Path):
    # keystoneauth's own discovery reads /compute/v2.1, which the credential's rule
    # /**/ does not cover; the adapter reads the document at /compute/v2.1/ and gets
    # 2.69, so the down cell's servers are listed as UNKNOWN, not read as deleted.
    reader = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin-readonly",
                                             "include_octavia": True})
    try:
        syncer.advance(T1)
        reader.sync_ok(T1)
        hidden = down_cell_instances(syncer, T2)
        syncer.advance(T2)
        run = reader.sync_ok(T2)
        assert run["stats"]["enumerated_types"] == TYPES
        assert hidden and instance_rows_alive(syncer, T2, hidden)
        assert live_rows_deleted(syncer, T2) == []
    finally:
        reader.app.extensions[ENGINE_KEY].dispose()


def test_access_rules_naming_only_listings_delete_no_instance(
        syncer: Syncer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A read-only credential whose compute rules name /v2.1/... listings and not the
    # version document: nova answers the document 401, which keystoneauth takes for
    # "no microversions".
    rules = [dict(rule) for rule in READ_ONLY_RULES if rule["service"] != "compute"] + [
        {"service": "compute", "method": "GET", "path": "/**/v2.1/servers/detail"},
        {"service": "compute", "method": "GET", "path": "/**/v2.1/flavors/detail"}]
    cred = syncer.world.identity.add_application_credential("admin", "listings-only",
                                                            access_rules=rules)
    document = yaml.safe_load(Path(os.environ["OS_CLIENT_CONFIG_FILE"]).read_text())
    entry = dict(document["clouds"]["sim-admin-readonly"])
    entry["auth"] = dict(entry["auth"], application_credential_id=cred.id,
                         application_credential_secret=cred.secret)
    document["clouds"]["sim-listings-only"] = entry
    path = tmp_path / "listings-only.yaml"
    path.write_text(yaml.safe_dump(document))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    reader = other_syncer(syncer, tmp_path, {"os_cloud": "sim-listings-only",
                                             "include_octavia": True})
    try:
        syncer.advance(T1)
        syncer.sync_ok(T1)
        hidden = down_cell_instances(syncer, T2)
        syncer.advance(T2)
        run = failed_run(reader, reader.sync(T2))
        assert run.stats["errors"] == [
            f"enumerating instance: nova's version document ({syncer.world.base_url}"
            "/compute/v2.1/) could not be read, so its microversion is unknown: nova "
            "answered GET / with HTTP 401: The request you have made requires "
            "authentication."]
        assert "instance" not in run.stats["enumerated_types"]
        assert hidden and instance_rows_alive(syncer, T2, hidden)
        assert live_rows_deleted(syncer, T2) == []
    finally:
        reader.app.extensions[ENGINE_KEY].dispose()


def test_below_2_69_instances_are_deleted_only_by_novas_deleted_listing(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    faults = syncer.world.world.faults
    faults.down_cell_fraction = 0.3
    syncer.advance(LATER)
    run = syncer.sync_ok(LATER)  # completed: an old nova is no error
    assert run["stats"]["enumerated_types"] == [t for t in TYPES if t != "instance"]
    assert live_rows_deleted(syncer, LATER) == []
    deletes = [e for e in syncer.events(resource_type="instance", event_type="sync.delete")]
    gone = {r["resource_id"]: r for r in syncer.truth(LATER, live=False,
                                                      resource_type="instance")}
    assert deletes, "nova's deleted listing still books what it proves"
    for event in deletes:
        assert event.payload["provider"]["dated_by"] == "platform"
        assert event.resource_id in gone


def test_page_caps_on_every_service_delete_nothing_alive(syncer: Syncer):
    syncer.advance(T1)
    first = syncer.sync_ok(T1)
    assert first["stats"]["enumerated_types"] == TYPES and first["stats"]["created"] > 0
    for at in (T2, T3):
        syncer.advance(at)
        run = syncer.sync_ok(at)
        assert run["stats"]["enumerated_types"] == TYPES
        assert live_rows_deleted(syncer, at) == []
    listed = {key for key, row in syncer.rows().items() if row.live}
    for kind in TYPES:
        assert len([k for k in listed if k[0] == kind]) > CAP  # more than one page each


def test_read_only_credential_on_later_runs_reads_the_deleted_servers(syncer, tmp_path):
    reader = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin-readonly",
                                             "include_octavia": True})
    try:
        syncer.advance(T1)
        reader.sync_ok(T1)
        for at in (T2, T3):
            syncer.advance(at)
            run = reader.sync_ok(at)
            assert run["stats"]["enumerated_types"] == TYPES
            assert run["stats"]["deletion_window"]["since"] is not None
        deletes = syncer.events(resource_type="instance", event_type="sync.delete")
        assert any(e.payload["provider"]["dated_by"] == "platform" for e in deletes)
        assert live_rows_deleted(syncer, T3) == []
    finally:
        reader.app.extensions[ENGINE_KEY].dispose()


def test_read_only_credential_against_a_nova_below_2_47(syncer: Syncer, tmp_path: Path):
    reader = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin-readonly",
                                             "include_octavia": True})
    try:
        syncer.advance(T1)
        reader.sync_ok(T1)
        syncer.advance(T2)
        run = reader.sync_ok(T2)
        assert run["stats"]["enumerated_types"] == [t for t in TYPES if t != "instance"]
        truth = {r["resource_id"]: r for r in syncer.truth(T2, live=True,
                                                           resource_type="instance")}
        sized = [row for key, row in syncer.rows().items()
                 if key[0] == "instance" and row.live and key[1] in truth]
        # Sizes from the flavor catalogue (flavors/detail), as the size schema books them.
        assert sized and all(row.size == truth[row.resource_id]["size"] for row in sized
                             if not truth[row.resource_id]["in_transition"])
        assert live_rows_deleted(syncer, T2) == []
    finally:
        reader.app.extensions[ENGINE_KEY].dispose()
