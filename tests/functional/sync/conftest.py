"""Reconciliation against the real simulated cloud and a real PostgreSQL.

``world``: a small simcloud serving its APIs on a loopback port, its clouds.yaml
named by OS_CLIENT_CONFIG_FILE.  ``syncer``: a migrated database, a Reporting API
(Flask test client, token auth) whose clouds file names the simulated cloud, and
helpers to sync, ingest collector events and read rows.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from flask import Flask
from oslo_config import cfg
from werkzeug.serving import make_server

from mapping.event import format_timestamp, parse_timestamp
from reporting import opts
from reporting.app import create_app
from reporting.db.models import CurrentResource, Event, SyncRun
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from reporting.ingest import ingest
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer

CLOUD = "sim"
START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
TOKENS = {"tok-admin": "admin", "tok-read": "read"}
ADMIN = {"Authorization": "Bearer tok-admin"}
READ = {"Authorization": "Bearer tok-read"}


def naive(value: str) -> dt.datetime:
    return parse_timestamp(value).replace(tzinfo=None)


@pytest.fixture
def world_config() -> WorldConfig:
    """Override in a test module for another world."""
    return WorldConfig(seed=11, scale=80, daily_turnover=0.5, daily_operations=1.0,
                       hidden_image_fraction=0.2)


@pytest.fixture
def world(world_config: WorldConfig, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[SimCloudServer]:
    server = SimCloudServer(world_config)
    server.start()
    path = server.write_clouds_yaml(tmp_path / "clouds.yaml")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
    for variable in ("OS_REGION_NAME", "OS_INTERFACE", "OS_CLIENT_SECURE_FILE",
                     "TALLY_REPORTING_SYNC_BUDGET_S", "TALLY_REPORTING_SYNC_SETTLE_S"):
        monkeypatch.delenv(variable, raising=False)
    try:
        yield server
    finally:
        server.stop()


def write_clouds_file(directory: Path, adapter_config: dict[str, Any],
                      name: str = CLOUD) -> Path:
    path = directory / "tally-clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": [{
        "name": name, "platform": "openstack", "adapter": "openstack",
        "adapter_config": adapter_config}]}))
    return path


def make_conf(db_url: str, tmp_path: Path, clouds_file: Path | None, **sync: Any
              ) -> cfg.ConfigOpts:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump(TOKENS))
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project="tally", default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", db_url, group="database")
    conf.set_override("tokens_file", str(tokens), group="api")
    if clouds_file is not None:
        conf.set_override("clouds_file", str(clouds_file), group="sync")
    for name, value in sync.items():
        conf.set_override(name, value, group="sync")
    return conf


@pytest.fixture
def migrated_db(pg_migrated_database: str) -> str:
    return pg_migrated_database


class Syncer:
    """A Reporting API with the simulated cloud in its clouds file."""

    def __init__(self, app: Flask, world: SimCloudServer) -> None:
        self.app = app
        self.client = app.test_client()
        self.world = world
        self.factory = app.extensions[SESSIONMAKER_KEY]

    # -- clock and sync -----------------------------------------------------------------

    def advance(self, at: dt.datetime) -> None:
        self.world.world.advance_to(at)

    def sync(self, at: dt.datetime | None = None, cloud: str = CLOUD) -> Any:
        query = f"?at={format_timestamp(at)}" if at is not None else ""
        return self.client.post(f"/internal/sync/{cloud}{query}", headers=ADMIN)

    def sync_ok(self, at: dt.datetime) -> dict[str, Any]:
        response = self.sync(at)
        assert response.status_code == 200, (response.get_json(), self.last_run().stats)
        return response.get_json()

    def last_run(self) -> SyncRun:
        with self.factory() as session:
            return session.execute(
                sa.select(SyncRun).order_by(SyncRun.completed_at.desc()).limit(1)
            ).scalar_one()

    def run(self, run_id: str) -> SyncRun:
        with self.factory() as session:
            return session.get(SyncRun, run_id)

    # -- projection ------------------------------------------------------------------------

    def rows(self) -> dict[tuple[str, str], CurrentResource]:
        with self.factory() as session:
            return {(r.resource_type, r.resource_id): r
                    for r in session.execute(sa.select(CurrentResource)).scalars()}

    def events(self, **filters: Any) -> list[Event]:
        query = sa.select(Event).order_by(Event.seq)
        for name, value in filters.items():
            query = query.where(getattr(Event, name) == value)
        with self.factory() as session:
            return list(session.execute(query).scalars())

    def ingest(self, *events: dict[str, Any]) -> None:
        results = ingest(self.factory, list(events), require_size_schema=False)
        assert all(r.status == "stored" for r in results), results

    def truth(self, at: dt.datetime | None = None, **filters: Any) -> list[dict[str, Any]]:
        return self.world.world.truth(at, **filters)


@pytest.fixture
def sync_settings() -> dict[str, Any]:
    return {"include_octavia": True}


@contextlib.contextmanager
def running_syncer(world: SimCloudServer, db_url: str, tmp_path: Path,
                   clouds: Path) -> Iterator[Syncer]:
    """A Syncer whose API reads the clouds file ``clouds``."""
    app = create_app(make_conf(db_url, tmp_path, clouds))
    app.config["TESTING"] = True
    try:
        yield Syncer(app, world)
    finally:
        app.extensions[ENGINE_KEY].dispose()


@pytest.fixture
def syncer(world: SimCloudServer, migrated_db: str, tmp_path: Path,
           sync_settings: dict[str, Any]) -> Iterator[Syncer]:
    clouds = write_clouds_file(tmp_path, {"os_cloud": "sim-admin", **sync_settings})
    with running_syncer(world, migrated_db, tmp_path, clouds) as running:
        yield running


@pytest.fixture
def served(syncer: Syncer) -> Iterator[str]:
    """The syncer's API served over HTTP on a loopback port (for tally-sync, tally)."""
    server = make_server("127.0.0.1", 0, syncer.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)


def collector_create(resource_type: str, resource_id: str, at: dt.datetime,
                     project: str = "p-collector", size: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    payload: dict[str, Any] = {"state": "active"}
    if size is not None:
        payload["size"] = size
    return {
        "event_id": f"collector-{resource_type}-{resource_id}-{at.isoformat()}",
        "event_type": {"instance": "compute.instance.create.end",
                       "volume": "volume.create.end",
                       "floating_ip": "floatingip.create.end",
                       "image": "image.create",
                       "loadbalancer": "octavia.loadbalancer.create.end"}[resource_type],
        "platform": "openstack", "cloud": CLOUD, "resource_type": resource_type,
        "resource_id": resource_id, "project_id": project,
        "timestamp": format_timestamp(at), "source": "collector", "payload": payload,
    }
