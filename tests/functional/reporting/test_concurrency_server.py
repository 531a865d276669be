"""8 clients post the same batches at once to a real tally-reporting (2 gunicorn
workers) on PostgreSQL: every event is stored exactly once and the projection equals
the one serial ingest builds."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from reporting.db.engine import make_engine, make_sessionmaker
from reporting.ingest import ingest
from tests.conftest import created_pg_database
from tests.functional.reporting.fixtures import RunningServer, auth, start_server, write_config

CLIENTS = 8
KINDS = ["compute.instance.create.end", "compute.instance.resize.confirm.end",
         "compute.instance.power_off", "compute.instance.delete.end",
         "compute.instance.create.end"]


def history(resource: int) -> list[dict[str, Any]]:
    start = dt.datetime(2026, 1, 1) + dt.timedelta(minutes=resource)
    return [
        {
            "event_id": f"r{resource}-e{n}",
            "event_type": kind,
            "platform": "openstack",
            "cloud": "c1",
            "resource_type": "instance",
            "resource_id": f"vm-{resource}",
            "project_id": f"p{resource % 3}",
            "timestamp": (start + dt.timedelta(seconds=n)).isoformat() + "Z",
            "source": "collector",
            "payload": {
                "state": "shutoff" if "power_off" in kind else "active",
                "size": {"vcpus": n + 1, "ram_gb": 2, "disk_gb": 10, "flavor": f"f{n}"},
            } if "delete" not in kind else {},
        }
        for n, kind in enumerate(KINDS)
    ]


@pytest.fixture
def second_database(pg_admin_url: str, pg_migrated_template: str) -> Iterator[str]:
    with created_pg_database(pg_admin_url, template=pg_migrated_template) as url:
        yield url


@pytest.fixture
def pg_server(pg_migrated_database: str, tokens_file: str,
              tmp_path: Path) -> Iterator[RunningServer]:
    config = write_config(tmp_path / "reporting.conf", pg_migrated_database, tokens_file,
                          api={"workers": 2})
    server = start_server(config, tmp_path / "reporting.log")
    yield server
    server.stop()


def projection(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT platform, cloud, resource_type, resource_id, project_id, state, "
            "CAST(size AS TEXT), live, created_at, deleted_at, last_event_at, last_event_id "
            "FROM current_resources ORDER BY resource_id")).all()
        intervals = conn.execute(sa.text(
            'SELECT resource_id, start, "end", project_id, state, CAST(size AS TEXT), event_id '
            "FROM resource_intervals ORDER BY resource_id, start")).all()
        events = conn.execute(sa.text("SELECT count(*), count(DISTINCT event_id) FROM events")).one()
    engine.dispose()
    assert events[0] == events[1]
    return [tuple(r) for r in rows], [tuple(i) for i in intervals]


def test_eight_clients_same_batches_store_once(
    pg_server: RunningServer, pg_migrated_database: str, second_database: str
) -> None:
    events = [e for r in range(120) for e in history(r)]
    random.Random(7).shuffle(events)
    batches = [events[i : i + 100] for i in range(0, len(events), 100)]
    responses: list[dict[str, Any]] = []
    failures: list[str] = []
    barrier = threading.Barrier(CLIENTS)

    def client(seed: int) -> None:
        order = list(batches)
        random.Random(seed).shuffle(order)
        with requests.Session() as http:
            barrier.wait()
            for batch in order:
                response = http.post(f"{pg_server.base_url}/v1/events", json={"events": batch},
                                     headers=auth("ingest"), timeout=120)
                if response.status_code != 200:
                    failures.append(f"{response.status_code} {response.text[:200]}")
                else:
                    responses.append(response.json())

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(responses) == CLIENTS * len(batches)
    stored = Counter(r["event_id"] for body in responses for r in body["results"]
                     if r["status"] == "stored")
    assert stored == Counter({e["event_id"]: 1 for e in events})
    assert sum(body["rejected"] for body in responses) == 0

    # Serial ingest of the same events, in order, into another database.
    engine = make_engine(second_database)
    ingest(make_sessionmaker(engine), sorted(events, key=lambda e: e["timestamp"]),
                  require_size_schema=False)
    engine.dispose()
    concurrent_rows, concurrent_intervals = projection(pg_migrated_database)
    serial_rows, serial_intervals = projection(second_database)
    assert len(concurrent_rows) == 120
    assert concurrent_rows == serial_rows
    assert concurrent_intervals == serial_intervals

    metrics = requests.get(f"{pg_server.base_url}/metrics", headers=auth("read"), timeout=30)
    assert metrics.status_code == 200
    assert 'tally_ingest_events_total{cloud="c1",outcome="stored",source="collector"} 600.0' in (
        metrics.text)
