"""Real nova behind a real keystone, reconciled by tally-sync.

keystone 30 (tests/functional/keystone/server.py: its virtualenv, cache and server)
holds the accounts: nova's service user (role ``service``), the bootstrap admin and a
member of project ``demo``.  nova (tests/real/nova_driver.py ``--keystone``) runs its
own paste pipeline unstubbed: keystonemiddleware's ``authtoken`` validates every
token with keystone and nova's ``NovaKeystoneContext`` makes the request context.
keystone's catalog lists nova as ``compute``; Tally's clouds.yaml names keystone only,
and the adapter (``services: [compute]``) finds nova in the catalog.  tally-sync asks
the Reporting API to reconcile; the projection must equal nova's own rows.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from mapping.event import format_timestamp
from tests.e2e.harness import BIN, Reporting
from tests.functional.keystone.server import ADMIN_PASSWORD, Admin, running_keystone
from tests.real.conftest import RealNova
from tests.real.test_nova import MIB_PER_GIB, SETTLE_S

CLOUD = "realks"
OS_CLOUD = "real-keystone-admin"
PASSWORD = "secret-" + uuid.uuid4().hex[:8]


def _accounts(admin: Admin) -> dict[str, Any]:
    roles = {r["name"]: r["id"] for r in admin.call("GET", "/roles", expect=200)["roles"]}
    service = admin.project("service")
    demo = admin.project("demo")
    admin.user("nova", PASSWORD, service, roles["service"])
    admin.user("alice", PASSWORD, demo, roles["member"], roles["reader"])
    return {"auth_url": admin.keystone.auth_url,
            "service": {"username": "nova", "password": PASSWORD, "project": "service"},
            "admin": {"username": "admin", "password": ADMIN_PASSWORD, "project": "admin"},
            "member": {"username": "alice", "password": PASSWORD, "project": "demo"}}


def _register_compute(admin: Admin, url: str) -> None:
    service = admin.call("POST", "/services", {"service": {
        "type": "compute", "name": "nova"}})["service"]["id"]
    for interface in ("public", "internal", "admin"):
        admin.call("POST", "/endpoints", {"endpoint": {
            "service_id": service, "interface": interface, "url": url,
            "region_id": "RegionOne"}})


def _clouds_yaml(path: Path, auth_url: str) -> Path:
    path.write_text(yaml.safe_dump({"clouds": {OS_CLOUD: {
        "auth": {"auth_url": auth_url, "username": "admin", "password": ADMIN_PASSWORD,
                 "project_name": "admin", "user_domain_name": "Default",
                 "project_domain_name": "Default"},
        "identity_api_version": 3, "region_name": "RegionOne", "interface": "public"}}}))
    return path


def _tally_sync(tmp_path: Path, reporting: Reporting) -> list[str]:
    token = tmp_path / "sync.token"
    token.write_text("e2e-admin\n")
    config = tmp_path / "sync.conf"
    config.write_text(f"[sync]\napi_url = {reporting.url}\ntoken_file = {token}\n")
    done = subprocess.run(
        [str(BIN / "tally-sync"), "--config-file", str(config), CLOUD,
         "--at", format_timestamp(dt.datetime.now(dt.UTC))],
        capture_output=True, text=True, timeout=300, check=False)
    lines = [str(done.returncode), *done.stdout.splitlines(), *done.stderr.splitlines()]
    assert done.returncode == 0, lines
    return lines


@pytest.mark.postgres
@pytest.mark.rabbit
def test_tally_sync_reconciles_real_nova_behind_real_keystone(
        nova_python: Path, pg_database: str, rabbit_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keystone").mkdir()
    with running_keystone(tmp_path / "keystone") as keystone:
        admin = Admin(keystone)
        accounts = _accounts(admin)
        nova = RealNova(nova_python, tmp_path, rabbit_url, "", f"nova-ks-{uuid.uuid4().hex[:8]}",
                        keystone=accounts)
        reporting = None
        try:
            # keystone's tokens live a minute (server.py): a fresh admin login
            _register_compute(Admin(keystone), nova.compute_url)
            # keystonemiddleware in front: no token, no nova; a token, the member's nova.
            assert requests.get(f"{nova.compute_url}/servers", timeout=60).status_code == 401
            kept = nova.call("create", name="kept")
            nova.call("resize", id=kept, flavor="2")
            nova.call("confirm", id=kept)
            nova.call("stop", id=kept)
            gone = nova.call("create", name="gone")
            nova.call("delete", id=gone)

            monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", str(SETTLE_S))
            reporting = Reporting(tmp_path, pg_database, CLOUD, OS_CLOUD,
                                  _clouds_yaml(tmp_path / "clouds.yaml", keystone.auth_url),
                                  services=["compute"])
            time.sleep(SETTLE_S + 0.5)  # past the settle window of what was just done
            lines = _tally_sync(tmp_path, reporting)
            print(lines)
            records = {r["id"]: r for r in nova.call("records")}
            rows = {row["resource_id"]: row for row in reporting.get(
                "/v1/resources", cloud=CLOUD, resource_type="instance", limit=1000)["items"]}
            # The cloud's first run: what is live now, the deleted one never seen.
            assert set(rows) == {kept}, (rows, lines)
            record = records[kept]
            assert record["project_id"] == nova.project_id
            assert rows[kept]["project_id"] == record["project_id"]
            assert rows[kept]["live"] is True
            flavor = record["flavor"]
            assert rows[kept]["size"] == {
                "vcpus": flavor["vcpus"], "ram_gb": flavor["ram"] / MIB_PER_GIB,
                "disk_gb": flavor["disk"] + flavor["ephemeral"], "flavor": flavor["name"]}
        finally:
            if reporting is not None:
                reporting.stop()
            nova.stop()
