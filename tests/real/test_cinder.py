"""Tally against real cinder 29: the collector, the syncs, and cinder's own records.

cinder (tests/real/cinder_driver.py, a virtualenv of its own built from
tests/real/cinder-requirements.txt) runs its API, scheduler and one volume service on
cinder's fake volume driver with SQLite, behind the simulated cloud's identity
service, and publishes its notifications on the real RabbitMQ through cinder's own
oslo.messaging notifier.  The real tally-collector delivers them to the real
tally-reporting, whose syncs read cinder's ``/v3/{project}/volumes/detail`` over
loopback HTTP.  The clouds file names the services ``compute`` (required: the admin
probe; the simulated cloud's, empty) and ``block-storage`` (the real cinder,
``block_storage_endpoint_override`` in the clouds.yaml entry).

Four volumes: one lives a whole life with every notification sent (create, extend,
retype to a second type); one is created and deleted; one's notifications are all
dropped (the sync must book it at cinder's created_at); one is created with its
notifications sent and deleted with them dropped (the sync's absence pass must delete
it, at its poll).  The end state equals cinder's own rows.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from openstack import config as os_config

from mapping.event import format_timestamp, parse_timestamp
from mapping.openstack import map_notification
from simcloud.clouds_yaml import ADMIN_ENTRY
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer
from tests.e2e.harness import Collector, Reporting, wait_until
from tests.real.service_process import ServiceProcess, service_python, venv_path
from tests.real.test_nova import Witness
from tests.unit.simcloud.apihelp import password_token

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "cinder-requirements.txt"
DRIVER = HERE / "cinder_driver.py"
START_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 120
CLOUD = "realcinder"
SETTLE_S = 2.0
# The microversion the script speaks (3.60's time filters are the adapter's, not ours).
SCRIPT_VERSION = "volume 3.0"


@pytest.fixture(scope="session")
def cinder_python() -> Path:
    """The python of the cinder virtualenv, built on first use (one builder at a time)."""
    return service_python("cinder", venv_path("cinder-29", REQUIREMENTS), REQUIREMENTS,
                          "cinder.tests.fake_driver",
                          env={"OS_CINDER_DISABLE_EVENTLET_PATCHING": "true"})


class RealCinder(ServiceProcess):
    """One cinder_driver.py process: cinder's services, its API on a loopback port."""

    def __init__(self, python: Path, workdir: Path, transport_url: str, identity_url: str,
                 exchange: str) -> None:
        super().__init__("cinder", python, DRIVER,
                         ["--workdir", str(workdir), "--transport-url", transport_url,
                          "--identity-url", identity_url, "--exchange", exchange],
                         workdir, starting="cinder's services to start",
                         start_timeout=START_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S)
        self.volume_url: str = self.ready["volume_url"]


@pytest.fixture
def real_cinder_factory(cinder_python: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[RealCinder] = []

    def start(transport_url: str, identity_url: str, exchange: str) -> RealCinder:
        cinder = RealCinder(cinder_python, tmp_path / "cinder", transport_url,
                            identity_url, exchange)
        started.append(cinder)
        return cinder

    try:
        yield start
    finally:
        for cinder in started:
            cinder.stop()


class CinderClient:
    """cinder's v3 API over HTTP with a clouds.yaml entry's token and project."""

    def __init__(self, clouds_yaml: Path, entry: str, volume_url: str) -> None:
        session = os_config.OpenStackConfig(
            config_files=[str(clouds_yaml)]).get_one(entry).get_session()
        self.token = session.get_token()
        self.project_id = str(session.get_project_id())
        self.url = f"{volume_url}/v3/{self.project_id}"

    def request(self, method: str, path: str, expect: int, **kwargs: Any) -> Any:
        headers = {"X-Auth-Token": self.token, "OpenStack-API-Version": SCRIPT_VERSION,
                   **kwargs.pop("headers", {})}
        answer = requests.request(method, f"{self.url}{path}", headers=headers,
                                  timeout=60, **kwargs)
        assert answer.status_code == expect, (method, path, answer.status_code, answer.text)
        return answer.json() if answer.content else None

    def volume(self, volume: str) -> dict[str, Any] | None:
        answer = requests.get(f"{self.url}/volumes/{volume}", timeout=60,
                              headers={"X-Auth-Token": self.token})
        if answer.status_code == 404:
            return None
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()["volume"]
        return found

    def settled(self, volume: str, **want: Any) -> dict[str, Any]:
        """Wait until cinder's answer for ``volume`` carries ``want`` (status available
        unless told)."""
        want = {"status": "available", **want}
        seen: dict[str, Any] = {}

        def done() -> bool:
            seen.clear()
            seen.update(self.volume(volume) or {})
            assert seen.get("status") not in ("error", "error_extending"), seen
            return all(seen.get(k) == v for k, v in want.items())

        wait_until(done, 120, f"volume {volume} to have {want}")
        return dict(seen)

    def gone(self, volume: str) -> None:
        wait_until(lambda: self.volume(volume) is None, 120, f"volume {volume} to go")

    def create(self, name: str, size: int) -> str:
        created = self.request("POST", "/volumes", 202,
                               json={"volume": {"name": name, "size": size}})
        volume = str(created["volume"]["id"])
        self.settled(volume)
        return volume

    def action(self, volume: str, body: dict[str, Any]) -> None:
        self.request("POST", f"/volumes/{volume}/action", 202, json=body)

    def delete(self, volume: str) -> None:
        self.request("DELETE", f"/volumes/{volume}", 202)
        self.gone(volume)


# What the adapter asks (volumes/detail whole at the default microversion and with
# 3.60's time filters, the types) and a page of one; written under the test's directory
# as tests/fixtures/api/cinder29_* were captured.
ANSWERS = (
    ("volumes-detail", "/volumes/detail", None, {"all_tenants": "1"}),
    ("v3.60_volumes-detail", "/volumes/detail", "3.60", {"all_tenants": "1"}),
    ("v3.70_volumes-detail", "/volumes/detail", "3.70", {"all_tenants": "1"}),
    ("volumes-detail-page", "/volumes/detail", None, {"all_tenants": "1", "limit": "1"}),
    ("types", "/types", None, {"is_public": "None"}),
)


def capture_answers(client: CinderClient, volume_url: str, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for name, path, version, params in ANSWERS:
        headers = {"X-Auth-Token": client.token}
        if version is not None:
            headers["OpenStack-API-Version"] = f"volume {version}"
        answer = requests.get(f"{client.url}{path}", headers=headers, params=params,
                              timeout=60)
        assert answer.status_code == 200, (name, answer.text)
        (into / f"cinder29_{name}.json").write_text(json.dumps({
            "request": answer.url, "microversion": version, "account": "admin",
            "status": answer.status_code,
            "content_type": answer.headers.get("Content-Type"),
            "body": answer.json()}, indent=2))
    root = requests.get(f"{volume_url}/", timeout=60)
    (into / "cinder29_versions.json").write_text(json.dumps({
        "request": root.url, "status": root.status_code,
        "content_type": root.headers.get("Content-Type"), "body": root.json()}, indent=2))


def project_of(clouds_yaml: Path, entry: str) -> str:
    session = os_config.OpenStackConfig(config_files=[str(clouds_yaml)]).get_one(
        entry).get_session()
    return str(session.get_project_id())


def _clouds_yaml(world: SimCloudServer, path: Path, volume_url: str) -> Path:
    """The simulated cloud's clouds.yaml, its admin entry's block storage the real cinder
    (cinder's endpoints name the project, as a catalog's do)."""
    world.write_clouds_yaml(path)
    project = project_of(path, ADMIN_ENTRY)
    document = yaml.safe_load(path.read_text())
    document["clouds"][ADMIN_ENTRY]["block_storage_endpoint_override"] = \
        f"{volume_url}/v3/{project}"
    path.write_text(yaml.safe_dump(document))
    return path


def _instant(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    moment = dt.datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _sync_until_settled(reporting: Reporting) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for _ in range(10):
        time.sleep(SETTLE_S + 0.5)  # past the window of what the script just did
        response = reporting.sync(CLOUD, format_timestamp(dt.datetime.now(dt.UTC)))
        assert response.status_code == 200, response.text
        runs.append(response.json())
        assert not runs[-1]["stats"].get("errors"), runs[-1]
        if not sum(int(n) for n in runs[-1]["stats"]["deferred"].values()):
            return runs
    raise AssertionError(f"every sync deferred something: {runs}")


def _volume_messages(witness: Witness) -> list[dict[str, Any]]:
    with witness.lock:
        return [m for m in witness.received if m["event_type"].startswith("volume.")]


@pytest.mark.postgres
@pytest.mark.rabbit
def test_tally_against_real_cinder(real_cinder_factory: Any, pg_database: str,
                                   rabbit_url: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    exchange = f"cinder-real-{tag}"
    world = SimCloudServer(WorldConfig(seed=29, scale=5, empty_start=True))
    world.start()
    witness = Witness(rabbit_url, exchange, f"tally-real-{tag}-witness")
    reporting = collector = None
    try:
        cinder = real_cinder_factory(rabbit_url, f"{world.base_url}/identity", exchange)
        clouds_yaml = _clouds_yaml(world, tmp_path / "clouds.yaml", cinder.volume_url)
        monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", str(SETTLE_S))
        reporting = Reporting(tmp_path, pg_database, CLOUD, ADMIN_ENTRY, clouds_yaml,
                              services=["compute", "block-storage"])
        collector = Collector(tmp_path, CLOUD, rabbit_url, reporting.url,
                              f"tally-real-{tag}", [exchange])
        wait_until(lambda: "consuming notifications" in collector.process.tail(), 120,
                   "the collector to consume")
        [baseline] = _sync_until_settled(reporting)
        assert baseline["stats"]["created"] == 0, baseline

        client = CinderClient(clouds_yaml, ADMIN_ENTRY, cinder.volume_url)
        # No token, no identity: cinder's own CinderKeystoneContext answers 401.
        assert requests.get(f"{client.url}/volumes/detail", timeout=60).status_code == 401
        fast = client.request("POST", "/types", 200, json={
            "volume_type": {"name": f"fast-{tag}", "extra_specs": {}}})["volume_type"]
        # A sync stores the new type's name (ingest then books the retype's type id by
        # it, as a deployment whose types predate their use does).
        _sync_until_settled(reporting)
        kept = client.create(f"kept-{tag}", 1)
        client.action(kept, {"os-extend": {"new_size": 2}})
        client.settled(kept, size=2)
        client.action(kept, {"os-retype": {"new_type": fast["name"],
                                           "migration_policy": "never"}})
        client.settled(kept, volume_type=fast["name"])
        collected = client.create(f"collected-{tag}", 1)
        capture_answers(client, cinder.volume_url, tmp_path / "api-answers")
        client.delete(collected)
        cinder.call("mute", name=f"missed-create-{tag}")
        missed_create = client.create(f"missed-create-{tag}", 3)
        missed_delete = client.create(f"missed-delete-{tag}", 1)
        cinder.call("mute", name=missed_delete)
        client.delete(missed_delete)

        notified = [n for n in cinder.call("notifications")
                    if n["event_type"].startswith("volume.")]
        sent = [n for n in notified if n["sent"]]
        assert {n["payload"]["volume_id"] for n in notified if not n["sent"]} == \
            {missed_create, missed_delete}
        wait_until(lambda: len(_volume_messages(witness)) >= len(sent), 120,
                   f"RabbitMQ to carry cinder's {len(sent)} volume notifications")
        received = _volume_messages(witness)
        assert sorted(m["event_type"] for m in received) == \
            sorted(n["event_type"] for n in sent)
        # What RabbitMQ carried, kept beside the run's logs (the captures' source).
        (tmp_path / "cinder-notifications.json").write_text(
            json.dumps(received, indent=2, default=str))

        expected = {}
        for message in received:
            mapped = map_notification(CLOUD, message["ctxt"], message["publisher_id"],
                                      message["event_type"], message["payload"],
                                      message["metadata"])
            if mapped is not None:
                expected[mapped["event_id"]] = mapped
        assert {e["event_type"] for e in expected.values()} == {
            "volume.create.end", "volume.resize.end", "volume.retype",
            "volume.delete.end"}

        def stored_by_collector() -> dict[str, dict[str, Any]]:
            found = {}
            for volume in (kept, collected, missed_create, missed_delete):
                path = f"/v1/resources/openstack/{CLOUD}/volume/{volume}/events"
                try:
                    events = reporting.get(path, limit=1000)["items"]
                except requests.HTTPError:  # 404 until its first event is stored
                    continue
                found.update({e["event_id"]: e for e in events if e["source"] == "collector"})
            return found

        type_names = {t["id"]: t["name"] for t in client.request(
            "GET", "/types", 200, params={"is_public": "None"})["volume_types"]}
        wait_until(lambda: len(stored_by_collector()) >= len(expected), 120,
                   f"the collector to store {len(expected)} events")
        stored = stored_by_collector()
        assert set(stored) == set(expected)
        for event_id, event in stored.items():
            want = expected[event_id]
            assert {k: event[k] for k in ("event_type", "resource_id", "project_id")} == \
                {k: want[k] for k in ("event_type", "resource_id", "project_id")}
            assert parse_timestamp(event["timestamp"]) == parse_timestamp(want["timestamp"])
            # ingest books a volume's type by the name the sync stored for its id
            booked = dict(want["payload"])
            if "size" in booked:
                booked["size"] = {**booked["size"], "type": type_names[booked["size"]["type"]]}
            assert event["payload"] == booked, event_id

        before_sync = dt.datetime.now(dt.UTC)
        runs = _sync_until_settled(reporting)
        totals = {key: sum(int(run["stats"][key]) for run in runs)
                  for key in ("created", "updated", "deleted")}
        # The missed create booked from cinder's listing, the missed delete by absence.
        assert totals == {"created": 1, "updated": 0, "deleted": 1}, runs

        records = {r["id"]: r for r in cinder.call("records")}
        assert set(records) == {kept, collected, missed_create, missed_delete}
        rows = {row["resource_id"]: row for row in reporting.get(
            "/v1/resources", cloud=CLOUD, resource_type="volume", limit=1000)["items"]}
        assert set(rows) == set(records)
        for volume, record in records.items():
            row = rows[volume]
            assert row["project_id"] == record["project_id"], volume
            assert row["live"] is (not record["deleted"]), (volume, record)
            assert row["size"] == {"size_gb": record["size"],
                                   "type": record["volume_type_name"]}, (volume, row)
            if not record["deleted"]:
                assert row["state"] == record["status"], (volume, row)
        assert {v: (r["status"], r["size"]) for v, r in records.items()} == {
            kept: ("available", 2), collected: ("deleted", 1),
            missed_create: ("available", 3), missed_delete: ("deleted", 1)}
        assert records[kept]["volume_type_name"] == fast["name"]

        def sent_of(volume: str, event_type: str) -> dt.datetime:
            [event] = [e for e in expected.values() if e["resource_id"] == volume
                       and e["event_type"] == event_type]
            return parse_timestamp(event["timestamp"])

        # The collector's dates: volume.create.end's and volume.delete.end's send times.
        assert parse_timestamp(rows[kept]["created_at"]) == \
            sent_of(kept, "volume.create.end")
        assert parse_timestamp(rows[collected]["created_at"]) == \
            sent_of(collected, "volume.create.end")
        assert parse_timestamp(rows[collected]["deleted_at"]) == \
            sent_of(collected, "volume.delete.end")
        # The sync's: cinder's created_at for the missed create (the API's and the row's
        # are the same instant), the poll for the missed delete (cinder lists no
        # deleted volumes).
        cinder_created = _instant(records[missed_create]["created_at"])
        assert parse_timestamp(rows[missed_create]["created_at"]) == cinder_created
        assert parse_timestamp(rows[missed_delete]["deleted_at"]) >= before_sync
        figures = {"cinder created_at": _instant(records[collected]["created_at"]),
                   "volume.create.end sent": sent_of(collected, "volume.create.end"),
                   "cinder deleted_at": _instant(records[collected]["deleted_at"]),
                   "volume.delete.end sent": sent_of(collected, "volume.delete.end")}
        print({name: format_timestamp(value) for name, value in figures.items() if value})

        for volume, record in records.items():
            intervals = reporting.get(
                f"/v1/resources/openstack/{CLOUD}/volume/{volume}/lifecycle")["intervals"]
            assert intervals, volume
            for before, after in zip(intervals, intervals[1:], strict=False):
                assert before["end"] == after["start"], (volume, intervals)
            assert intervals[0]["start"] == rows[volume]["created_at"]
            assert intervals[-1]["end"] == rows[volume]["deleted_at"]
            assert intervals[-1]["size"] == rows[volume]["size"]
            assert {i["project_id"] for i in intervals} == {record["project_id"]}
        # The kept volume's life: 1 GiB, then 2 GiB, then 2 GiB of the second type.
        kept_sizes = [i["size"] for i in reporting.get(
            f"/v1/resources/openstack/{CLOUD}/volume/{kept}/lifecycle")["intervals"]]
        assert [s["size_gb"] for s in kept_sizes][-1] == 2
        assert kept_sizes[0]["size_gb"] == 1
    finally:
        if collector is not None:
            collector.stop()
        if reporting is not None:
            reporting.stop()
        witness.stop()
        world.stop()


def test_populate_writes_volumes_the_api_lists_and_pages(real_cinder_factory: Any) -> None:
    """The driver's ``populate`` (bench/real_pages.py's resources): volumes in cinder's
    database that cinder's own API lists for the admin across projects, in pages
    linked by its markers; a count below one is refused."""
    world = SimCloudServer(WorldConfig(seed=29, scale=5, empty_start=True))
    world.start()
    try:
        cinder = real_cinder_factory("fake:/", f"{world.base_url}/identity",
                                     "cinder-populate")
        created = cinder.call("populate", count=3, projects=2)
        admin = world.identity.users["admin"]
        headers = {"X-Auth-Token": password_token(world, "admin")}
        url: str | None = (f"{cinder.volume_url}/v3/{admin.project_id}/volumes/detail"
                           "?all_tenants=1&limit=2")
        listed: list[dict[str, Any]] = []
        while url is not None:
            answer = requests.get(url, headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text
            listed.extend(answer.json()["volumes"])
            url = next((link["href"] for link in answer.json().get("volumes_links", [])
                        if link["rel"] == "next"), None)
        assert sorted(v["id"] for v in listed) == sorted(created)
        assert {v["os-vol-tenant-attr:tenant_id"] for v in listed} == \
            {f"{0:032x}", f"{1:032x}"}
        assert {(v["status"], v["volume_type"], v["size"]) for v in listed} == \
            {("available", "__DEFAULT__", 1)}
        assert {r["id"] for r in cinder.call("records")} == set(created)
        with pytest.raises(AssertionError, match="count >= 1"):
            cinder.call("populate", count=0)
    finally:
        world.stop()
