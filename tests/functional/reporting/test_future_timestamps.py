"""An event dated past its cloud's present plus ``[ingest] max_future_skew_s`` is refused,
dead-lettered with the reason and replayable once the option (or the sender's clock) is
fixed; a wall-clock sync cannot be told such an instant.  Both backends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from flask import Flask
from flask.testing import FlaskClient

from mapping.event import format_timestamp
from reporting.app import create_app
from reporting.clock import utcnow
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth


def _event(n: int, timestamp: dt.datetime, cloud: str = "c1") -> dict[str, Any]:
    return {"event_id": f"fut-{n}", "event_type": "floatingip.update.end",
            "platform": "openstack", "cloud": cloud, "resource_type": "floating_ip",
            "resource_id": f"fip-{n}", "project_id": "p1",
            "timestamp": format_timestamp(timestamp), "source": "collector",
            "payload": {"state": "ACTIVE"}}


def _post(client: FlaskClient, *events: dict[str, Any]) -> list[dict[str, Any]]:
    body = client.post("/v1/events", json={"events": list(events)}, headers=auth("ingest"))
    assert body.status_code == 200, body.get_data(as_text=True)
    return list(body.get_json()["results"])


def _app(make_conf: ConfFactory, db_url: str, **groups: dict[str, Any]) -> Flask:
    app = create_app(make_conf(db_url, **groups))
    app.config["TESTING"] = True
    return app


def test_an_event_from_the_far_future_is_dead_lettered_and_replayable(
        make_conf: ConfFactory, db_url: str) -> None:
    strict = _app(make_conf, db_url)
    try:
        client = strict.test_client()
        now = utcnow()
        far, soon = dt.datetime(2099, 11, 1), now + dt.timedelta(minutes=4)
        results = _post(client, _event(1, far), _event(2, soon),
                        _event(3, now + dt.timedelta(hours=1)))
        assert [r["status"] for r in results] == ["rejected", "stored", "rejected"]
        reason = results[0]["reason"]
        assert reason.startswith("future_timestamp: /timestamp: 2099-11-01T00:00:00.000000Z is ")
        assert "after the API's clock" in reason and "max_future_skew_s (300 s)" in reason
        listed = client.get("/v1/rejected-events?reason=future_timestamp:",
                            headers=auth("admin")).get_json()["items"]
        assert sorted(row["event_id"] for row in listed) == ["fut-1", "fut-3"]
        ids = {row["event_id"]: row["id"] for row in listed}
        # Replayed under the same option: still refused, with the current reason.
        again = client.post("/v1/rejected-events/replay", json={"ids": [ids["fut-3"]]},
                            headers=auth("admin")).get_json()["results"]
        assert again[0]["status"] == "rejected"
        assert again[0]["reason"].startswith("future_timestamp:")
    finally:
        strict.extensions[ENGINE_KEY].dispose()
    # The operator raises the option (the sender's clock was right after all).
    lenient = _app(make_conf, db_url, ingest={"max_future_skew_s": 7200})
    try:
        client = lenient.test_client()
        replayed = client.post("/v1/rejected-events/replay", json={"ids": [ids["fut-3"]]},
                               headers=auth("admin")).get_json()["results"]
        assert replayed[0]["status"] == "stored", replayed
        assert client.get("/v1/resources/openstack/c1/floating_ip/fip-3",
                          headers=auth("read")).status_code == 200
        assert client.get("/v1/resources/openstack/c1/floating_ip/fip-1",
                          headers=auth("read")).status_code == 404
    finally:
        lenient.extensions[ENGINE_KEY].dispose()


def test_a_wall_clock_sync_cannot_be_told_an_instant_past_the_skew(
        make_conf: ConfFactory, db_url: str, tmp_path: Path) -> None:
    clouds = tmp_path / "tally-clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": [{
        "name": "c1", "platform": "openstack", "adapter": "openstack",
        "adapter_config": {"os_cloud": "nowhere"}}]}))
    app = _app(make_conf, db_url, sync={"clouds_file": str(clouds)})
    try:
        at = format_timestamp(dt.datetime(2099, 1, 1))
        response = app.test_client().post(f"/internal/sync/c1?at={at}", headers=auth("admin"))
        assert response.status_code == 400
        message = response.get_json()["error"]["message"]
        assert message.startswith(f"at: {at} is after the API's clock")
        assert "max_future_skew_s (300 s)" in message
    finally:
        app.extensions[ENGINE_KEY].dispose()
