"""One cloud, one name: with a clouds file the API refuses events of a cloud it does not
name (replayable once the cloud is added); ``GET /v1/clouds`` shows every name the
history holds.  Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from flask import Flask
from flask.testing import FlaskClient
from oslo_config import cfg

from reporting.app import create_app
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth
from tests.functional.reporting.test_ingest_api import event, post


def clouds_file(path: Path, *names: str) -> str:
    path.write_text(yaml.safe_dump({"clouds": [
        {"name": name, "platform": "openstack", "adapter": "openstack", "adapter_config": {}}
        for name in names]}))
    return str(path)


def app_with(make_conf: ConfFactory, db_url: str, clouds: str | None) -> Flask:
    conf: cfg.ConfigOpts = make_conf(db_url, sync={"clouds_file": clouds})
    application = create_app(conf)
    application.config["TESTING"] = True
    return application


def listed(client: FlaskClient, role: str = "read") -> Any:
    response = client.get("/v1/clouds", headers=auth(role))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_an_event_of_a_cloud_the_clouds_file_does_not_name_is_rejected_then_replayed(
    make_conf: ConfFactory, db_url: str, tmp_path: Path
) -> None:
    first = app_with(make_conf, db_url, clouds_file(tmp_path / "a.yaml", "c1"))
    client = first.test_client()
    body = post(client, {"events": [event(1), event(2, cloud="c1-typo")]}).get_json()
    assert [r["status"] for r in body["results"]] == ["stored", "rejected"]
    assert body["results"][1]["reason"].startswith("unknown cloud: ")
    clouds = listed(client, "ingest")
    assert clouds["clouds_file"] is True
    assert clouds["items"] == [
        {"cloud": "c1", "in_history": True, "in_clouds_file": True, "resources": 1}]
    rows = client.get("/v1/rejected-events?reason=unknown%20cloud", headers=auth("read"))
    (row,) = rows.get_json()["items"]
    still = client.post("/v1/rejected-events/replay", json={"ids": [row["id"]]},
                        headers=auth("admin")).get_json()
    assert still["results"][0]["status"] == "rejected"
    first.extensions[ENGINE_KEY].dispose()

    # The operator adds the cloud and restarts: the row replays.
    second = app_with(make_conf, db_url, clouds_file(tmp_path / "b.yaml", "c1", "c1-typo"))
    client = second.test_client()
    done = client.post("/v1/rejected-events/replay", json={"ids": [row["id"]]},
                       headers=auth("admin")).get_json()
    assert done["results"][0]["status"] == "stored"
    assert [c["cloud"] for c in listed(client)["items"]] == ["c1", "c1-typo"]
    second.extensions[ENGINE_KEY].dispose()


def test_without_a_clouds_file_any_cloud_is_accepted_and_listed(
    make_conf: ConfFactory, db_url: str, tmp_path: Path
) -> None:
    application = app_with(make_conf, db_url, None)
    client = application.test_client()
    body = post(client, {"events": [event(1), event(2, cloud="c1-typo"), event(3)]}).get_json()
    assert body["stored"] == 3
    clouds = listed(client)
    assert clouds["clouds_file"] is False
    assert clouds["items"] == [
        {"cloud": "c1", "in_history": True, "in_clouds_file": None, "resources": 2},
        {"cloud": "c1-typo", "in_history": True, "in_clouds_file": None, "resources": 1}]
    assert client.get("/v1/clouds").status_code == 401
    assert client.get("/v1/clouds?x=1", headers=auth("read")).status_code == 400
    application.extensions[ENGINE_KEY].dispose()


def test_a_cloud_only_the_clouds_file_names_is_listed(
    make_conf: ConfFactory, db_url: str, tmp_path: Path
) -> None:
    application = app_with(make_conf, db_url, clouds_file(tmp_path / "a.yaml", "c0"))
    assert listed(application.test_client())["items"] == [
        {"cloud": "c0", "in_history": False, "in_clouds_file": True, "resources": 0}]
    application.extensions[ENGINE_KEY].dispose()
