"""Tally's services log in to a keystone-mode Reporting API through a real keystone:
the collector delivers a stream as its service user while tokens expire and keystone
restarts, every notification stored exactly once; tally-sync reaches the API as its
admin-role account; a revoked token is replaced after the API's 401."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
from oslo_config import cfg

from mapping.event import format_timestamp
from tally_common import service_auth
from tally_common.service_auth import ServiceSettings, api_client
from tests.functional.collector.harness import (
    CollectorProcess,
    WirePublisher,
    delete_queues,
    wait_until,
    wire_message,
)
from tests.functional.keystone.conftest import SIM_CLOUD, Deployment
from tests.functional.keystone.server import TOKEN_EXPIRATION_S, token

BIN = Path(sys.executable).parent


def _publish(rabbit_url: str, topic: str, start: int, count: int) -> set[str]:
    ids = set()
    publisher = WirePublisher(rabbit_url)
    try:
        for i in range(start, start + count):
            message_id = str(uuid.uuid4())
            ids.add(message_id)
            publisher.publish("nova", topic, wire_message(
                "compute.instance.create.end",
                {"instance_id": f"i-{i}", "tenant_id": "p", "state": "active", "vcpus": 1,
                 "memory_mb": 512, "root_gb": 1, "instance_type": "m1.tiny"},
                {"project_id": "p"}, "compute.h", message_id))
    finally:
        publisher.close()
    return ids


@pytest.mark.rabbit
def test_the_collector_delivers_through_its_service_user_across_expiry_and_restart(
    private_deployment: Deployment, rabbit_url: str, tmp_path: Path
) -> None:
    # Keystone restarts in this test: a keystone of its own, not the run's shared one.
    deployment = private_deployment
    uid = uuid.uuid4().hex[:10]
    # A cloud the API's clouds file names (tests/functional/keystone/conftest.py).
    cloud, topic, pool = "ks-collector", f"notifications-{uid}", f"tally-ks-{uid}"
    config = tmp_path / "collector.conf"
    # No reporting_url: the API is found in keystone's catalog (usage-history).
    config.write_text(
        f"[DEFAULT]\ntransport_url = {rabbit_url}\n"
        f"[collector]\ncloud = {cloud}\npool = {pool}\ntopics = {topic}\n"
        f"exchanges = nova\nbuffer_dir = {tmp_path / 'buffer'}\nmetrics_bind =\n"
        "retry_initial_delay_s = 0.1\nretry_max_delay_s = 1.0\n"
        + deployment.service_credentials("tally-collector"))
    log = tmp_path / "collector.log"
    collector = CollectorProcess(config, log)
    started = time.monotonic()
    collector.start()
    try:
        wait_until(lambda: b"; consuming notifications" in log.read_bytes(), 120,
                   "the collector to consume")
        published = _publish(rabbit_url, topic, 0, 200)
        wait_until(lambda: len(deployment.event_ids(cloud)) >= 200, 120,
                   "the first 200 events in the API")
        # Keystone goes away and comes back while notifications keep arriving: the
        # collector buffers them and delivers once it can log in again.
        deployment.keystone.stop()
        published |= _publish(rabbit_url, topic, 200, 200)
        wait_until(lambda: b"Delivery failed" in log.read_bytes(), 120,
                   "a delivery that fails while keystone is down")
        deployment.keystone.start()
        wait_until(lambda: len(deployment.event_ids(cloud)) >= 400, 180,
                   "the events sent while keystone restarted")
        # Every token of the collector's start has expired by now.
        wait_until(lambda: time.monotonic() > started + TOKEN_EXPIRATION_S + 5,
                   TOKEN_EXPIRATION_S + 60, "the first tokens to expire")
        published |= _publish(rabbit_url, topic, 400, 200)
        wait_until(lambda: len(deployment.event_ids(cloud)) >= 600, 180,
                   "the events sent after the first tokens expired")
        stored = deployment.event_ids(cloud)
        assert len(stored) == len(set(stored)) == len(published) == 600
        text = log.read_text(errors="replace")
        assert "keystone catalog usage-history endpoint" in text, text[-3000:]
    finally:
        if collector.alive():
            collector.terminate()
        delete_queues(rabbit_url, [pool, f"{topic}.info"])


def _sync(tmp_path: Path, deployment: Deployment, user: str, *args: str,
          project: str | None = None) -> list[str]:
    config = tmp_path / f"sync-{user}.conf"
    config.write_text("[sync]\n" + deployment.service_credentials(user, project))
    result = subprocess.run([str(BIN / "tally-sync"), "--config-file", str(config), *args],
                            capture_output=True, text=True, timeout=300)
    return [str(result.returncode), *result.stdout.splitlines(), *result.stderr.splitlines()]


def test_tally_sync_logs_in_and_finds_the_api_in_the_catalog(
    deployment: Deployment, tmp_path: Path
) -> None:
    code, *lines = _sync(tmp_path, deployment, "tally-sync", "nowhere")
    # Through keystone and authorised as admin: the API itself answers for the cloud.
    assert lines[0].startswith("Reporting API: keystone catalog usage-history endpoint"), lines
    assert lines[1] == "nowhere: HTTP 404: the clouds file names no cloud 'nowhere'", lines
    assert code == "1"
    # A user with no Tally role (member of the service project, logged in there).
    code, *lines = _sync(tmp_path, deployment, "tally-nobody", "nowhere", project="service")
    assert code == "1" and lines[1].startswith("nowhere: HTTP 403"), lines


def test_tally_sync_reconciles_a_cloud_through_keystone(deployment: Deployment,
                                                        tmp_path: Path) -> None:
    """A keystone-only deployment: tally-sync logs in as its service user, finds the API
    in the catalog and the API runs the sync (the cloud's own APIs are simulated)."""
    assert deployment.world is not None
    at = deployment.world.world.config.start + dt.timedelta(hours=2)
    deployment.world.world.advance_to(at)
    code, *lines = _sync(tmp_path, deployment, "tally-sync", SIM_CLOUD,
                         "--at", format_timestamp(at))
    assert code == "0", lines
    assert lines[1].startswith(f"{SIM_CLOUD}: run ") and " completed: created " in lines[1], lines
    created = int(lines[1].split(" completed: created ")[1].split()[0])
    assert created > 0 and len(deployment.event_ids(SIM_CLOUD)) >= created


def test_a_wrong_password_is_one_line_naming_keystone(deployment: Deployment,
                                                      tmp_path: Path) -> None:
    config = tmp_path / "sync.conf"
    config.write_text("[sync]\n" + deployment.service_credentials("tally-sync").replace(
        deployment.password, "wrong"))
    result = subprocess.run([str(BIN / "tally-sync"), "--config-file", str(config), "x"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stdout.splitlines()[1].startswith(
        f"x: the Reporting API was not reached: keystone at {deployment.keystone.auth_url} "
        "refused the [service_credentials] login: HTTP 401"), result.stdout


def test_a_revoked_token_is_replaced_after_the_apis_401(deployment: Deployment) -> None:
    conf = cfg.ConfigOpts()
    service_auth.register_opts(conf)
    settings = ServiceSettings("svc", "api_url", "token_file")
    conf.register_opts([cfg.StrOpt("api_url"), cfg.StrOpt("token_file"),
                        service_auth.strategy_opt("[svc] api_url", "[svc] token_file")],
                       group="svc")
    conf([], project="tally-functional-test", default_config_files=[])
    conf.set_override("auth_type", "password", group="service_credentials")
    service_auth.register_plugin_opts(conf)
    for name, value in {"auth_url": deployment.keystone.auth_url, "username": "tally-sync",
                        "password": deployment.password, "system_scope": "all",
                        "user_domain_name": "Default"}.items():
        conf.set_override(name, value, group="service_credentials")
    # This worker's API: the xdist workers sharing keystone each list their own in its
    # catalog, in a region of its own; without one the catalog may give another's.
    conf.set_override("region_name", deployment.region, group="service_credentials")
    client = api_client(conf, settings, None)
    assert client.request("GET", "/v1/clouds", timeout=30).status_code == 200
    adapter = client._adapter()  # type: ignore[attr-defined]
    first = adapter.session.get_token()
    revoked = requests.delete(f"{deployment.keystone.auth_url}/auth/tokens", timeout=30,
                              headers={"X-Auth-Token": token(
                                  deployment.keystone, "admin", "admin-secret",
                                  project="admin"), "X-Subject-Token": first})
    assert revoked.status_code == 204
    direct = requests.get(f"{deployment.api.base_url}/v1/clouds", timeout=30,
                          headers={"X-Auth-Token": first})
    assert direct.status_code == 401  # the API no longer takes it
    assert client.request("GET", "/v1/clouds", timeout=30).status_code == 200
    assert adapter.session.get_token() != first
