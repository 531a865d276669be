"""A cloud without cinder (keystone's catalog has no block-storage): with the entry
naming the services the cloud runs, every run completes, the deleted-servers listing
opens and instance deletes are dated at nova's instant; volumes are not observed, so
never reconciled.  Naming block-storage on such a cloud still fails the run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from mapping.event import format_timestamp
from simcloud.config import WorldConfig
from tests.functional.sync.conftest import (
    START,
    Syncer,
    naive,
    running_syncer,
    write_clouds_file,
)

SETTLE = dt.timedelta(seconds=60)
T1 = START + dt.timedelta(hours=6)
T2 = T1 + dt.timedelta(hours=12)


@pytest.fixture
def world_config() -> WorldConfig:
    return WorldConfig(seed=11, scale=80, daily_turnover=0.5, daily_operations=1.0,
                       absent_services=frozenset({"block-storage"}))


@pytest.fixture
def sync_settings() -> dict[str, Any]:
    return {"services": ["compute", "network", "image", "load-balancer"]}


def test_runs_complete_and_instance_deletes_are_dated_by_nova(syncer: Syncer):
    syncer.advance(T1)
    first = syncer.sync_ok(T1)["stats"]
    assert first["enumerated_types"] == ["floating_ip", "image", "instance", "loadbalancer"]
    syncer.advance(T2)
    run = syncer.sync_ok(T2)
    stats = run["stats"]
    assert run["status"] == "completed" and stats["errors"] == []
    assert stats["deletion_window"] == {
        "since": format_timestamp(T1 - SETTLE), "clamped": False, "deleted_at_poll": 0}
    assert not syncer.events(resource_type="volume")  # not observed, never reconciled
    truth = {(r["resource_type"], r["resource_id"]): r for r in syncer.truth(T2)}
    deletes = syncer.events(event_type="sync.delete")
    assert [e.resource_id for e in deletes
            if truth[(e.resource_type, e.resource_id)]["live"]] == []  # nothing live
    instances = [e for e in deletes if e.resource_type == "instance"]
    assert instances
    for event in instances:
        assert event.payload["provider"]["dated_by"] == "platform"
        assert event.timestamp == naive(truth[("instance", event.resource_id)]["deleted_at"])


def test_naming_block_storage_on_a_cloud_without_it_fails_the_run(
        syncer: Syncer, tmp_path: Path):
    (tmp_path / "named").mkdir()
    # The default services name block-storage, which this cloud's catalog lacks.
    clouds = write_clouds_file(tmp_path / "named", {"os_cloud": "sim-admin"})
    with running_syncer(syncer.world, syncer.app.config["TALLY_CONF"].database.connection,
                        tmp_path / "named", clouds) as named:
        syncer.advance(T1)
        response = named.sync(T1)
        assert response.status_code == 500
        run = named.run(response.get_json()["run_id"])
    assert any(error.startswith("enumerating volume: ") and "block-storage" in error
               for error in run.stats["errors"]), run.stats["errors"]
    assert "volume" not in run.stats["enumerated_types"]
    assert not syncer.events(event_type="sync.delete", resource_type="volume")
