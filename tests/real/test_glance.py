"""Tally against real glance 33: the collector, the syncs, and glance's own records.

glance-api (tests/real/glance_driver.py, a virtualenv of its own built from
tests/real/glance-requirements.txt) serves glance's own WSGI application with the
file store and SQLite, behind the simulated cloud's identity service, and publishes
its notifications on the real RabbitMQ through glance's own oslo.messaging notifier.
The real tally-collector delivers them to the real tally-reporting, whose syncs read
glance's ``/v2/images`` over loopback HTTP.  The clouds file names the services
``compute`` (required: the admin probe; the simulated cloud's, empty) and ``image``
(the real glance, ``image_endpoint_override`` in the clouds.yaml entry).

Four images: one lives a whole life with every notification sent (create, upload,
rename and a property, deactivate, reactivate); one is created, uploaded and deleted;
one's notifications are all dropped (the sync must book it at glance's created_at);
one is uploaded with its notifications sent and deleted with them dropped (the sync's
absence pass must delete it, at its poll).  The end state equals glance's own rows.
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
REQUIREMENTS = HERE / "glance-requirements.txt"
DRIVER = HERE / "glance_driver.py"
START_TIMEOUT_S = 300
COMMAND_TIMEOUT_S = 120
CLOUD = "realglance"
SETTLE_S = 2.0
GIB = 1024**3
PATCH = "application/openstack-images-v2.1-json-patch"


@pytest.fixture(scope="session")
def glance_python() -> Path:
    """The python of the glance virtualenv, built on first use (one builder at a time)."""
    return service_python("glance", venv_path("glance-33", REQUIREMENTS), REQUIREMENTS,
                          "glance.common.wsgi_app")


class RealGlance(ServiceProcess):
    """One glance_driver.py process: glance-api on a loopback port."""

    def __init__(self, python: Path, workdir: Path, transport_url: str, identity_url: str,
                 exchange: str) -> None:
        super().__init__("glance", python, DRIVER,
                         ["--workdir", str(workdir), "--transport-url", transport_url,
                          "--identity-url", identity_url, "--exchange", exchange],
                         workdir, starting="glance-api to start",
                         start_timeout=START_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S)
        self.image_url: str = self.ready["image_url"]


@pytest.fixture
def real_glance_factory(glance_python: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[RealGlance] = []

    def start(transport_url: str, identity_url: str, exchange: str) -> RealGlance:
        glance = RealGlance(glance_python, tmp_path / "glance", transport_url,
                            identity_url, exchange)
        started.append(glance)
        return glance

    try:
        yield start
    finally:
        for glance in started:
            glance.stop()


class GlanceClient:
    """glance's v2 API over HTTP with the clouds.yaml entry's token."""

    def __init__(self, clouds_yaml: Path, entry: str, image_url: str) -> None:
        region = os_config.OpenStackConfig(config_files=[str(clouds_yaml)]).get_one(entry)
        self.token = region.get_session().get_token()
        self.url = f"{image_url}/v2"

    def request(self, method: str, path: str, expect: int, **kwargs: Any) -> Any:
        headers = {"X-Auth-Token": self.token, **kwargs.pop("headers", {})}
        answer = requests.request(method, f"{self.url}{path}", headers=headers,
                                  timeout=60, **kwargs)
        assert answer.status_code == expect, (method, path, answer.status_code, answer.text)
        return answer.json() if answer.content and "json" in answer.headers.get(
            "Content-Type", "") else None

    def create(self, name: str, data: bytes) -> str:
        image = self.request("POST", "/images", 201, json={
            "name": name, "disk_format": "raw", "container_format": "bare"})
        self.request("PUT", f"/images/{image['id']}/file", 204, data=data,
                     headers={"Content-Type": "application/octet-stream"})
        return str(image["id"])

    def patch(self, image: str, ops: list[dict[str, Any]]) -> None:
        self.request("PATCH", f"/images/{image}", 200, data=json.dumps(ops),
                     headers={"Content-Type": PATCH})


def _clouds_yaml(world: SimCloudServer, path: Path, image_url: str) -> Path:
    world.write_clouds_yaml(path)
    document = yaml.safe_load(path.read_text())
    document["clouds"][ADMIN_ENTRY]["image_endpoint_override"] = image_url
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


@pytest.mark.postgres
@pytest.mark.rabbit
def test_tally_against_real_glance(real_glance_factory: Any, pg_database: str,
                                   rabbit_url: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    exchange = f"glance-real-{tag}"
    world = SimCloudServer(WorldConfig(seed=33, scale=5, empty_start=True))
    world.start()
    witness = Witness(rabbit_url, exchange, f"tally-real-{tag}-witness")
    reporting = collector = None
    try:
        glance = real_glance_factory(rabbit_url, f"{world.base_url}/identity", exchange)
        clouds_yaml = _clouds_yaml(world, tmp_path / "clouds.yaml", glance.image_url)
        monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", str(SETTLE_S))
        reporting = Reporting(tmp_path, pg_database, CLOUD, ADMIN_ENTRY, clouds_yaml,
                              services=["compute", "image"])
        collector = Collector(tmp_path, CLOUD, rabbit_url, reporting.url,
                              f"tally-real-{tag}", [exchange])
        wait_until(lambda: "consuming notifications" in collector.process.tail(), 120,
                   "the collector to consume")
        [baseline] = _sync_until_settled(reporting)
        assert baseline["stats"]["created"] == 0, baseline

        client = GlanceClient(clouds_yaml, ADMIN_ENTRY, glance.image_url)
        kept = client.create(f"kept-{tag}", b"k" * 3 * 1024 * 1024)
        client.patch(kept, [{"op": "replace", "path": "/name", "value": f"kept2-{tag}"},
                            {"op": "add", "path": "/tally_note", "value": "x"}])
        client.request("POST", f"/images/{kept}/actions/deactivate", 204)
        client.request("POST", f"/images/{kept}/actions/reactivate", 204)
        collected = client.create(f"collected-{tag}", b"c" * 1024 * 1024)
        client.request("DELETE", f"/images/{collected}", 204)
        glance.call("mute", name=f"missed-create-{tag}")
        missed_create = client.create(f"missed-create-{tag}", b"m" * 2 * 1024 * 1024)
        missed_delete = client.create(f"missed-delete-{tag}", b"d" * 1024)
        glance.call("mute", name=missed_delete)
        client.request("DELETE", f"/images/{missed_delete}", 204)

        notified = glance.call("notifications")
        sent = [n for n in notified if n["sent"]]
        assert {n["payload"]["id"] for n in notified if not n["sent"]} == \
            {missed_create, missed_delete}
        wait_until(lambda: witness.count() >= len(sent), 120,
                   f"RabbitMQ to carry glance's {len(sent)} notifications")
        assert witness.count() == len(sent)
        # What RabbitMQ carried, kept beside the run's logs (the captures' source).
        (tmp_path / "glance-notifications.json").write_text(
            json.dumps(witness.received, indent=2, default=str))

        expected = {}
        for message in witness.received:
            mapped = map_notification(CLOUD, message["ctxt"], message["publisher_id"],
                                      message["event_type"], message["payload"],
                                      message["metadata"])
            if mapped is not None:
                expected[mapped["event_id"]] = mapped
        assert expected

        def stored_by_collector() -> dict[str, dict[str, Any]]:
            found = {}
            for image in (kept, collected, missed_create, missed_delete):
                path = f"/v1/resources/openstack/{CLOUD}/image/{image}/events"
                try:
                    events = reporting.get(path, limit=1000)["items"]
                except requests.HTTPError:  # 404 until its first event is stored
                    continue
                found.update({e["event_id"]: e for e in events if e["source"] == "collector"})
            return found

        wait_until(lambda: len(stored_by_collector()) >= len(expected), 120,
                   f"the collector to store {len(expected)} events")
        stored = stored_by_collector()
        assert set(stored) == set(expected)
        for event_id, event in stored.items():
            want = expected[event_id]
            assert {k: event[k] for k in ("event_type", "resource_id", "project_id")} == \
                {k: want[k] for k in ("event_type", "resource_id", "project_id")}
            assert parse_timestamp(event["timestamp"]) == parse_timestamp(want["timestamp"])
            assert event["payload"] == want["payload"], event_id

        before_sync = dt.datetime.now(dt.UTC)
        runs = _sync_until_settled(reporting)
        totals = {key: sum(int(run["stats"][key]) for run in runs)
                  for key in ("created", "updated", "deleted")}
        # The missed create booked from glance's listing, the missed delete by absence.
        assert totals == {"created": 1, "updated": 0, "deleted": 1}, runs

        records = {r["id"]: r for r in glance.call("records")}
        assert set(records) == {kept, collected, missed_create, missed_delete}
        rows = {row["resource_id"]: row for row in reporting.get(
            "/v1/resources", cloud=CLOUD, resource_type="image", limit=1000)["items"]}
        assert set(rows) == set(records)
        for image, record in records.items():
            row = rows[image]
            assert row["project_id"] == record["owner"]
            assert row["live"] is (not record["deleted"]), (image, record)
            assert row["size"] == {"size_gb": record["size"] / GIB}, image
        assert {i: r["status"] for i, r in records.items()} == {
            kept: "active", collected: "deleted", missed_create: "active",
            missed_delete: "deleted"}

        def sent_of(image: str, event_type: str) -> dt.datetime:
            """The send time of Tally's event of ``image`` (image.upload books
            image.create), as the collector dates it."""
            [event] = [e for e in expected.values() if e["resource_id"] == image
                       and e["event_type"] == event_type]
            return parse_timestamp(event["timestamp"])

        # The collector's dates: image.upload's send time, image.delete's.
        assert parse_timestamp(rows[collected]["created_at"]) == \
            sent_of(collected, "image.create")
        assert parse_timestamp(rows[collected]["deleted_at"]) == \
            sent_of(collected, "image.delete")
        assert parse_timestamp(rows[kept]["created_at"]) == sent_of(kept, "image.create")
        # The sync's: glance's created_at for the missed create, the poll for the
        # missed delete (glance lists no deleted images).
        # glance's API writes created_at in whole seconds; its row keeps microseconds.
        glance_created = _instant(records[missed_create]["created_at"])
        assert glance_created is not None
        assert parse_timestamp(rows[missed_create]["created_at"]) == \
            glance_created.replace(microsecond=0)
        assert parse_timestamp(rows[missed_delete]["deleted_at"]) >= before_sync
        figures = {"glance created_at": _instant(records[collected]["created_at"]),
                   "image.upload sent": sent_of(collected, "image.create"),
                   "glance deleted_at": _instant(records[collected]["deleted_at"]),
                   "image.delete sent": sent_of(collected, "image.delete")}
        print({name: format_timestamp(value) for name, value in figures.items() if value})

        for image, record in records.items():
            intervals = reporting.get(
                f"/v1/resources/openstack/{CLOUD}/image/{image}/lifecycle")["intervals"]
            assert intervals, image
            for before, after in zip(intervals, intervals[1:], strict=False):
                assert before["end"] == after["start"], (image, intervals)
            assert intervals[0]["start"] == rows[image]["created_at"]
            assert intervals[-1]["end"] == rows[image]["deleted_at"]
            assert intervals[-1]["size"] == {"size_gb": record["size"] / GIB}
            assert {i["project_id"] for i in intervals} == {record["owner"]}
    finally:
        if collector is not None:
            collector.stop()
        if reporting is not None:
            reporting.stop()
        witness.stop()
        world.stop()


def test_populate_writes_images_the_api_lists_and_pages(real_glance_factory: Any) -> None:
    """The driver's ``populate`` (bench/real_pages.py's resources): images in glance's
    database that glance's own API lists for the admin across owners, in pages linked
    by its next links; a count below one is refused."""
    world = SimCloudServer(WorldConfig(seed=33, scale=5, empty_start=True))
    world.start()
    try:
        glance = real_glance_factory("fake:/", f"{world.base_url}/identity",
                                     "glance-populate")
        created = glance.call("populate", count=3, projects=2)
        headers = {"X-Auth-Token": password_token(world, "admin")}
        url: str | None = "/v2/images?visibility=all&member_status=all&limit=2"
        listed: list[dict[str, Any]] = []
        while url is not None:
            answer = requests.get(f"{glance.image_url}{url}", headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text
            listed.extend(answer.json()["images"])
            url = answer.json().get("next")
        assert sorted(i["id"] for i in listed) == sorted(created)
        assert {i["owner"] for i in listed} == {f"{0:032x}", f"{1:032x}"}
        assert {(i["status"], i["visibility"], i["os_hidden"]) for i in listed} == \
            {("active", "private", False)}
        assert {r["id"] for r in glance.call("records")} == set(created)
        with pytest.raises(AssertionError, match="count >= 1"):
            glance.call("populate", count=0)
    finally:
        world.stop()
