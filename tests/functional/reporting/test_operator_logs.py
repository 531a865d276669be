"""The API's log and metrics an operator reads: quiet readiness probes, the reason a
database is unavailable, and dead-letter replays counted apart from arrivals."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from reporting import wsgi
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth, start_server, write_config
from tests.oslo_log_lines import messages, oslo_log_lines


@pytest.mark.parametrize("database", ["up", "down"])
def test_readyz_logs_no_alembic_lines(database: str, pg_migrated_database: str,
                                      tokens_file: str, tmp_path: Path) -> None:
    """A fresh tally-reporting, whose first /readyz imports Alembic (which logs its
    plugins' setup at INFO on import, database up or not)."""
    url = pg_migrated_database if database == "up" else \
        "postgresql+psycopg://postgres@127.0.0.1:1/none"
    config = write_config(tmp_path / "tally.conf", url, tokens_file, api={"workers": 1})
    server = start_server(config, tmp_path / "reporting.log")
    try:
        for _ in range(3):
            answer = requests.get(f"{server.base_url}/readyz", timeout=60)
            assert answer.status_code == (200 if database == "up" else 503)
    finally:
        server.stop()
    log = server.log.read_text()
    assert "alembic" not in log.lower(), log
    assert "Booting worker" in log  # the log is the server's, read after the probes


def test_tally_reporting_names_what_it_uses_at_start(pg_migrated_database: str,
                                                     tokens_file: str, tmp_path: Path) -> None:
    """The database (password redacted), Tally's clouds file and the OpenStack
    clouds.yaml the adapter will read."""
    url = pg_migrated_database.replace("postgres@", "postgres:s3cret@", 1)  # trust: ignored
    assert "s3cret" in url
    clouds = tmp_path / "tally-clouds.yaml"
    clouds.write_text("clouds:\n  - {name: c1, platform: openstack, adapter: openstack,\n"
                      "     adapter_config: {os_cloud: prod}}\n")
    clouds_yaml = tmp_path / "clouds.yaml"
    clouds_yaml.write_text("clouds: {prod: {auth: {auth_url: http://127.0.0.1:1/v3}}}\n")
    config = write_config(tmp_path / "tally.conf", url, tokens_file, api={"workers": 1},
                          sync={"clouds_file": str(clouds)})
    server = start_server(config, tmp_path / "reporting.log",
                          env={"OS_CLIENT_CONFIG_FILE": str(clouds_yaml)})
    server.stop()
    log = server.log.read_text()
    # oslo.log's lines: "<date> <time> <pid> INFO <logger> [<context>] <message>"
    lines = messages([line for line in log.splitlines() if " INFO __main__ " in line])
    assert lines[:3] == [f"database: {url.replace('s3cret', '***')}",
                         f"clouds file: {clouds}",
                         f"OpenStack clouds.yaml: {clouds_yaml} (OS_CLIENT_CONFIG_FILE)"], log
    assert "s3cret" not in log


def test_the_clouds_yaml_line_names_the_search_path_without_the_variable(
        tmp_path: Path) -> None:
    """Without OS_CLIENT_CONFIG_FILE: the first file of the search path (the working
    directory first), or none; a named file that is missing says so."""
    script = ("import os; from reporting.openstack.credentials import describe_search; "
              "print(describe_search(os.environ))")
    env = {key: value for key, value in os.environ.items() if key != "OS_CLIENT_CONFIG_FILE"}

    def line(environ: dict[str, str]) -> str:
        return subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=environ,
                              capture_output=True, text=True, check=True).stdout.strip()

    (tmp_path / "clouds.yaml").write_text("clouds: {}\n")
    assert line(env) == (f"{tmp_path / 'clouds.yaml'}, the first found on the "
                         "search path (OS_CLIENT_CONFIG_FILE unset)")
    missing = str(tmp_path / "nope.yaml")
    assert line({**env, "OS_CLIENT_CONFIG_FILE": missing}) == (
        f"{missing} (OS_CLIENT_CONFIG_FILE; no such file yet: every sync fails until it exists)")


def test_the_wsgi_entry_keeps_alembic_quiet_too(tokens_file: str, tmp_path: Path) -> None:
    alembic_log = logging.getLogger("alembic")
    level = alembic_log.level
    alembic_log.setLevel(logging.NOTSET)
    try:
        config = write_config(tmp_path / "tally.conf", f"sqlite:///{tmp_path}/tally.sqlite",
                              tokens_file)
        app = wsgi.load_application({"TALLY_CONFIG_FILE": str(config)})
        app.extensions[ENGINE_KEY].dispose()
        assert alembic_log.getEffectiveLevel() == logging.WARNING
    finally:
        alembic_log.setLevel(level)


def test_an_unreachable_database_is_logged_with_its_reason(
        make_conf: ConfFactory, caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(make_conf("postgresql+psycopg://postgres:pw@127.0.0.1:1/none"))
    try:
        with caplog.at_level(logging.WARNING):
            response = app.test_client().get("/v1/resources", headers=auth("read"))
            assert response.status_code == 503
            assert app.test_client().get("/readyz").status_code == 503
    finally:
        app.extensions[ENGINE_KEY].dispose()
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("reporting.api")]
    assert len(lines) == 2, lines
    for line in lines:
        assert "127.0.0.1" in line and "port 1 failed" in line, line
        assert "pw" not in line.replace("password", "")


def test_an_unreachable_database_is_logged_with_its_reason_once(
        make_conf: ConfFactory) -> None:
    """Through oslo.log's formatter (the service's): it adds the exception being handled
    to a WARNING or ERROR logged inside an except block, which would say it twice."""
    app = create_app(make_conf("postgresql+psycopg://postgres@127.0.0.1:1/none"))
    try:
        with oslo_log_lines("reporting.api") as formatted:
            assert app.test_client().get("/v1/resources", headers=auth("read")).status_code \
                == 503
            assert app.test_client().get("/readyz").status_code == 503
    finally:
        app.extensions[ENGINE_KEY].dispose()
    lines = messages(formatted)
    assert len(lines) == 2, lines
    assert lines[0].startswith("database unavailable: OperationalError: "), lines
    assert lines[1].startswith("readyz: database unreachable: OperationalError: "), lines
    for line in lines:
        assert line.count("port 1 failed") == 1 and "sqlalchemy.exc" not in line, line


def _counted(client: FlaskClient, family_name: str, cloud: str) -> dict[str, float]:
    text = client.get("/metrics").get_data(as_text=True)
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == family_name:
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.labels.get("cloud") == cloud:
                    outcome = sample.labels["outcome"]
                    counts[outcome] = counts.get(outcome, 0.0) + sample.value
    return counts


def test_replays_are_counted_apart_from_arrivals(client: FlaskClient) -> None:
    cloud = "replay-" + str(id(client))
    bad = {"event_id": "r-" + cloud, "event_type": "compute.instance.create.end",
           "platform": "openstack", "cloud": cloud, "resource_type": "instance",
           "resource_id": "i", "project_id": "p", "timestamp": "not a time",
           "source": "collector", "payload": {"state": "active"}}
    # A refused item counts under its own cloud once the worker knows the cloud.
    known = dict(bad, event_id="k-" + cloud, timestamp="2026-10-01T00:00:00Z")
    assert client.post("/v1/events", json={"events": [known]},
                       headers=auth("ingest")).get_json()["stored"] == 1
    before = _counted(client, "tally_ingest_events", cloud)
    answer = client.post("/v1/events", json={"events": [bad]}, headers=auth("ingest")).get_json()
    assert answer["rejected"] == 1
    rows = client.get(f"/v1/rejected-events?cloud={cloud}", headers=auth("read")).get_json()
    row_id = rows["items"][0]["id"]
    for _ in range(2):  # an operator replaying a row that still fails, twice
        replayed = client.post("/v1/rejected-events/replay", json={"ids": [row_id]},
                               headers=auth("admin")).get_json()
        assert replayed["rejected"] == 1
    arrivals = _counted(client, "tally_ingest_events", cloud)
    assert arrivals.get("rejected", 0) - before.get("rejected", 0) == 1
    assert _counted(client, "tally_ingest_replayed_events", cloud) == {"rejected": 2.0}
