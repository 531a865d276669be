"""/healthz, /readyz and /metrics (docs/reporting-queries.md) on SQLite and PostgreSQL."""

from __future__ import annotations

from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from reporting.app import create_app
from reporting.db import migrations
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth


def test_healthz(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}


def test_readyz_at_head(client: FlaskClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200 and response.get_json() == {"status": "ready"}


def _readyz(make_conf: ConfFactory, url: str) -> tuple[int, dict[str, object]]:
    app = create_app(make_conf(url))
    try:
        response = app.test_client().get("/readyz")
        return response.status_code, response.get_json()
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_readyz_fails_while_migrations_lag(make_conf: ConfFactory, empty_db_url: str) -> None:
    lagging = {"error": {"code": "not_ready", "message": "database migrations are not at head"}}
    assert _readyz(make_conf, empty_db_url) == (503, lagging)
    migrations.upgrade(empty_db_url)
    assert _readyz(make_conf, empty_db_url)[0] == 200
    migrations.downgrade(empty_db_url, "-1")
    assert _readyz(make_conf, empty_db_url) == (503, lagging)


def test_readyz_fails_without_a_database(make_conf: ConfFactory) -> None:
    status, body = _readyz(make_conf, "postgresql+psycopg://postgres@127.0.0.1:1/none")
    assert status == 503
    assert body == {"error": {"code": "not_ready", "message": "database unreachable"}}


def _ingested(client: FlaskClient, cloud: str) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        if family.name == "tally_ingest_events":
            return sum(s.value for s in family.samples if s.name.endswith("_total")
                       and s.labels.get("cloud") == cloud
                       and s.labels.get("outcome") == "stored")
    return 0.0


def test_metrics_expose_what_ingest_counted(client: FlaskClient) -> None:
    cloud = "metrics-" + str(id(client))
    before = _ingested(client, cloud)
    event = {
        "event_id": "m-" + cloud, "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": cloud, "resource_type": "instance",
        "resource_id": "i", "project_id": "p", "timestamp": "2026-01-01T00:00:00Z",
        "source": "collector", "payload": {"state": "active"},
    }
    response = client.post("/v1/events", json={"events": [event]}, headers=auth("ingest"))
    assert response.get_json()["stored"] == 1
    assert _ingested(client, cloud) == before + 1
