"""A simulated cloud whose keystone fronts a real ``tally-reporting`` (gunicorn,
``auth_strategy = keystone``), with Tally in the catalog: what the keystone, CLI and
``openstack`` plugin tests run against.

Accounts (clouds.yaml entries): ``sim-admin`` (admin: admin), ``sim-member`` (demo,
member and reader of the first project: project_reader), ``sim-viewer`` (keystone role
reader alone, on the first project: project_reader), ``sim-auditor`` (keystone role
tally_auditor: read, every project), ``sim-collector`` (tally_ingest: ingest); the
admin, auditor and collector are on the admin project, which tally-reporting's
``[api] keystone_admin_project_ids`` names (the simulated keystone mints no
system-scoped token).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from simcloud import clouds_yaml
from simcloud.config import WorldConfig
from simcloud.identity import DOMAIN_NAME, User
from simcloud.server import SimCloudServer, running_simcloud
from tests.functional.reporting.fixtures import RunningServer, start_server, write_config

ROLE_MAP = ("admin:admin,member:project_reader,reader:project_reader,"
            "tally_auditor:read,tally_ingest:ingest")
# name: (its only keystone role, its project: "member" is the first project, "admin"
# the admin project, which [api] keystone_admin_project_ids names: tokens scoped to it
# hold cloud-wide roles).
EXTRA_USERS = {"auditor": ("tally_auditor", "admin"), "collector": ("tally_ingest", "admin"),
               "viewer": ("reader", "member")}
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}


@dataclass
class KeystoneCloud:
    sim: SimCloudServer
    api: RunningServer
    clouds: Path  # clouds.yaml with every entry above
    member_project: str
    other_project: str

    def token(self, user: str) -> str:
        account = self.sim.identity.users[user]
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": account.name, "domain": {"name": DOMAIN_NAME},
            "password": account.password}}},
            "scope": {"project": {"name": account.project_name,
                                  "domain": {"name": DOMAIN_NAME}}}}}
        response = requests.post(f"{self.sim.base_url}/identity/v3/auth/tokens", json=body,
                                 timeout=30)
        response.raise_for_status()
        return response.headers["X-Subject-Token"]

    def get(self, path: str, token: str | None, **params: str) -> requests.Response:
        headers = {"X-Auth-Token": token} if token else {}
        return requests.get(self.api.base_url + path, headers=headers, params=params,
                            timeout=60)


def event(number: int, project: str, resource_type: str = "instance") -> dict[str, Any]:
    return {
        "event_id": f"ev-{uuid.uuid4().hex}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "sim", "resource_type": resource_type,
        "resource_id": f"vm-{number}", "project_id": project,
        "timestamp": "2026-11-01T00:00:00Z", "source": "collector",
        "payload": {"state": "active", "size": SMALL},
    }


def reporting_config(workdir: Path, db_url: str, auth_url: str, service: User,
                     admin_project: str, **authtoken: object) -> Path:
    """tally-reporting's configuration: keystone auth against ``auth_url``, logging in
    as ``service``, ``admin_project``'s tokens cloud-wide; ``authtoken`` adds or
    overrides ``[keystone_authtoken]`` options."""
    return write_config(
        workdir / "reporting.conf", db_url, "",
        api={"auth_strategy": "keystone", "tokens_file": "", "keystone_role_map": ROLE_MAP,
             "keystone_admin_project_ids": admin_project},
        keystone_authtoken={
            "auth_type": "password", "auth_url": auth_url, "www_authenticate_uri": auth_url,
            "username": service.name, "password": service.password,
            "project_name": service.project_name, "user_domain_name": DOMAIN_NAME,
            "project_domain_name": DOMAIN_NAME, "interface": "public",
            # Ask keystone on every request, so a revocation shows at once.
            "token_cache_time": -1,
            **authtoken,
        },
    )


def _write_clouds(sim: SimCloudServer, path: Path) -> Path:
    sim.write_clouds_yaml(path)
    document = yaml.safe_load(path.read_text())
    entries = clouds_yaml.entries(sim.base_url, sim.identity, sim.reader_credential)["clouds"]
    for name in EXTRA_USERS:
        entry = dict(entries[clouds_yaml.MEMBER_ENTRY])
        user = sim.identity.users[name]
        entry["auth"] = {**entry["auth"], "username": user.name, "password": user.password,
                         "project_name": user.project_name}
        document["clouds"][f"sim-{name}"] = entry
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@contextlib.contextmanager
def keystone_cloud(db_url: str, workdir: Path, **authtoken: object) -> Iterator[KeystoneCloud]:
    """The simulated cloud and tally-reporting behind its keystone, with two projects'
    instances ingested (vm-1 in the member's project, vm-2 in another); ``authtoken``
    adds ``[keystone_authtoken]`` options."""
    with running_simcloud(WorldConfig(seed=5, scale=0)) as sim:
        member_project = sim.world.projects[0]
        other_project = sim.world.projects[1]
        for name, (role, where) in EXTRA_USERS.items():
            project = member_project if where == "member" else sim.world.admin_project
            sim.identity.add_user(User(uuid.uuid4().hex, name, f"{name}-secret",
                                       project.id, project.name, (role,)))
        config = reporting_config(workdir, db_url, f"{sim.base_url}/identity/v3",
                                  sim.identity.users["tally"], sim.world.admin_project.id,
                                  **authtoken)
        api = start_server(config, workdir / "reporting.log")
        try:
            sim.tally_url = api.base_url
            cloud = KeystoneCloud(sim, api, _write_clouds(sim, workdir / "clouds.yaml"),
                                  member_project.id, other_project.id)
            response = requests.post(
                f"{api.base_url}/v1/events", timeout=60,
                json={"events": [event(1, member_project.id), event(2, other_project.id)]},
                headers={"X-Auth-Token": cloud.token("collector")})
            assert response.status_code == 200, response.text
            assert {item["status"] for item in response.json()["results"]} == {"stored"}
            yield cloud
        finally:
            api.stop()


@contextlib.contextmanager
def stalled_listener() -> Iterator[str]:
    """``http://127.0.0.1:PORT``: a loopback listener that accepts every connection and
    never answers (a keystone whose process hangs), until the block ends."""
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    server.settimeout(0.2)  # so the accepting thread sees the end of the block
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        thread.join(timeout=5)
        server.close()
        for connection in held:
            connection.close()
