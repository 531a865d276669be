"""Two of each: two ``tally-reporting`` instances and two collectors in one pool, on one
PostgreSQL and one RabbitMQ, as a deployment on several machines runs them
(docs/deployment.md, "Several instances").

The simulated cloud publishes three days of notifications (with duplicates and
reordering, nothing lost); each collector delivers to its own instance; every 30
virtual minutes both instances are asked to sync the cloud at the same moment.
Mid-stream one instance and one collector are SIGKILLed (process group and all, as a
machine dies) and later started again.  At the end:

- every notification the table maps is stored exactly once (the collector events are
  exactly the mapped notifications' ids), whichever collector took it and whatever
  was in flight in the killed one;
- a sync of the cloud never ran on both instances at once: every simultaneous pair
  answered 200 and 409 ("busy") or 200 twice in turn, never anything else, and a run
  caught holding the cloud (its network listing held) makes the other instance's sync
  answer 409 until it ends;
- no lease is lost: no run is left running and no lease held, and the last syncs
  complete on both instances.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from mapping.event import format_timestamp
from mapping.openstack import map_notification
from simcloud.config import STOCK_EXCHANGES, WorldConfig
from simcloud.server import SimCloudServer
from tests.e2e.harness import Collector, Reporting, wait_until
from tests.functional.collector.harness import consumed
from tests.functional.sync.held_service import held_service

pytestmark = [pytest.mark.postgres, pytest.mark.rabbit]

CLOUD = "ha"
INTERVAL = dt.timedelta(minutes=30)


def _mapped_ids(world: SimCloudServer, until: dt.datetime) -> set[str]:
    """The event id of every notification up to ``until`` that the table maps."""
    ids = set()
    for note in world.world.publications(until):
        event = map_notification(CLOUD, note.ctxt, note.publisher_id, note.event_type,
                                 note.payload, {"message_id": note.message_id,
                                                "timestamp": note.timestamp})
        if event is not None:
            ids.add(event["event_id"])
    return ids


def _collector_ids(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(sa.text(
            "SELECT event_id FROM events WHERE cloud = :c AND source = 'collector'"),
            {"c": CLOUD}).scalars())


def _sync_both(instances: list[Reporting], at: dt.datetime) -> list[int]:
    """Both instances asked at the same moment (a barrier releases both requests)."""
    barrier = threading.Barrier(len(instances))

    def ask(instance: Reporting) -> int:
        barrier.wait(30)
        return instance.sync(CLOUD, format_timestamp(at)).status_code

    with ThreadPoolExecutor(len(instances)) as pool:
        return list(pool.map(ask, instances))


def test_two_instances_and_two_collectors_lose_and_double_nothing(
        pg_database: str, rabbit_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    exchanges = {service: f"ha-{tag}-{service}" for service in STOCK_EXCHANGES}
    config = WorldConfig(seed=7, scale=10, days=3, loss=0.0, duplicate=0.05, reorder=True,
                         transport_url=rabbit_url, exchanges=exchanges)
    world = SimCloudServer(config)
    world.start()
    clouds_yaml = world.write_clouds_yaml(tmp_path / "clouds.yaml")
    dirs = {name: tmp_path / name for name in ("a", "b", "c1", "c2")}
    for path in dirs.values():
        path.mkdir()
    a = Reporting(dirs["a"], pg_database, CLOUD, "sim-admin", clouds_yaml)
    b = Reporting(dirs["b"], pg_database, CLOUD, "sim-admin", clouds_yaml)
    pool = f"tally-ha-{tag}"
    c1 = Collector(dirs["c1"], CLOUD, rabbit_url, a.url, pool, list(exchanges.values()))
    c2 = Collector(dirs["c2"], CLOUD, rabbit_url, b.url, pool, list(exchanges.values()))
    engine = sa.create_engine(pg_database)
    answers: list[list[int]] = []
    try:
        wait_until(lambda: consumed(rabbit_url, pool), 120, "the collectors to consume")
        steps = int((config.end - config.start) / INTERVAL)
        kill_at, back_at = steps // 3, steps // 2
        at = config.start
        for step in range(1, steps + 1):
            at = config.start + step * INTERVAL
            world.world.advance_to(at)
            if step == kill_at:
                # One of each dies mid-stream: a's collector keeps its buffer and a's
                # syncs stop; c2 meanwhile takes what c1 had not acknowledged.
                c1.process.kill()
                a.process.kill()
            if step == back_at:
                a.start()
                c1.start()
            live = [b] if kill_at <= step < back_at else [a, b]
            answers.append(_sync_both(live, at))

        # A run caught holding the cloud on one instance: the other's sync is busy.
        with held_service(monkeypatch, "network") as network:
            with ThreadPoolExecutor(1) as pool_:
                held = pool_.submit(a.sync, CLOUD, format_timestamp(at))
                network.wait_entered()
                assert b.sync(CLOUD, format_timestamp(at)).status_code == 409
                network.release()
                assert held.result(timeout=120).status_code == 200

        expected = _mapped_ids(world, at)
        wait_until(lambda: len(_collector_ids(engine)) >= len(expected), 300,
                   f"{len(expected)} collector events")
        stored = _collector_ids(engine)
        assert len(stored) == len(set(stored))
        assert set(stored) == expected
        # The last syncs complete on both instances, in turn.
        assert a.sync(CLOUD, format_timestamp(at)).status_code == 200
        assert b.sync(CLOUD, format_timestamp(at)).status_code == 200
        with engine.connect() as conn:
            running = conn.execute(sa.text(
                "SELECT count(*) FROM sync_runs WHERE status = 'running'")).scalar()
            leases = conn.execute(sa.text("SELECT count(*) FROM sync_locks")).scalar()
        assert (running, leases) == (0, 0)
    finally:
        for process in (c1, c2, a, b):
            try:
                process.stop()
            except (OSError, requests.RequestException):
                pass
        world.stop()
        engine.dispose()
    for pair in answers:
        assert set(pair) <= {200, 409}, pair
        assert 200 in pair, pair
