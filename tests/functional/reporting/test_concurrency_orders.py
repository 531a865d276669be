"""Eight clients post the same batch of 1000 events, each in its own shuffled order,
to a real tally-reporting (4 gunicorn workers), several rounds, on SQLite and
PostgreSQL: every answer is 200 within a few seconds (no deadlock, no lock wait, no 503),
every event is stored exactly once, and the projection is the fold of the events.

Transactions insert their events in event_id order and lock their resources in key
order, whatever the order of the request; this test is the guard against lock
orders that can cycle.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa

from reporting import fold
from reporting.db.engine import make_engine
from reporting.db.models import CurrentResource, ResourceInterval
from tests.functional.reporting.fixtures import RunningServer, auth, start_server, write_config

CLIENTS = 8
ROUNDS = 5
RESOURCES = 250  # x 4 events = a batch of 1000
KINDS = ["compute.instance.create.end", "compute.instance.resize.confirm.end",
         "compute.instance.power_off", "compute.instance.delete.end"]
# A deadlock PostgreSQL breaks, retried, answered well within this; a lock wait
# that never ends is a failure, not a hang of the suite.
REQUEST_TIMEOUT_S = 15


def batch(round_: int) -> list[dict[str, Any]]:
    start = dt.datetime(2026, 1, 1) + dt.timedelta(days=round_)
    return [
        {
            "event_id": f"o{round_}-r{resource}-e{n}",
            "event_type": kind,
            "platform": "openstack",
            "cloud": "c1",
            "resource_type": "instance",
            "resource_id": f"vm-{round_}-{resource}",
            "project_id": f"p{resource % 3}",
            "timestamp": (start + dt.timedelta(seconds=resource + 1000 * n)).isoformat() + "Z",
            "source": "collector",
            "payload": {} if "delete" in kind else {
                "state": "shutoff" if "power_off" in kind else "active",
                "size": {"vcpus": n + 1, "ram_gb": 2, "disk_gb": 10, "flavor": f"f{n}"},
            },
        }
        for resource in range(RESOURCES)
        for n, kind in enumerate(KINDS)
    ]


@pytest.fixture
def server(db_url: str, tokens_file: str, tmp_path: Path) -> Iterator[RunningServer]:
    config = write_config(tmp_path / "reporting.conf", db_url, tokens_file, api={"workers": 4})
    running = start_server(config, tmp_path / "reporting.log")
    yield running
    running.stop()


def post_in_orders(base_url: str, events: list[dict[str, Any]], round_: int
                   ) -> tuple[list[dict[str, Any]], list[str]]:
    answers: list[dict[str, Any]] = []
    failures: list[str] = []
    barrier = threading.Barrier(CLIENTS)

    def client(seed: int) -> None:
        mine = list(events)
        random.Random(round_ * 100 + seed).shuffle(mine)
        with requests.Session() as http:
            barrier.wait()
            started = time.monotonic()
            try:
                response = http.post(f"{base_url}/v1/events", json={"events": mine},
                                     headers=auth("ingest"), timeout=REQUEST_TIMEOUT_S)
            except requests.RequestException as exc:
                failures.append(f"client {seed}: {exc}")
                return
            took = time.monotonic() - started
        if took > REQUEST_TIMEOUT_S:  # the read timeout bounds each wait, not the whole answer
            failures.append(f"client {seed}: answered after {took:.1f} s")
        elif response.status_code != 200:
            failures.append(f"client {seed}: {response.status_code} {response.text[:200]}")
        else:
            answers.append(response.json())

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers, failures


def expected_rows(events: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    by_resource: dict[str, list[fold.FoldEvent]] = {}
    for n, e in enumerate(events):
        by_resource.setdefault(e["resource_id"], []).append(fold.FoldEvent(
            event_id=e["event_id"], event_type=e["event_type"], project_id=e["project_id"],
            timestamp=dt.datetime.fromisoformat(e["timestamp"][:-1]), payload=e["payload"],
            seq=n))
    rows = {}
    for rid, history in by_resource.items():
        state, intervals = fold.fold(history)
        assert state is not None
        rows[rid] = (state.project_id, state.state, state.size, state.live, state.deleted_at,
                     state.last_event_id, len(intervals))
    return rows


def stored_rows(url: str) -> dict[str, tuple[Any, ...]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            intervals = Counter(conn.execute(sa.select(ResourceInterval.resource_id)).scalars())
            cr = CurrentResource
            return {
                r.resource_id: (r.project_id, r.state, r.size, r.live, r.deleted_at,
                                r.last_event_id, intervals[r.resource_id])
                for r in conn.execute(sa.select(cr.resource_id, cr.project_id, cr.state, cr.size,
                                                cr.live, cr.deleted_at, cr.last_event_id))
            }
    finally:
        engine.dispose()


def count_events(url: str) -> tuple[int, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            total, distinct = conn.execute(
                sa.text("SELECT count(*), count(DISTINCT event_id) FROM events")).one()
            return int(total), int(distinct)
    finally:
        engine.dispose()


def test_same_batch_in_eight_orders_every_answer_200_and_stored_once(
        server: RunningServer, db_url: str) -> None:
    everything: list[dict[str, Any]] = []
    for round_ in range(ROUNDS):
        events = batch(round_)
        everything.extend(events)
        answers, failures = post_in_orders(server.base_url, events, round_)
        assert failures == [], f"round {round_ + 1}: {failures}"
        assert len(answers) == CLIENTS
        stored = Counter(r["event_id"] for body in answers for r in body["results"]
                         if r["status"] == "stored")
        assert stored == Counter({e["event_id"]: 1 for e in events}), f"round {round_ + 1}"
        assert all(body["rejected"] == 0 for body in answers)
    # Not even a deadlock PostgreSQL broke and ingest retried.
    assert "deadlock" not in server.log.read_text(errors="replace")
    assert count_events(db_url) == (len(everything), len(everything))
    assert stored_rows(db_url) == expected_rows(everything)
