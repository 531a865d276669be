"""Tally against real nova 34: the collector, the syncs, and nova's own records.

nova (tests/real/nova_driver.py, its own virtualenv) publishes its legacy
notifications on the real RabbitMQ through oslo.messaging; the real tally-collector
delivers them to the real tally-reporting, whose syncs read nova's API over
loopback HTTP.  The identity service and the services this nova does not run
(cinder, neutron, glance, octavia) are the simulated cloud's: the clouds.yaml entry
is its admin's, with ``compute_endpoint_override`` naming the real nova.

Four instances: one lives its whole scripted life with every notification sent; one
is created and deleted with both sent; one's notifications are all dropped (the
sync must book its create); one is created with its notifications sent and deleted
with them dropped (the sync must book its delete at nova's ``terminated_at``).  The
end state equals nova's own database rows.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import oslo_messaging
import pytest
import requests
import yaml
from oslo_config import cfg

from mapping.event import format_timestamp, parse_timestamp
from mapping.openstack import map_notification
from simcloud.clouds_yaml import ADMIN_ENTRY
from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer
from tests.e2e.harness import Collector, Reporting, wait_until
from tests.unit.simcloud.apihelp import password_token

CLOUD = "realnova"
SETTLE_S = 2.0
MIB_PER_GIB = 1024


class Witness:
    """A second pool on nova's exchange: every notification exactly as RabbitMQ carried
    it (envelope timestamp and message_id included)."""

    def __init__(self, rabbit_url: str, exchange: str, pool: str) -> None:
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        conf = cfg.ConfigOpts()
        conf([], project="tally-real-witness", default_config_files=[],
             default_config_dirs=[])
        self.transport = oslo_messaging.get_notification_transport(conf, url=rabbit_url)
        target = oslo_messaging.Target(topic="notifications", exchange=exchange)
        self.listener = oslo_messaging.get_notification_listener(
            self.transport, [target], [self], executor="threading", pool=pool)
        self.listener.start()

    def info(self, ctxt: Any, publisher_id: Any, event_type: str, payload: Any,
             metadata: Any) -> None:
        with self.lock:
            self.received.append({"ctxt": ctxt, "publisher_id": publisher_id,
                                  "event_type": event_type, "payload": payload,
                                  "metadata": metadata})

    warn = error = info  # every priority nova may use, counted alike

    def count(self) -> int:
        with self.lock:
            return len(self.received)

    def stop(self) -> None:
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()


def _clouds_yaml(world: SimCloudServer, path: Path, compute_url: str) -> Path:
    world.write_clouds_yaml(path)
    document = yaml.safe_load(path.read_text())
    document["clouds"][ADMIN_ENTRY]["compute_endpoint_override"] = compute_url
    path.write_text(yaml.safe_dump(document))
    return path


def _instant(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    moment = dt.datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _size(record: dict[str, Any]) -> dict[str, Any]:
    flavor = record["flavor"]
    return {"vcpus": flavor["vcpus"], "ram_gb": flavor["ram"] / MIB_PER_GIB,
            "disk_gb": flavor["disk"] + flavor["ephemeral"], "flavor": flavor["name"]}


def _sync_until_settled(reporting: Reporting) -> list[dict[str, Any]]:
    """Syncs until one defers nothing (the settle window holds back what just changed)."""
    runs: list[dict[str, Any]] = []
    for _ in range(10):
        time.sleep(SETTLE_S + 0.5)  # past the window of what the script just did
        response = reporting.sync(CLOUD, format_timestamp(dt.datetime.now(dt.UTC)))
        assert response.status_code == 200, response.text
        runs.append(response.json())
        if not _deferred(runs[-1]):
            return runs
    raise AssertionError(f"every sync deferred something: {runs}")


def _deferred(run: dict[str, Any]) -> int:
    return sum(int(count) for count in run["stats"]["deferred"].values())


@pytest.mark.postgres
@pytest.mark.rabbit
def test_tally_against_real_nova(real_nova_factory: Any, pg_database: str, rabbit_url: str,
                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    exchange = f"nova-real-{tag}"
    world = SimCloudServer(WorldConfig(seed=24, scale=5, empty_start=True))
    world.start()
    witness = Witness(rabbit_url, exchange, f"tally-real-{tag}-witness")
    reporting = collector = None
    try:
        nova = real_nova_factory(rabbit_url, f"{world.base_url}/identity", exchange)
        clouds_yaml = _clouds_yaml(world, tmp_path / "clouds.yaml", nova.compute_url)
        monkeypatch.setenv("TALLY_REPORTING_SYNC_SETTLE_S", str(SETTLE_S))
        reporting = Reporting(tmp_path, pg_database, CLOUD, ADMIN_ENTRY, clouds_yaml)
        collector = Collector(tmp_path, CLOUD, rabbit_url, reporting.url,
                              f"tally-real-{tag}", [exchange])
        wait_until(lambda: "consuming notifications" in collector.process.tail(), 120,
                   "the collector to consume")

        # A cloud's first run asks nova for no deleted servers (it has no window yet):
        # Tally syncs this cloud before anything happens in it, as a deployment does.
        [baseline] = _sync_until_settled(reporting)
        assert baseline["stats"]["created"] == 0, baseline

        # The scripted life, all sent.
        kept = nova.call("create", name=f"kept-{tag}")
        for op, args in (("stop", {}), ("start", {}), ("resize", {"flavor": "2"}),
                         ("confirm", {}), ("resize", {"flavor": "1"}), ("revert", {}),
                         ("shelve", {}), ("offload", {}), ("unshelve", {}),
                         ("rebuild", {})):
            nova.call(op, id=kept, **args)
        collected = nova.call("create", name=f"collected-{tag}")
        nova.call("delete", id=collected)
        # Every notification of this one dropped: only a sync can book it.
        nova.call("mute", name=f"missed-create-{tag}")
        missed_create = nova.call("create", name=f"missed-create-{tag}")
        # Created with its notifications sent, deleted with them dropped.
        missed_delete = nova.call("create", name=f"missed-delete-{tag}")
        nova.call("mute", name=missed_delete)
        nova.call("delete", id=missed_delete)

        sent = [n for n in nova.call("notifications") if n["sent"]]
        dropped = [n for n in nova.call("notifications") if not n["sent"]]
        assert {n["payload"]["instance_id"] for n in dropped
                if n["event_type"].startswith("compute.instance.")} == {missed_create,
                                                                       missed_delete}
        wait_until(lambda: witness.count() >= len(sent), 120,
                   f"RabbitMQ to carry nova's {len(sent)} notifications")
        assert witness.count() == len(sent)

        # What Tally's table books of what nova sent, exactly as the collector must store it.
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
            for instance in (kept, collected, missed_create, missed_delete):
                path = f"/v1/resources/openstack/{CLOUD}/instance/{instance}/events"
                try:
                    events = reporting.get(path, limit=1000)["items"]
                except Exception:  # noqa: BLE001 - 404 until its first event is stored
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

        runs = _sync_until_settled(reporting)
        records = {r["id"]: r for r in nova.call("records")}
        totals = {key: sum(int(run["stats"][key]) for run in runs)
                  for key in ("created", "restated", "updated", "deleted")}
        # The missed create is booked at nova's created, before the poll, and restated
        # at the poll; the missed delete at terminated_at; nothing else differs.
        assert totals == {"created": 1, "restated": 1, "updated": 0, "deleted": 1}, runs

        rows = {row["resource_id"]: row for row in reporting.get(
            "/v1/resources", cloud=CLOUD, resource_type="instance", limit=1000)["items"]}
        assert set(rows) == set(records)
        for instance, record in records.items():
            row = rows[instance]
            assert row["project_id"] == record["project_id"]
            assert row["live"] is (not record["deleted"])
            assert row["size"] == _size(record), instance
        # Deletes: the collector's at the notification it stored, the sync's at nova's
        # terminated_at; a create the sync booked at nova's created.
        delete_sent = next(e for e in expected.values() if e["resource_id"] == collected
                           and e["event_type"] == "compute.instance.delete.end")
        create_sent = next(e for e in expected.values() if e["resource_id"] == collected
                           and e["event_type"] == "compute.instance.create.end")
        # The two paths' instants for one instance (docs/reconciliation.md, "The two
        # paths' dates"): nova's created (whole seconds, at the API) <= launched_at <
        # the create.end's send time; terminated_at < deleted_at < the delete.end's.
        figures = {name: _instant(records[collected][name])
                   for name in ("created_at", "launched_at", "terminated_at", "deleted_at")}
        figures["create.end sent"] = parse_timestamp(create_sent["timestamp"])
        figures["delete.end sent"] = parse_timestamp(delete_sent["timestamp"])
        print({name: format_timestamp(value) for name, value in figures.items() if value})
        assert figures["created_at"] <= figures["launched_at"] < figures["create.end sent"]
        assert figures["created_at"].microsecond == 0
        assert figures["terminated_at"] < figures["deleted_at"] < figures["delete.end sent"]
        assert parse_timestamp(rows[collected]["created_at"]) == figures["create.end sent"]
        assert parse_timestamp(rows[collected]["deleted_at"]) == \
            parse_timestamp(delete_sent["timestamp"])
        assert parse_timestamp(rows[missed_delete]["deleted_at"]) == \
            _instant(records[missed_delete]["terminated_at"])
        assert parse_timestamp(rows[missed_create]["created_at"]) == \
            _instant(records[missed_create]["created_at"])

        # Lifecycles: contiguous, from the create to the delete, ending in nova's size.
        for instance, record in records.items():
            intervals = reporting.get(
                f"/v1/resources/openstack/{CLOUD}/instance/{instance}/lifecycle")["intervals"]
            assert intervals, instance
            for before, after in zip(intervals, intervals[1:], strict=False):
                assert before["end"] == after["start"], (instance, intervals)
            assert intervals[0]["start"] == rows[instance]["created_at"]
            assert intervals[-1]["end"] == rows[instance]["deleted_at"]
            assert intervals[-1]["size"] == _size(record), (instance, intervals)
            assert {i["project_id"] for i in intervals} == {record["project_id"]}
        assert intervals_of(reporting, kept)[-1]["state"] == "active"
    finally:
        if collector is not None:
            collector.stop()
        if reporting is not None:
            reporting.stop()
        witness.stop()
        world.stop()


def intervals_of(reporting: Reporting, instance: str) -> list[dict[str, Any]]:
    path = f"/v1/resources/openstack/{CLOUD}/instance/{instance}/lifecycle"
    intervals: list[dict[str, Any]] = reporting.get(path)["intervals"]
    return intervals


def test_populate_writes_instances_the_api_lists_and_pages(real_nova_factory: Any) -> None:
    """The driver's ``populate`` (bench/real_pages.py's resources): instances in nova's
    cell database that nova's own API lists for the admin across projects, in pages
    linked by its markers; a count below one is refused."""
    world = SimCloudServer(WorldConfig(seed=34, scale=5, empty_start=True))
    world.start()
    try:
        nova = real_nova_factory("fake:/", f"{world.base_url}/identity", "nova-populate")
        created = nova.call("populate", count=3, projects=2)
        headers = {"X-Auth-Token": password_token(world, "admin"),
                   "OpenStack-API-Version": "compute 2.69"}
        url: str | None = f"{nova.compute_url}/servers/detail?all_tenants=1&limit=2"
        listed: list[dict[str, Any]] = []
        while url is not None:
            answer = requests.get(url, headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text
            listed.extend(answer.json()["servers"])
            url = next((link["href"] for link in answer.json().get("servers_links", [])
                        if link["rel"] == "next"), None)
        assert sorted(s["id"] for s in listed) == sorted(created)
        assert {s["tenant_id"] for s in listed} == {f"{0:032x}", f"{1:032x}"}
        assert {(s["status"], s["flavor"]["original_name"]) for s in listed} == \
            {("ACTIVE", "m1.tiny")}
        assert {r["id"] for r in nova.call("records")} == set(created)
        with pytest.raises(AssertionError, match="count >= 1"):
            nova.call("populate", count=0)
    finally:
        world.stop()
