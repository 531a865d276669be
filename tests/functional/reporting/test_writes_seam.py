"""The write seam (``reporting.db.writes``): one suite, run on SQLite and PostgreSQL
(the ``db_url`` fixture), against the named operations every caller uses."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting import fold
from reporting.db import writes
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.db.models import (
    CurrentResource,
    Event,
    ResourceInterval,
    ResourceType,
    SizeName,
    SyncSighting,
)
from reporting.db.writes.base import STATE_COLUMNS, FoldWrites, OpenInterval, Writes
from reporting.queries.usage_store import epoch_micros

T0 = dt.datetime(2026, 1, 1)
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def seam(factory: sessionmaker[Session]) -> Writes:
    with factory() as session:
        return writes.of(session)


def event_row(event_id: str, resource_id: str, minutes: int, kind: str = "create.end",
              **payload: Any) -> dict[str, Any]:
    return {"event_id": event_id, "event_type": f"compute.instance.{kind}",
            "platform": "openstack", "cloud": "c1", "resource_type": "instance",
            "resource_id": resource_id, "project_id": "p1",
            "timestamp": T0 + dt.timedelta(minutes=minutes), "source": "collector",
            "payload": payload, "received_at": T0}


def key(resource_id: str) -> tuple[str, str, str, str]:
    return ("openstack", "c1", "instance", resource_id)


def state(last_seq: int, *, live: bool = True, size: dict[str, Any] | None = None
          ) -> fold.ResourceState:
    return fold.ResourceState(
        project_id="p1", state="active", size=size, live=live, created_at=T0,
        deleted_at=None if live else T0 + dt.timedelta(hours=1),
        last_event_at=T0 + dt.timedelta(minutes=last_seq), last_event_id=f"e{last_seq}",
        last_event_seq=last_seq, first_event_at=T0)


def row(resource_id: str, s: fold.ResourceState) -> dict[str, Any]:
    return {"platform": "openstack", "cloud": "c1", "resource_type": "instance",
            "resource_id": resource_id, "project_id": s.project_id, "state": s.state,
            "size": s.size, "live": s.live, "created_at": s.created_at,
            "deleted_at": s.deleted_at, "last_event_at": s.last_event_at,
            "last_event_id": s.last_event_id, "last_event_seq": s.last_event_seq,
            "first_event_at": s.first_event_at}


def interval(resource_id: str, start: int, end: int | None, event_id: str) -> dict[str, Any]:
    return {"platform": "openstack", "cloud": "c1", "resource_type": "instance",
            "resource_id": resource_id, "start": T0 + dt.timedelta(minutes=start),
            "end": None if end is None else T0 + dt.timedelta(minutes=end),
            "project_id": "p1", "state": "active", "size": None, "event_id": event_id}


def test_the_positional_reads_follow_the_fold_dataclasses() -> None:
    assert list(fold.ResourceState._fields) == list(STATE_COLUMNS)
    assert list(fold.FoldEvent._fields) == [
        "event_id", "event_type", "project_id", "timestamp", "payload", "seq"]


def test_one_seam_per_engine_chosen_from_its_dialect(
        factory: sessionmaker[Session], backend: str, db_url: str) -> None:
    with factory() as session:
        first = writes.of(session)
    with factory() as session:
        assert writes.of(session) is first
    assert type(first).__name__ == {"sqlite": "SqliteWrites", "postgresql": "PostgresWrites"}[
        backend]
    other = make_engine(db_url)
    try:
        assert writes.attach(other) is not first  # one per engine
    finally:
        other.dispose()


def test_insert_events_stores_each_id_once_and_seq_follows_the_rows(
        factory: sessionmaker[Session], seam: Writes) -> None:
    rows = [event_row(f"e-{name}", "vm-1", n) for n, name in enumerate("zamb")]
    with factory.begin() as session:
        seqs = seam.insert_events(session, rows)
    assert set(seqs) == {"e-z", "e-a", "e-m", "e-b"}
    assert [seqs[r["event_id"]] for r in rows] == sorted(seqs.values())  # receipt order
    with factory.begin() as session:
        again = seam.insert_events(session, [event_row("e-a", "vm-1", 0),
                                             event_row("e-new", "vm-1", 9)])
    assert set(again) == {"e-new"} and again["e-new"] > max(seqs.values())
    with factory() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(Event)).scalar() == 5


def other_connection_can_lock(db_url: str, keys: list[int]) -> list[bool]:
    """Whether another session gets each advisory lock exclusively (PostgreSQL)."""
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            return [bool(conn.execute(sa.text("SELECT pg_try_advisory_xact_lock(:k)"),
                                      {"k": k}).scalar()) for k in keys]
    finally:
        engine.dispose()


def resource_lock(factory: sessionmaker[Session], resource_id: str) -> int:
    with factory() as session:
        return int(session.execute(sa.text("SELECT hashtextextended(:t, 0)"), {
            "t": "\x1f".join(key(resource_id))}).scalar_one())


def test_store_events_numbers_the_batch_in_order_and_skips_stored_ids(
        factory: sessionmaker[Session], seam: Writes, backend: str) -> None:
    rows = [event_row(f"s-{name}", f"vm-{n % 2}", n) for n, name in enumerate("zamby")]
    with factory.begin() as session:
        seqs = seam.store_events(session, rows, hold=77)
    assert set(seqs) == {r["event_id"] for r in rows}
    numbers = [seqs[r["event_id"]] for r in rows]
    assert numbers == sorted(set(numbers))  # receipt order, each once
    if backend == "postgresql":  # one number drawn for the batch, its events numbered from it
        assert numbers == list(range(numbers[0], numbers[0] + len(rows)))
    with factory.begin() as session:
        again = seam.store_events(session, [rows[1], event_row("s-new", "vm-0", 9), rows[3]],
                                  hold=77)
    assert set(again) == {"s-new"} and again["s-new"] > max(numbers)
    with factory() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(Event)).scalar() == 6


def test_store_events_of_more_than_a_block(factory: sessionmaker[Session], seam: Writes) -> None:
    rows = [event_row(f"big-{n:05d}", f"vm-{n % 7}", n) for n in range(2500)]
    with factory.begin() as session:
        seqs = seam.store_events(session, rows, hold=77)
    numbers = [seqs[r["event_id"]] for r in rows]
    assert numbers == sorted(set(numbers)) and len(numbers) == 2500


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_store_events_holds_the_close_lock_and_locks_the_stored_resources(
        factory: sessionmaker[Session], seam: Writes, db_url: str) -> None:
    with factory.begin() as session:
        seam.store_events(session, [event_row("stored-before", "vm-dup", 0)], hold=78)
    locks = [resource_lock(factory, r) for r in ("vm-a", "vm-b", "vm-dup", "vm-other")]
    with factory.begin() as session:
        seam.store_events(session, [event_row("l-1", "vm-a", 1), event_row("l-2", "vm-b", 2),
                                    event_row("l-3", "vm-a", 3),
                                    event_row("stored-before", "vm-dup", 0)], hold=78)
        # The close's key is held shared; the stored events' resources exclusively, the
        # resource of the duplicate (nothing to fold) and any other not at all.
        assert other_connection_can_lock(db_url, [78, *locks]) == [False, False, False, True,
                                                                    True]
    assert other_connection_can_lock(db_url, [78, *locks]) == [True] * 5


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_lock_resources_takes_the_locks_store_events_takes(
        factory: sessionmaker[Session], seam: Writes, db_url: str) -> None:
    locks = [resource_lock(factory, r) for r in ("vm-a", 'vm "b"', "vm-c")]
    with factory.begin() as session:
        seam.insert_events(session, [event_row("x", "vm-a", 0)])
        seam.lock_resources(session, [key("vm-a"), key('vm "b"')])
        assert other_connection_can_lock(db_url, locks) == [False, False, True]


def test_held_resources_read_rows_with_their_open_interval(
        factory: sessionmaker[Session], seam: Writes) -> None:
    size = {"vcpus": 2, "big": 2**70}
    with factory.begin() as session:
        seam.insert_rows(session, [row("vm-live", state(3, size=size)),
                                   row("vm-gone", state(4, live=False))])
        seam.insert_intervals(session, [interval("vm-live", 0, 3, "e0"),
                                        interval("vm-live", 3, None, "e3"),
                                        interval("vm-gone", 0, 60, "e0")])
    with factory() as session:
        held = seam.held_resources(session, [key("vm-live"), key("vm-gone"), key("vm-none")])
    assert set(held) == {key("vm-live"), key("vm-gone")}
    assert held[key("vm-live")].state == state(3, size=size)
    opened = held[key("vm-live")].open_interval
    assert opened is not None and (opened.start, opened.event_id) == (
        T0 + dt.timedelta(minutes=3), "e3")
    assert held[key("vm-gone")].open_interval is None


def test_held_resources_of_many_keys(factory: sessionmaker[Session], seam: Writes) -> None:
    with factory.begin() as session:
        seam.insert_rows(session, [row(f"vm-{n}", state(n)) for n in range(1200)])
    with factory() as session:
        held = seam.held_resources(session, [key(f"vm-{n}") for n in range(0, 2400, 2)])
    assert set(held) == {key(f"vm-{n}") for n in range(0, 1200, 2)}


def test_histories_come_in_fold_order(factory: sessionmaker[Session], seam: Writes) -> None:
    with factory.begin() as session:
        seam.insert_events(session, [event_row("b-2", "vm-b", 2), event_row("a-5", "vm-a", 5),
                                     event_row("a-1", "vm-a", 1), event_row("a-1bis", "vm-a", 1),
                                     event_row("x", "vm-x", 0)])
    with factory() as session:
        found = seam.histories(session, [key("vm-a"), key("vm-b"), key("vm-none")])
    assert {k: [e.event_id for e in v] for k, v in found.items()} == {
        key("vm-a"): ["a-1", "a-1bis", "a-5"], key("vm-b"): ["b-2"]}
    assert all(isinstance(e.payload, dict) for e in found[key("vm-a")])


def own_events(rows: list[dict[str, Any]], seqs: dict[str, int]
               ) -> dict[tuple[str, str, str, str], list[fold.FoldEvent]]:
    """The caller's copies of the stored ``rows`` (each payload a new dict), by key."""
    held: dict[tuple[str, str, str, str], list[fold.FoldEvent]] = {}
    for r in sorted(rows, key=lambda r: (r["timestamp"], seqs[r["event_id"]])):
        held.setdefault(key(r["resource_id"]), []).append(fold.FoldEvent(
            r["event_id"], r["event_type"], r["project_id"], r["timestamp"],
            dict(r["payload"]), seqs[r["event_id"]]))
    return held


def test_histories_take_a_batchs_own_events_from_the_caller(
        factory: sessionmaker[Session], seam: Writes) -> None:
    with factory.begin() as session:
        seam.insert_events(session, [event_row("a-1", "vm-a", 1), event_row("b-1", "vm-b", 1)])
    rows = [event_row("a-0", "vm-a", 0, state="x"), event_row("a-3", "vm-a", 3),
            event_row("b-2", "vm-b", 2), event_row("c-1", "vm-c", 1)]
    keys = [key("vm-a"), key("vm-b"), key("vm-c")]
    with factory.begin() as session:
        stored = own_events(rows, seam.store_events(session, rows, hold=77))
        found = seam.histories(session, keys, stored=stored)
        read = seam.histories(session, keys)
    assert found == read
    assert {k: [e.event_id for e in v] for k, v in found.items()} == {
        key("vm-a"): ["a-0", "a-1", "a-3"], key("vm-b"): ["b-1", "b-2"], key("vm-c"): ["c-1"]}
    # One block of numbers (PostgreSQL) or one writer (SQLite): the batch's events are
    # the caller's objects, not read back.
    assert found[key("vm-a")][0] is stored[key("vm-a")][0]
    assert found[key("vm-c")][0] is stored[key("vm-c")][0]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_histories_read_back_events_numbered_one_by_one(
        factory: sessionmaker[Session], seam: Writes) -> None:
    # More than a block in one transaction: a number per event, each draw a block
    # apart, and a concurrent batch's numbers may lie between them.
    rows = [event_row(f"m-{n:04d}", f"vm-{n % 3}", n) for n in range(1001)]
    with factory.begin() as session:
        stored = own_events(rows, seam.store_events(session, rows, hold=77))
        assert seam.own_range(stored) is None
        found = seam.histories(session, [key("vm-0")], stored=stored)
    assert [e.event_id for e in found[key("vm-0")]] == [f"m-{n:04d}" for n in range(0, 1001, 3)]
    assert found[key("vm-0")][0] is not stored[key("vm-0")][0]


def test_rows_update_and_intervals_end_drop_and_replace(
        factory: sessionmaker[Session], seam: Writes) -> None:
    with factory.begin() as session:
        seam.insert_rows(session, [row("vm-1", state(1)), row("vm-2", state(1))])
        seam.insert_intervals(session, [interval("vm-1", 0, None, "e0"),
                                        interval("vm-2", 0, None, "e0"),
                                        interval("vm-2", 5, None, "e5")])
    with factory.begin() as session:
        held = seam.held_resources(session, [key("vm-1")])
        opened = held[key("vm-1")].open_interval
        assert isinstance(opened, OpenInterval)
        seam.update_rows(session, [(held[key("vm-1")], row("vm-1", state(7, live=False)))])
        seam.end_intervals(session, [(opened, T0 + dt.timedelta(minutes=7))])
        seam.replace_intervals(session, [key("vm-2")], [interval("vm-2", 1, 2, "e1")])
    with factory() as session:
        assert session.get(CurrentResource, key("vm-1")).last_event_seq == 7  # type: ignore[union-attr]
        got = session.execute(sa.select(ResourceInterval.resource_id, ResourceInterval.end,
                                        ResourceInterval.event_id)
                              .order_by(ResourceInterval.resource_id)).all()
    assert [tuple(g) for g in got] == [("vm-1", T0 + dt.timedelta(minutes=7), "e0"),
                                       ("vm-2", T0 + dt.timedelta(minutes=2), "e1")]
    with factory.begin() as session:
        ids = session.execute(sa.select(ResourceInterval.id)).scalars().all()
        seam.drop_intervals(session, ids)
        assert session.execute(sa.select(sa.func.count()).select_from(ResourceInterval)
                               ).scalar() == 0


def test_write_fold_writes_every_kind_at_once(
        factory: sessionmaker[Session], seam: Writes) -> None:
    # One batch's fold: a held row updated and its interval ended, another held
    # row's interval dropped, a replayed resource's intervals replaced, a new row.
    with factory.begin() as session:
        seam.insert_rows(session, [row("vm-1", state(1)), row("vm-2", state(1)),
                                   row("vm-3", state(1))])
        seam.insert_intervals(session, [interval("vm-1", 0, None, "e0"),
                                        interval("vm-2", 0, None, "e0"),
                                        interval("vm-3", 0, 1, "e0"),
                                        interval("vm-3", 1, None, "e1")])
    with factory.begin() as session:
        held = seam.held_resources(session, [key("vm-1"), key("vm-2"), key("vm-3")])
        ended, dropped = held[key("vm-1")].open_interval, held[key("vm-2")].open_interval
        assert ended is not None and dropped is not None
        seam.write_fold(session, FoldWrites(
            new_rows=[row("vm-4", state(9))],
            changed_rows=[(held[key(r)], row(r, state(8, live=r != "vm-2")))
                          for r in ("vm-1", "vm-2", "vm-3")],
            new_intervals=[interval("vm-1", 8, None, "e8"), interval("vm-3", 0, None, "e0"),
                           interval("vm-4", 9, None, "e9")],
            ended_intervals=[(ended, T0 + dt.timedelta(minutes=8))],
            dropped_interval_ids=[dropped.id],
            replayed=[key("vm-3")],
        ))
    with factory() as session:
        rows = session.execute(sa.select(CurrentResource.resource_id, CurrentResource.live,
                                          CurrentResource.last_event_seq)
                               .order_by(CurrentResource.resource_id)).all()
        got = session.execute(sa.select(ResourceInterval.resource_id, ResourceInterval.start,
                                        ResourceInterval.end, ResourceInterval.event_id)
                              .order_by(ResourceInterval.resource_id, ResourceInterval.start)
                              ).all()
    assert [tuple(r) for r in rows] == [("vm-1", True, 8), ("vm-2", False, 8),
                                        ("vm-3", True, 8), ("vm-4", True, 9)]
    minutes = dt.timedelta(minutes=1)
    assert [tuple(g) for g in got] == [("vm-1", T0, T0 + 8 * minutes, "e0"),
                                       ("vm-1", T0 + 8 * minutes, None, "e8"),
                                       ("vm-3", T0, None, "e0"),
                                       ("vm-4", T0 + 9 * minutes, None, "e9")]


def test_write_fold_refuses_a_row_no_longer_where_it_was_read(
        factory: sessionmaker[Session], seam: Writes, db_url: str) -> None:
    with factory.begin() as session:
        seam.insert_rows(session, [row("vm-1", state(1))])
    with factory.begin() as session:
        held = seam.held_resources(session, [key("vm-1")])[key("vm-1")]
    with factory.begin() as session:  # another writer moved the row since the read
        seam.update_rows(session, [(held, row("vm-1", state(2)))])
    if db_url.startswith("sqlite"):
        return  # SQLite finds rows by key, wherever they are
    with factory() as session, session.begin(), pytest.raises(RuntimeError, match="rows found"):
        seam.write_fold(session, FoldWrites(changed_rows=[(held, row("vm-1", state(3)))]))


def test_lookups_by_id_keep_ids_that_look_like_array_syntax(
        factory: sessionmaker[Session], seam: Writes) -> None:
    odd = ['vm "1"', "vm\\2", "vm,3", "{vm4}", "NULL", " vm5 ", "vm-ü"]
    with factory.begin() as session:
        seam.insert_rows(session, [row(r, state(1)) for r in odd])
        seam.insert_intervals(session, [interval(r, 0, None, "e0") for r in odd])
        seam.insert_events(session, [event_row(f"e-{n}", r, 0) for n, r in enumerate(odd)])
    with factory.begin() as session:
        held = seam.held_resources(session, [key(r) for r in odd])
        seam.lock_resources(session, [key(r) for r in odd])
        assert sorted(k[3] for k in held) == sorted(odd)
        assert all(h.open_interval is not None for h in held.values())
        assert sorted(k[3] for k in seam.histories(session, [key(r) for r in odd])) == sorted(odd)


def test_lock_resources_is_taken_in_a_write_transaction(
        factory: sessionmaker[Session], seam: Writes) -> None:
    with factory.begin() as session:
        seam.insert_events(session, [event_row("e1", "vm-1", 0)])
        seam.lock_resources(session, [key("vm-2"), key("vm-1"), key("vm-1")])


def test_sightings_reopen_and_size_names_and_resource_types_upsert(
        factory: sessionmaker[Session], seam: Writes) -> None:
    first = {"cloud": "c1", "resource_type": "instance", "resource_id": "vm-1",
             "first_seen_at": T0, "seen_until": T0}
    with factory.begin() as session:
        seam.open_sightings(session, [first])
        seam.open_sightings(session, [{**first, "first_seen_at": T0 + dt.timedelta(hours=1),
                                       "seen_until": None}])
        for name in ("ssd", "fast-ssd"):
            seam.upsert_size_names(session, [{"platform": "openstack", "cloud": "c1",
                                              "kind": "volume_type", "size_id": "t1",
                                              "name": name, "updated_at": T0}])
        for schema in ({"type": "object"}, {"type": "object", "required": ["gb"]}):
            seam.upsert_resource_type(session, "openstack", "thing", schema, T0)
    with factory() as session:
        sighting = session.get(SyncSighting, ("c1", "instance", "vm-1"))
        assert sighting is not None
        assert (sighting.first_seen_at, sighting.seen_until) == (T0 + dt.timedelta(hours=1), None)
        named = session.get(SizeName, ("openstack", "c1", "volume_type", "t1"))
        assert named is not None and named.name == "fast-ssd"
        registered = session.get(ResourceType, ("openstack", "thing"))
        assert registered is not None and registered.size_schema["required"] == ["gb"]


@pytest.mark.parametrize("moment", [
    dt.datetime(1970, 1, 1), dt.datetime(2026, 3, 29, 1, 59, 59, 999999),
    dt.datetime(2099, 12, 31, 23, 59, 59, 1),
])
def test_epoch_micros_is_exact(factory: sessionmaker[Session], seam: Writes,
                               moment: dt.datetime) -> None:
    with factory.begin() as session:
        seam.insert_intervals(session, [{**interval("vm-1", 0, None, "e0"), "start": moment}])
        got = session.execute(sa.select(seam.epoch_micros(ResourceInterval.start))).scalar()
    assert got == epoch_micros(moment)


def test_billing_locks_and_the_close_snapshot(factory: sessionmaker[Session],
                                              seam: Writes) -> None:
    """The operations compose as a close uses them; the snapshot's read sees every
    committed event (the ingest lock's behaviour under concurrency is in
    tests/functional/billing/test_close_concurrency.py)."""
    with factory.begin() as session:
        seam.begin_write(session)
        seam.hold_shared(session, 7)
        seam.insert_events(session, [event_row("e-1", "vm-1", 0)])
    with factory.begin() as session:
        seam.begin_write(session)
        seam.xact_lock(session, 8)

    def count(session: Session) -> int:
        return int(session.execute(sa.select(sa.func.count()).select_from(Event)).scalar_one())

    with seam.serialised(factory, [8, 9]) as guard:
        with seam.snapshot(factory, guard, 7, count) as (session, seen):
            assert seen == 1
            seam.insert_events(session, [event_row("e-2", "vm-1", 1)])
            session.commit()
    with factory() as session:
        assert count(session) == 2


def uses(pattern: str, allowed: Callable[[Path], bool]) -> list[str]:
    """The modules of reporting/ where ``pattern`` occurs, but those ``allowed``."""
    found = re.compile(pattern)
    return [str(path.relative_to(REPO)) for path in sorted((REPO / "reporting").rglob("*.py"))
            if found.search(path.read_text()) and not allowed(path)]


def test_only_the_factory_chooses_by_dialect() -> None:
    """Callers never branch on the dialect: only reporting/db/writes/__init__.py reads
    which database a URL or engine is, the seam's modules alone name a dialect's
    objects, and only the models pick a type per dialect (``with_variant``)."""
    writes_dir = REPO / "reporting/db/writes"
    factory = writes_dir / "__init__.py"
    assert uses(r"dialect\.name|dialect ==|dialect !=|get_backend_name\(|drivername",
                lambda path: path == factory) == []
    assert uses(r"\.dialect\b|sqlalchemy\.dialects",
                lambda path: path.parent == writes_dir) == []
    assert uses(r"with_variant", lambda path: path.parent == REPO / "reporting/db"
                and path.name in ("base.py", "models.py", "billing_models.py")) == []


def test_a_missing_sqlite_file_is_told_and_nothing_else_is(tmp_path: Path) -> None:
    assert writes.missing_database(f"sqlite:///{tmp_path / 'nope.sqlite'}") == (
        f"names the SQLite file {tmp_path / 'nope.sqlite'}, which does not exist")
    (tmp_path / "there.sqlite").touch()
    assert writes.missing_database(f"sqlite:///{tmp_path / 'there.sqlite'}") is None
    assert writes.missing_database("sqlite://") is None  # in memory
    assert writes.private_to_process("sqlite://") and writes.private_to_process("sqlite:///:memory:")
    assert not writes.private_to_process(f"sqlite:///{tmp_path / 'there.sqlite'}")
    assert not writes.private_to_process("postgresql+psycopg://u@db.invalid/none")
    assert writes.missing_database("postgresql+psycopg://u@db.invalid/none") is None
    with pytest.raises(ValueError, match="unsupported database dialect 'mysql'"):
        writes.missing_database("mysql://u@db/x")


# A statement that never ends by itself: only a statement limit stops it.
ENDLESS = sa.text("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                  "SELECT count(*) FROM c")


def test_limit_statement_time_cancels_a_statement_and_leaves_the_pool_unlimited(
        db_url: str) -> None:
    # One pooled connection, so the second session gets the very connection the first
    # one limited.
    engine = writes.create_engine(db_url, pool_size=1, max_overflow=0)
    factory = make_sessionmaker(engine)
    try:
        with factory() as session:
            seam = writes.of(session)
            seam.limit_statement_time(session, 0.2)
            with pytest.raises(sa.exc.OperationalError) as caught:
                session.execute(ENDLESS)
            assert seam.statement_timed_out(caught.value)
            session.rollback()
            # A later transaction of the same session is limited too.
            with pytest.raises(sa.exc.OperationalError) as again:
                session.execute(ENDLESS)
            assert seam.statement_timed_out(again.value)
        with factory() as session:
            # Back from the pool without the limit: a bounded statement that runs far
            # longer than 0.2 s completes.
            counted = session.execute(sa.text(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 3000000) SELECT count(*) FROM c")).scalar_one()
            assert counted == 3000000
    finally:
        engine.dispose()


def test_limit_statement_time_set_inside_a_transaction_applies_to_it(
        factory: sessionmaker[Session]) -> None:
    with factory() as session:
        session.execute(sa.text("SELECT 1"))  # the transaction has begun
        seam = writes.of(session)
        seam.limit_statement_time(session, 0.2)
        with pytest.raises(sa.exc.OperationalError) as caught:
            session.execute(ENDLESS)
        assert seam.statement_timed_out(caught.value)


def test_statement_timed_out_is_false_for_other_database_errors(seam: Writes) -> None:
    # What a lost connection or a locked SQLite file raises: the driver's own error.
    refused = sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))
    assert not seam.statement_timed_out(refused)
