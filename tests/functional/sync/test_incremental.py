"""Incremental runs (``[sync] full_listing_interval_s``, docs/reconciliation.md
"Full and incremental runs"), against tally-simcloud and PostgreSQL.

Between full runs a run lists only what changed since the last completed run: it
books creates, updates and nova's reported deletes like a full run, and deletes
nothing for being absent, except of a type it listed whole (load balancers; volumes
on a cinder below 3.60).  The next full run books those.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import request

from mapping.event import format_timestamp
from reporting.app import create_app
from reporting.cmd import sync as sync_cmd
from reporting.db.session import ENGINE_KEY
from simcloud.api import cinder, common
from simcloud.server import SimCloudServer
from tests.functional.sync.conftest import (
    ADMIN,
    START,
    Syncer,
    collector_create,
    make_conf,
    naive,
    write_clouds_file,
)
from tests.functional.sync.test_rules import assert_rows_match, settled_truth

DAY = dt.timedelta(days=1)
T1 = START + dt.timedelta(hours=6)
T2 = T1 + dt.timedelta(hours=12)
T3 = T1 + DAY


@contextlib.contextmanager
def incremental_syncer(world: SimCloudServer, db_url: str, tmp_path: Path) -> Iterator[Syncer]:
    clouds = write_clouds_file(tmp_path, {"os_cloud": "sim-admin", "include_octavia": True})
    conf = make_conf(db_url, tmp_path, clouds, full_listing_interval_s=DAY.total_seconds())
    app = create_app(conf)
    app.config["TESTING"] = True
    try:
        yield Syncer(app, world)
    finally:
        app.extensions[ENGINE_KEY].dispose()


@pytest.fixture
def syncer(world: SimCloudServer, migrated_db: str, tmp_path: Path) -> Iterator[Syncer]:
    with incremental_syncer(world, migrated_db, tmp_path) as running:
        yield running


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str], str]]:
    """(path, query, cinder's microversion header) of every request the cloud answers."""
    seen: list[tuple[str, dict[str, str], str]] = []
    guard = common.guard

    def recording(name: str, *args: Any, **kwargs: Any) -> Any:
        seen.append((request.path, dict(request.args),
                     request.headers.get("OpenStack-API-Version", "")))
        return guard(name, *args, **kwargs)

    monkeypatch.setattr(common, "guard", recording)
    return seen


def _booked_truth(syncer: Syncer, at: dt.datetime) -> list[dict[str, Any]]:
    """What a run at ``at`` owes the projection: the settled truth, less images glance
    holds no data of yet (``queued``: never booked, by either path)."""
    return [r for r in settled_truth(syncer, at)
            if not (r["resource_type"] == "image" and r["state"] == "queued")]


def _gone_since(syncer: Syncer, since: dt.datetime, at: dt.datetime) -> list[dict[str, Any]]:
    """Resources deleted after ``since`` that a run at ``since`` booked (settled then)."""
    booked = {(r["resource_type"], r["resource_id"]) for r in settled_truth(syncer, since)}
    return [r for r in syncer.truth(at, live=False)
            if naive(r["deleted_at"]) > since.replace(tzinfo=None)
            and (r["resource_type"], r["resource_id"]) in booked]


def test_between_full_runs_a_run_books_what_changed_and_deletes_nothing_absent(
        syncer: Syncer) -> None:
    syncer.advance(T1)
    first = syncer.sync_ok(T1)
    assert first["stats"]["kind"] == "full" and first["stats"]["changed_types"] == []
    syncer.advance(T2)
    run = syncer.sync_ok(T2)
    stats = run["stats"]
    assert stats["kind"] == "incremental"
    assert stats["changed_since"] == "2026-11-01T05:59:00.000000Z"  # T1 less the settle window
    assert stats["changed_types"] == ["floating_ip", "image", "instance", "volume"]
    assert stats["enumerated_types"] == ["loadbalancer"]
    # Everything that changed is booked: the projection equals the settled truth.
    assert_rows_match(syncer, _booked_truth(syncer, T2))
    rows = syncer.rows()
    deletes = {e.resource_id: e for e in syncer.events(event_type="sync.delete")}
    gone = _gone_since(syncer, T1, T2)
    kinds = {r["resource_type"] for r in gone}
    assert {"instance", "loadbalancer"} <= kinds and kinds - {"instance", "loadbalancer"}
    for record in gone:
        key = (record["resource_type"], record["resource_id"])
        if record["resource_type"] == "instance":  # nova's deleted listing, its instant
            assert deletes[record["resource_id"]].timestamp == naive(record["deleted_at"])
        elif record["resource_type"] == "loadbalancer":  # listed whole: by absence
            assert deletes[record["resource_id"]].payload["provider"]["dated_by"] == "poll"
        else:  # listed by change: not proven gone, still live
            assert record["resource_id"] not in deletes and rows[key].live, record
    # The next full run books the rest by absence, at its poll.
    syncer.advance(T3)
    full = syncer.sync_ok(T3)
    assert full["stats"]["kind"] == "full"
    assert full["stats"]["enumerated_types"] == [
        "floating_ip", "image", "instance", "loadbalancer", "volume"]
    rows = syncer.rows()
    deletes = {e.resource_id: e for e in syncer.events(event_type="sync.delete")}
    for record in _gone_since(syncer, T1, T3):
        assert not rows[(record["resource_type"], record["resource_id"])].live, record
        if record["resource_type"] not in ("instance", "loadbalancer") and \
                naive(record["deleted_at"]) <= T2.replace(tzinfo=None):
            # Deleted before the incremental run, which did not list it: last seen
            # alive by the full run before, the last that listed everything.
            provider = deletes[record["resource_id"]].payload["provider"]
            assert provider["dated_by"] == "poll" and provider["polled_at"] == \
                "2026-11-02T06:00:00.000000Z", provider
            assert provider["last_seen_alive"] == "2026-11-01T06:00:00.000000Z", provider
    assert_rows_match(syncer, _booked_truth(syncer, T3))
    kinds_listed = syncer.client.get("/v1/sync-runs?cloud=sim",
                                     headers={"Authorization": "Bearer tok-read"}).get_json()
    assert [item["kind"] for item in kinds_listed["items"]] == ["full", "incremental", "full"]


def test_an_incremental_run_asks_each_service_for_its_changes_only(
        syncer: Syncer, listings: list[tuple[str, dict[str, str], str]]) -> None:
    syncer.advance(T1)
    syncer.sync_ok(T1)
    listings.clear()
    syncer.advance(T2)
    syncer.sync_ok(T2)
    since_seconds = "2026-11-01T05:59:00Z"
    by_path: dict[str, list[tuple[dict[str, str], str]]] = {}
    for path, query, header in listings:
        by_path.setdefault(path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1]
                           if path.endswith("detail") else path.rsplit("/", 1)[-1],
                           []).append((query, header))
    # (the admin probe of one server, then the listing and the deleted listing)
    servers = [q for q, _ in by_path["servers/detail"]
               if "deleted" not in q and q.get("limit") != "1"]
    assert servers and all(q.get("changes-since", "").startswith("2026-11-01T05:59:00")
                           for q in servers)
    volumes = by_path["volumes/detail"]
    assert {next(k for k in q if k.endswith("_at")) for q, _ in volumes} == {
        "created_at", "updated_at"}
    assert all(q.get("created_at", q.get("updated_at")) == f"gte:{since_seconds}"
               and header == "volume 3.60" for q, header in volumes)
    assert all(q.get("changed_since") == since_seconds for q, _ in by_path["floatingips"])
    assert all(q.get("updated_at") == f"gte:{since_seconds}" for q, _ in by_path["images"])
    assert all(not q.get("changed_since") and "updated_at" not in q
               for q, _ in by_path["loadbalancers"])


def test_a_cinder_below_3_60_has_its_volumes_listed_whole(
        syncer: Syncer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cinder, "MAX_VERSION", (3, 59))
    syncer.advance(T1)
    syncer.sync_ok(T1)
    syncer.advance(T2)
    stats = syncer.sync_ok(T2)["stats"]
    assert stats["kind"] == "incremental"
    assert stats["changed_types"] == ["floating_ip", "image", "instance"]
    assert stats["enumerated_types"] == ["loadbalancer", "volume"]
    rows = syncer.rows()
    for record in _gone_since(syncer, T1, T2):
        if record["resource_type"] == "volume":
            assert not rows[("volume", record["resource_id"])].live, record


def test_a_run_behind_the_last_completed_one_is_full(syncer: Syncer) -> None:
    syncer.advance(T2)
    syncer.sync_ok(T2)
    assert syncer.sync_ok(T1)["stats"]["kind"] == "full"


def test_a_full_run_can_be_asked_for_between_full_runs(syncer: Syncer) -> None:
    syncer.advance(T1)
    syncer.sync_ok(T1)
    syncer.advance(T2)
    response = syncer.client.post(f"/internal/sync/sim?at={format_timestamp(T2)}&full=true",
                                  headers=ADMIN)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["kind"] == body["stats"]["kind"] == "full"
    assert body["stats"]["enumerated_types"] == [
        "floating_ip", "image", "instance", "loadbalancer", "volume"]
    rows = syncer.rows()
    for record in _gone_since(syncer, T1, T2):  # every delete booked, none waits
        assert not rows[(record["resource_type"], record["resource_id"])].live, record
    refused = syncer.client.post(f"/internal/sync/sim?at={format_timestamp(T2)}&full=maybe",
                                 headers=ADMIN)
    assert refused.status_code == 400
    assert refused.get_json()["error"]["message"] == "full: 'maybe' is neither true nor false"


def test_tally_sync_says_which_kind_ran_and_asks_for_a_full_run(
        syncer: Syncer, served: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    conf = syncer.app.config["TALLY_CONF"]
    token = tmp_path / "admin.token"
    token.write_text("tok-admin\n")
    config = tmp_path / "tally.conf"
    config.write_text(f"[api]\ntokens_file = {conf.api.tokens_file}\n"
                      f"[sync]\nclouds_file = {conf.sync.clouds_file}\napi_url = {served}\n"
                      f"token_file = {token}\n")
    syncer.advance(T2)
    for at, extra in ((T1, []), (T2, []), (T2, ["--full"])):
        assert sync_cmd.main(["--config-file", str(config), "--at", format_timestamp(at),
                              *extra]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("sim: run ")]
    assert len(lines) == 3
    assert "incremental" not in lines[0] and "incremental" not in lines[2]
    assert lines[1].endswith("; incremental (changes since 2026-11-01T05:59:00.000000Z)")
    assert syncer.last_run().kind == "full"


def _wrong_size(syncer: Syncer, resource_id: str, at: dt.datetime) -> dict[str, Any]:
    """A notification of a change octavia never made (its ``updated_at`` stays)."""
    event = collector_create("loadbalancer", resource_id, at,
                             size={"listeners": 99, "pools": 99})
    return {**event, "event_id": f"wrong-{resource_id}",
            "event_type": "octavia.loadbalancer.update.end",
            "project_id": syncer.rows()[("loadbalancer", resource_id)].project_id}


def test_a_listed_whole_resource_unchanged_since_the_bound_is_present_but_not_diffed(
        syncer: Syncer) -> None:
    syncer.advance(T1)
    syncer.sync_ok(T1)
    since = (T1 - dt.timedelta(minutes=1)).timestamp()  # the bound: T1 less the settle window
    end = T2.timestamp()
    balancers = [res for res in syncer.world.world.resources
                 if res.kind == "loadbalancer" and res.exists_at(end)
                 and res.exists_at(T1.timestamp())]
    rows = syncer.rows()
    unchanged = [res.id for res in balancers
                 if res.updated_at(end) < since and rows[("loadbalancer", res.id)].live]
    changed = [res.id for res in balancers
               if res.updated_at(end) >= since and res.phase_at(end).status == "ACTIVE"]
    assert unchanged and changed
    # Both rows made wrong between the runs by a notification of a change octavia never
    # made; only the one octavia changed since the bound is diffed, and corrected.
    at = T1 + dt.timedelta(hours=1)
    syncer.ingest(_wrong_size(syncer, unchanged[0], at), _wrong_size(syncer, changed[0], at))
    syncer.advance(T2)
    stats = syncer.sync_ok(T2)["stats"]
    assert stats["kind"] == "incremental" and stats["enumerated_types"] == ["loadbalancer"]
    rows = syncer.rows()
    assert rows[("loadbalancer", unchanged[0])].size == {"listeners": 99, "pools": 99}
    assert rows[("loadbalancer", changed[0])].size != {"listeners": 99, "pools": 99}
    assert stats["unchanged"] >= len(unchanged)
    # Listed, so present: none of them is deleted for being absent.
    assert all(rows[("loadbalancer", rid)].live for rid in unchanged)
    # The next full run diffs every one.
    syncer.advance(T3)
    full = syncer.sync_ok(T3)
    assert full["stats"]["kind"] == "full" and "unchanged" not in full["stats"]
    assert syncer.rows()[("loadbalancer", unchanged[0])].size != {"listeners": 99, "pools": 99}
    assert_rows_match(syncer, _booked_truth(syncer, T3))
