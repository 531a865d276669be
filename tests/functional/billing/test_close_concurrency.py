"""A close is sound under concurrent ingest and with several replicas (PostgreSQL).

A receipt number is drawn inside the ingest transaction, so numbers commit out of
order; a cutoff read as "the largest committed number" could later gain a smaller one.
The close waits for every ingest in flight and blocks new ones while it takes its
snapshot: these tests hold an ingest transaction open across a close and race
several ingesters and two closing replicas."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting import projection
from reporting.billing import adjustments, closing, statements, versions
from reporting.db import engine as db_engine
from tests.functional.billing import truth
from tests.functional.billing.history import PRICES, SMALL, event, seed
from tests.functional.collector.harness import wait_until

NOW = dt.datetime(2026, 12, 15)


@pytest.fixture
def pg_factory(pg_migrated_database: str) -> Any:
    engine = db_engine.make_engine(pg_migrated_database, pool_size=10, max_overflow=10)
    factory = db_engine.make_sessionmaker(engine)
    with factory() as session:
        for document in PRICES:
            versions.add(session, "default", document, "test", NOW)
        session.commit()
    yield factory
    engine.dispose()


def _advisory_lock_waiters(factory: sessionmaker[Session]) -> int:
    """Sessions of this database waiting for an advisory lock."""
    with factory() as session:
        return int(session.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND wait_event = 'advisory'")).scalar_one())


def _create(rid: str, day: int, project: str = "p1") -> dict[str, Any]:
    return event("compute.instance.create.end", rid, f"2026-10-{day:02d}T00:00:00Z",
                 project_id=project, state="active", size=SMALL)


def test_a_close_waits_for_the_ingest_in_flight(
    pg_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(pg_factory, [_create("early", 1)])
    inside, release = threading.Event(), threading.Event()
    original = projection.project

    def slow_project(*args: Any) -> None:
        original(*args)
        if threading.current_thread().name == "slow-ingest":
            inside.set()
            release.wait(120)  # only a guard against a hang

    monkeypatch.setattr(projection, "project", slow_project)
    slow = threading.Thread(target=seed, name="slow-ingest",
                            args=(pg_factory, [_create("in-flight", 2)]))
    slow.start()
    assert inside.wait(120)
    # The in-flight ingest holds its receipt number; a later one commits first.
    seed(pg_factory, [_create("later", 3)])
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        closing_now = pool.submit(closing.close, pg_factory, "c1", "2026-10", "test", NOW)
        # Wait until the close is blocked on the ingest's lock (not for a fixed delay,
        # which a loaded machine could outlast before the close even starts).
        wait_until(lambda: _advisory_lock_waiters(pg_factory) > 0 or closing_now.done(),
                   120, "the close to wait on the advisory lock")
        assert not closing_now.done(), "the close must wait for the ingest in flight"
        release.set()
        slow.join(120)
        result = closing_now.result(30)
    with pg_factory() as session:
        frozen = truth.frozen(session, "c1", "2026-10")
        assert truth.nonzero({p: s for p, (s, _b) in frozen.items()}) == truth.recomputed(
            session, "c1", "2026-10", NOW, result.period.cutoff_seq)
        assert truth.recomputed(session, "c1", "2026-10", NOW) == truth.recomputed(
            session, "c1", "2026-10", NOW, result.period.cutoff_seq)
        assert '"in-flight"' in frozen["p1"][1]


def test_racing_ingest_and_two_replicas_closing(pg_factory: sessionmaker[Session]) -> None:
    def ingester(worker: int) -> None:
        for batch in range(15):
            seed(pg_factory, [
                _create(f"w{worker}-b{batch}-{n}", 1 + (batch + n) % 28, f"p{n % 3}")
                for n in range(8)
            ])

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        ingest = [pool.submit(ingester, worker) for worker in range(4)]
        time.sleep(0.3)
        closes = [pool.submit(closing.close, pg_factory, "c1", "2026-10", f"replica-{n}", NOW)
                  for n in range(2)]
        results = [future.result(60) for future in closes]
        for future in ingest:
            future.result(60)
    assert sorted(r.created for r in results) == [False, True]
    assert results[0].period.cutoff_seq == results[1].period.cutoff_seq
    with pg_factory() as session:
        cutoff = results[0].period.cutoff_seq
        frozen = truth.frozen(session, "c1", "2026-10")
        assert truth.nonzero({p: s for p, (s, _b) in frozen.items()}) == truth.nonzero(
            truth.recomputed(session, "c1", "2026-10", NOW, cutoff))
        closed = statements.closed_periods(session, "c1")
        pending = adjustments.pending(session, "c1", "2026-11", closed,
                                      versions.timeline(session, "c1"), NOW)
        whole = truth.recomputed(session, "c1", "2026-10", NOW)
        for project, total in whole.items():
            frozen_total = frozen[project][0] if project in frozen else 0
            assert frozen_total + sum(
                a.amount for a in pending if a.project_id == project) == total
