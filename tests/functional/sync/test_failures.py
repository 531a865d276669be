"""Partial outages, refused accounts, budget, strict settings and the endpoints' answers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa

from reporting.app import create_app
from reporting.db.models import Event, SyncLock, SyncRun
from reporting.db.session import ENGINE_KEY
from reporting.sync.clouds import CloudsFileError
from simcloud.config import WorldConfig
from tests.functional.sync.conftest import (
    ADMIN,
    READ,
    START,
    Syncer,
    make_conf,
    naive,
    write_clouds_file,
)

T1 = START + dt.timedelta(hours=6)
T2 = T1 + dt.timedelta(hours=12)
T3 = T2 + dt.timedelta(hours=1)


def other_syncer(syncer: Syncer, tmp_path: Path, adapter_config: dict, **sync) -> Syncer:
    """A second API on the same database with another clouds file entry for the cloud."""
    directory = tmp_path / f"other-{len(list(tmp_path.iterdir()))}"
    directory.mkdir()
    clouds = write_clouds_file(directory, adapter_config)
    url = syncer.app.config["TALLY_CONF"].database.connection
    app = create_app(make_conf(url, directory, clouds, **sync))
    app.config["TESTING"] = True
    return Syncer(app, syncer.world)


def failed_run(syncer: Syncer, response) -> SyncRun:
    assert response.status_code == 500
    body = response.get_json()
    run = syncer.run(body["run_id"])
    assert run.status == "failed" and run.completed_at is not None
    # The answer carries the run id only, never the platform detail.
    assert set(body) == {"error", "run_id"} and "enumerating" not in str(body)
    return run


def test_a_service_down_costs_its_type_alone_and_does_not_move_the_bound(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    syncer.advance(T2)
    syncer.world.world.faults.set("block-storage", status=503)
    run = failed_run(syncer, syncer.sync(T2))
    assert run.stats["errors"][0].startswith("enumerating volume: ")
    assert run.stats["error_count"] == len(run.stats["errors"])
    assert "volume" not in run.stats["enumerated_types"]
    assert run.stats["deleted"] > 0  # the other types' corrections are kept
    gone_volumes = [r for r in syncer.truth(T2, live=False, resource_type="volume")
                    if ("volume", r["resource_id"]) in syncer.rows()]
    assert gone_volumes and all(syncer.rows()[("volume", r["resource_id"])].live
                                for r in gone_volumes)
    syncer.world.world.faults.clear()
    syncer.advance(T3)
    repaired = syncer.sync_ok(T3)
    # The failed run did not move the bound: the window reopens at the completed run.
    assert repaired["stats"]["deletion_window"]["since"] == "2026-11-01T05:59:00.000000Z"
    assert not any(syncer.rows()[("volume", r["resource_id"])].live for r in gone_volumes)


def test_probe_refused_ends_the_run_and_a_narrowed_account_wipes_nothing(
        syncer: Syncer, tmp_path: Path):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    before = {k: r.live for k, r in syncer.rows().items()}
    member = other_syncer(syncer, tmp_path, {"os_cloud": "sim-member", "include_octavia": True})
    try:
        syncer.advance(T2)
        run = failed_run(member, member.sync(T2))
        assert run.stats["errors"] == [run.stats["errors"][0]]
        assert run.stats["errors"][0].startswith(
            'the clouds.yaml entry "sim-member" cannot observe the whole cloud: ')
        assert run.stats["enumerated_types"] == []
        assert {k: r.live for k, r in syncer.rows().items()} == before
        with syncer.factory() as session:
            booked = session.execute(sa.select(sa.func.count()).select_from(Event).where(
                Event.payload["provider"]["sync_run_id"].as_string() == run.id)).scalar_one()
        assert booked == 0
    finally:
        member.app.extensions[ENGINE_KEY].dispose()


def test_read_only_application_credential_observes_the_whole_cloud(syncer, tmp_path):
    reader = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin-readonly",
                                             "include_octavia": True})
    try:
        syncer.advance(T1)
        run = reader.sync_ok(T1)
        assert run["stats"]["enumerated_types"] == [
            "floating_ip", "image", "instance", "loadbalancer", "volume"]
    finally:
        reader.app.extensions[ENGINE_KEY].dispose()


def test_keystone_refusing_the_credentials_ends_the_run(syncer: Syncer, monkeypatch, tmp_path):
    import os

    import yaml
    document = yaml.safe_load(Path(os.environ["OS_CLIENT_CONFIG_FILE"]).read_text())
    document["clouds"]["sim-admin"]["auth"]["password"] = "rotated-elsewhere"
    rotated = tmp_path / "rotated.yaml"
    rotated.write_text(yaml.safe_dump(document))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(rotated))
    syncer.advance(T1)
    run = failed_run(syncer, syncer.sync(T1))
    assert run.stats["errors"][0].startswith('authenticating against the cloud "sim-admin": ')
    assert syncer.rows() == {}


def test_an_adapter_stuck_past_the_budget_still_ends_the_run(syncer: Syncer, tmp_path: Path):
    # keystoneauth blocks on its own plugin lock when the identity endpoint answers
    # its version document 401; the run must end inside its budget anyway.
    short = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin"}, budget_s=1.5)
    try:
        syncer.advance(T1)
        syncer.world.world.faults.set("identity", status=401)
        run = failed_run(short, short.sync(T1))
        # Ended by its deadline whichever way: killed while stuck (the usual case), or,
        # on a loaded machine, out of budget before its first request was sent.
        assert len(run.stats["errors"]) == 1
        assert run.stats["errors"][0].startswith("the run did not fit its budget of 1.5 s")
    finally:
        short.app.extensions[ENGINE_KEY].dispose()


def test_budget_overrun_fails_the_run_and_books_nothing(syncer: Syncer, tmp_path: Path):
    slow = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin"}, budget_s=1.5)
    try:
        syncer.advance(T1)
        syncer.world.world.faults.set("network", delay_s=3)
        run = failed_run(slow, slow.sync(T1))
        assert "budget of 1.5 s" in run.stats["errors"][-1]
        assert syncer.rows() == {}
    finally:
        slow.app.extensions[ENGINE_KEY].dispose()


def test_unknown_adapter_setting_fails_the_first_run_naming_it(syncer, tmp_path):
    typo = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin", "include_octvia": True})
    try:
        syncer.advance(T1)
        run = failed_run(typo, typo.sync(T1))
        assert run.stats["errors"] == [
            "adapter_config: unknown setting 'include_octvia' (known: os_cloud, services, "
            "include_octavia, accounts_by_domain)"]
    finally:
        typo.app.extensions[ENGINE_KEY].dispose()


@pytest.mark.parametrize("entry, message", [
    ({"name": "x", "platform": "openstack", "adapter": "nova"}, "cloud 'x': adapter 'nova'"),
    ({"name": "x", "platform": "aws", "adapter": "openstack"}, "cloud 'x': platform 'aws'"),
    ({"platform": "openstack", "adapter": "openstack"}, "entry 1: name must be"),
])
def test_bad_clouds_file_refuses_to_start_naming_the_entry(migrated_db, tmp_path, entry,
                                                            message):
    import yaml
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"clouds": [entry]}))
    with pytest.raises(CloudsFileError, match=message):
        create_app(make_conf(migrated_db, tmp_path, path))


def test_include_octavia_off_leaves_load_balancers_alone(syncer: Syncer, tmp_path: Path):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    plain = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin"})
    try:
        syncer.advance(T2)
        run = plain.sync_ok(T2)
        assert "loadbalancer" not in run["stats"]["enumerated_types"]
        gone = [r for r in syncer.truth(T2, live=False, resource_type="loadbalancer")
                if ("loadbalancer", r["resource_id"]) in syncer.rows()]
        assert all(syncer.rows()[("loadbalancer", r["resource_id"])].live for r in gone)
    finally:
        plain.app.extensions[ENGINE_KEY].dispose()


def test_down_cell_servers_are_not_read_as_absent(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    syncer.world.world.faults.down_cell_fraction = 0.5
    syncer.advance(T1 + dt.timedelta(minutes=10))
    run = syncer.sync_ok(T1 + dt.timedelta(minutes=10))
    hidden = [r for r in syncer.truth(live=True, resource_type="instance")
              if syncer.world.world.faults.in_down_cell(r["resource_id"])
              and ("instance", r["resource_id"]) in syncer.rows()]
    assert hidden and all(syncer.rows()[("instance", r["resource_id"])].live for r in hidden)
    assert "instance" in run["stats"]["enumerated_types"]


def test_hidden_images_are_observed(syncer: Syncer):
    syncer.advance(T1)
    syncer.sync_ok(T1)
    hidden = [r for r in syncer.truth(T1, live=True, resource_type="image")
              if r["os_hidden"] and not r["in_transition"]
              and naive(r["updated_at"]) < naive("2026-11-01T05:59:00Z")]
    assert hidden and all(syncer.rows()[("image", r["resource_id"])].live for r in hidden)


@pytest.fixture
def world_config(request) -> WorldConfig:
    if "ownerless" in request.node.name:
        return WorldConfig(seed=5, scale=80, ownerless_image_fraction=0.3)
    return WorldConfig(seed=11, scale=80, daily_turnover=0.5, daily_operations=1.0,
                       hidden_image_fraction=0.2)


def test_ownerless_images_cost_the_image_type(syncer: Syncer):
    syncer.advance(T1)
    run = failed_run(syncer, syncer.sync(T1))
    assert "image" not in run.stats["enumerated_types"]
    assert any(e.startswith("enumerating image: glance names no owner for image ")
               for e in run.stats["errors"])
    assert run.stats["created"] > 0  # what the run established stands


def test_unknown_cloud_is_404_and_a_bad_instant_400(syncer: Syncer):
    assert syncer.client.post("/internal/sync/nope", headers=ADMIN).status_code == 404
    bad = syncer.client.post("/internal/sync/sim?at=yesterday", headers=ADMIN)
    assert bad.status_code == 400
    assert syncer.client.post("/internal/sync/sim", headers=READ).status_code == 403
    assert syncer.client.post("/internal/sync/sim").status_code == 401


def test_sync_runs_are_listed_newest_first_with_pagination(syncer: Syncer):
    syncer.advance(T2)
    for at in (T1, T1 + dt.timedelta(hours=1), T2):
        syncer.sync_ok(at)
    first = syncer.client.get("/v1/sync-runs?cloud=sim&limit=2", headers=READ).get_json()
    assert [r["started_at"] for r in first["items"]] == [
        "2026-11-01T18:00:00.000000Z", "2026-11-01T07:00:00.000000Z"]
    rest = syncer.client.get(f"/v1/sync-runs?limit=2&marker={first['next_marker']}",
                             headers=READ).get_json()
    assert [r["started_at"] for r in rest["items"]] == ["2026-11-01T06:00:00.000000Z"]
    assert rest["next_marker"] is None
    assert rest["items"][0]["status"] == "completed" and "stats" in rest["items"][0]
    assert syncer.client.get("/v1/sync-runs?cloud=other", headers=READ).get_json()["items"] == []
    assert syncer.client.get("/v1/sync-runs?marker=junk", headers=READ).status_code == 400


def test_an_expired_lease_of_a_dead_holder_is_taken_over(syncer: Syncer):
    syncer.advance(T1)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with syncer.factory.begin() as session:
        session.add(SyncRun(id="dead-run", cloud="sim", status="running", started_at=now,
                            completed_at=None, stats={}))
        session.add(SyncLock(cloud="sim", run_id="dead-run", holder="gone:1",
                             acquired_at=now - dt.timedelta(minutes=5),
                             expires_at=now - dt.timedelta(seconds=1)))
    summary = syncer.sync_ok(T1)
    dead = syncer.run("dead-run")
    assert dead.status == "failed"
    # Every key any other run writes, so a reader of sync_runs.stats needs no special case.
    assert set(dead.stats) == set(summary["stats"])
    assert dead.stats["errors"] == ["the run's holder stopped before it finished"]
    assert dead.stats["error_count"] == 1 and dead.stats["created"] == 0
    with syncer.factory() as session:
        assert session.execute(sa.select(SyncLock)).first() is None


def test_a_live_lease_answers_409(syncer: Syncer):
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with syncer.factory.begin() as session:
        session.add(SyncLock(cloud="sim", run_id="other-run", holder="elsewhere:1",
                             acquired_at=now, expires_at=now + dt.timedelta(minutes=2)))
    response = syncer.sync(T1)
    assert response.status_code == 409
    with syncer.factory() as session:
        assert session.execute(sa.select(SyncRun)).first() is None
