"""One real keystone per test run, shared by its xdist workers
(tests/functional/keystone/server.py, shared.py), and per worker a keystone-mode
tally-reporting in front of it, registered in the catalog in a keystone region of
its own (so each worker's clients find their own API); the accounts, bootstrapped
once by the worker that starts keystone:

- ``tally`` (role ``service`` on project ``service``): the API's own
  ``[keystone_authtoken]`` user, which validates tokens;
- ``tally-collector`` (``tally_ingest`` on the system): the collector's service user;
- ``tally-sync`` (``tally_admin`` on the system): tally-sync's (Tally's cloud-wide
  roles count in system-scoped tokens only); ``tally-nobody`` (``member`` on
  ``service``) a service user without a Tally role;
- ``alice`` (``member`` of ``alpha``), ``bob`` (``member`` of ``beta``); ``nomad``
  (``member`` of ``alpha``, no default project: its no-scope login is unscoped);
- the catalog service ``usage-history``, each worker's API an endpoint of it in the
  worker's region;
- a small simulated cloud per worker, ``ks-sim`` in the API's clouds file, for
  tally-sync to reconcile through keystone (its own OpenStack APIs are the simulated
  cloud's).

A test that stops keystone takes ``private_deployment`` instead: a keystone and an API
of its own, so the shared keystone never goes away under another worker's tests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer
from tests.conftest import sqlite_copy
from tests.functional.keystone.server import Admin, KeystoneServer, running_keystone, token
from tests.functional.keystone.shared import shared_keystone
from tests.unit.reporting.fixtures import RunningServer, start_server, write_config

ROLE_MAP = ("admin:admin,member:project_reader,reader:project_reader,"
            "tally_ingest:ingest,tally_admin:admin")
PASSWORD = "secret-" + uuid.uuid4().hex[:8]
SIM_CLOUD = "ks-sim"
COLLECTED_CLOUDS = ("ks", "ks-collector")
UNSCOPED_USER = "nomad"


@dataclass
class Deployment:
    keystone: KeystoneServer
    admin: Admin
    api: RunningServer
    db_url: str
    projects: dict[str, str] = field(default_factory=dict)  # name: id
    # alice's token issued at the start of the session, and when (time.monotonic)
    early_token: tuple[str, float] = ("", 0.0)
    users: dict[str, str] = field(default_factory=dict)  # name: id
    password: str = PASSWORD
    world: SimCloudServer | None = None
    region: str = "RegionOne"  # where the catalog lists this deployment's API

    def service_credentials(self, user: str, project: str | None = None) -> str:
        """A ``[service_credentials]`` section logging in as ``user``, with system scope
        (Tally's service roles are held on the system) or scoped to ``project``."""
        scope = (f"project_name = {project}\nproject_domain_name = Default\n" if project
                 else "system_scope = all\n")
        return (f"[service_credentials]\nauth_type = password\n"
                f"auth_url = {self.keystone.auth_url}\nusername = {user}\n"
                f"password = {self.password}\n{scope}"
                "user_domain_name = Default\n"
                f"interface = public\nregion_name = {self.region}\n")

    def event_ids(self, cloud: str) -> list[str]:
        engine = sa.create_engine(self.db_url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text("SELECT event_id FROM events WHERE cloud = :c"),
                                    {"c": cloud})
                return [row[0] for row in rows]
        finally:
            engine.dispose()


def bootstrap(keystone: KeystoneServer) -> dict[str, Any]:
    """Tally's roles, projects and accounts in a new keystone (the module docstring)."""
    admin = Admin(keystone)
    roles = {name: admin.role(name) for name in ("tally_ingest", "tally_admin")}
    existing = admin.call("GET", "/roles", expect=200)["roles"]
    roles.update({role["name"]: role["id"] for role in existing})
    projects = {name: admin.project(name) for name in ("service", "alpha", "beta")}
    admin.user("tally", PASSWORD, projects["service"], roles["service"])
    admin.user("tally-collector", PASSWORD, projects["service"],
               system_roles=(roles["tally_ingest"],))
    admin.user("tally-sync", PASSWORD, projects["service"],
               system_roles=(roles["tally_admin"],))
    admin.user("tally-nobody", PASSWORD, projects["service"], roles["member"])
    alice = admin.user("alice", PASSWORD, projects["alpha"], roles["member"])
    admin.user("bob", PASSWORD, projects["beta"], roles["member"])
    # A member of alpha without a default project: asked for no scope, keystone
    # gives it an unscoped token (no roles, no catalog).
    admin.user(UNSCOPED_USER, PASSWORD, projects["alpha"], roles["member"],
               default_project=False)
    service = admin.call("POST", "/services", {"service": {
        "type": "usage-history", "name": "tally"}})["service"]["id"]
    # The password travels with the data: the workers' PASSWORD constants differ.
    return {"projects": projects, "users": {"alice": alice}, "password": PASSWORD,
            "service": service}


@contextmanager
def deployed(workdir: Path, keystone: KeystoneServer, accounts: dict[str, Any],
             template: Path) -> Iterator[Deployment]:
    """A keystone-mode tally-reporting (its own database and simulated cloud) in front
    of ``keystone``, listed in the catalog in a region of its own."""
    admin = Admin(keystone)
    password = accounts["password"]
    region = f"tally-{uuid.uuid4().hex[:8]}"
    admin.call("POST", "/regions", {"region": {"id": region}})
    early = (token(keystone, "alice", password, project="alpha"), time.monotonic())
    db_url = sqlite_copy(template, workdir / "tally.sqlite")
    world = SimCloudServer(WorldConfig(seed=23, scale=5))
    world.start()
    try:
        clouds_yaml = world.write_clouds_yaml(workdir / "clouds.yaml")
        clouds_file = workdir / "tally-clouds.yaml"
        # The API refuses events of a cloud its clouds file does not name: the clouds
        # the tests post to (collected, not reconciled) and the one tally-sync runs.
        clouds_file.write_text(yaml.safe_dump({"clouds": [
            {"name": name, "platform": "openstack", "adapter": "openstack"}
            for name in COLLECTED_CLOUDS] + [{
            "name": SIM_CLOUD, "platform": "openstack", "adapter": "openstack",
            "adapter_config": {"os_cloud": "sim-admin"}}]}))
        config = write_config(
            workdir / "reporting.conf", db_url, "",
            sync={"clouds_file": str(clouds_file)},
            api={"auth_strategy": "keystone", "tokens_file": "", "keystone_role_map": ROLE_MAP},
            keystone_authtoken={
                "auth_type": "password", "auth_url": keystone.auth_url,
                "www_authenticate_uri": keystone.auth_url, "username": "tally",
                "password": password, "project_name": "service",
                "user_domain_name": "Default", "project_domain_name": "Default",
                "service_type": "usage-history", "interface": "public",
                "token_cache_time": -1,  # a revocation shows at once
                # One keystone serves every worker of the run, on a machine the tests
                # load: Tally's 5 s default would turn a slow answer into a 503.
                "http_connect_timeout": 30,
            })
        api = start_server(config, workdir / "reporting.log",
                           env={"OS_CLIENT_CONFIG_FILE": str(clouds_yaml)})
        try:
            admin.service_endpoint(accounts["service"], api.base_url, region)
            yield Deployment(keystone, admin, api, db_url, dict(accounts["projects"]), early,
                             dict(accounts["users"]), password=password, world=world,
                             region=region)
        finally:
            api.stop()
    finally:
        world.stop()


def _run_root(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The directory every worker of this run shares (xdist gives each its own basetemp
    under it)."""
    basetemp = tmp_path_factory.getbasetemp()
    return basetemp if worker_id == "master" else basetemp.parent


@pytest.fixture(scope="session")
def deployment(tmp_path_factory: pytest.TempPathFactory, worker_id: str,
               sqlite_migrated_template: Path) -> Iterator[Deployment]:
    """This worker's API in front of the run's shared keystone."""
    workdir = tmp_path_factory.mktemp("keystone")
    with shared_keystone(_run_root(tmp_path_factory, worker_id), bootstrap) as (
            keystone, accounts):
        with deployed(workdir, keystone, accounts, sqlite_migrated_template) as found:
            yield found


@pytest.fixture
def private_deployment(tmp_path_factory: pytest.TempPathFactory,
                       sqlite_migrated_template: Path) -> Iterator[Deployment]:
    """A keystone of the test's own, for a test that stops and restarts it (the shared
    one serves other tests meanwhile), with its own API."""
    workdir = tmp_path_factory.mktemp("keystone-private")
    with running_keystone(workdir) as keystone:
        accounts = bootstrap(keystone)
        with deployed(workdir, keystone, accounts, sqlite_migrated_template) as found:
            yield found
