"""The monthly partitions of the history (migration 0032, ``reporting.db.partitions``):
an event of any month is stored exactly once, ``partitions ensure`` creates months
ahead and empties the DEFAULT partition into them, ``history prune`` refuses while
anything needs a month and drops (and archives) it once nothing does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.clock import utcnow
from reporting.cmd import manage
from reporting.db import partitions
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.ingest import ingest
from tests.functional.sync.conftest import CLOUD, collector_create

postgresql_only = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)

# Years away from the clock: no partition the migration made ahead holds these months.
MARCH = dt.datetime(2031, 3, 10, tzinfo=dt.UTC)
APRIL = dt.datetime(2031, 4, 10, tzinfo=dt.UTC)
MAY = dt.datetime(2031, 5, 10, tzinfo=dt.UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def factory(engine: sa.Engine) -> sessionmaker[Session]:
    return make_sessionmaker(engine)


def store(factory: sessionmaker[Session], items: list[dict[str, Any]]) -> list[str]:
    return [r.status for r in ingest(factory, items, require_size_schema=False)]


def deleted(resource_id: str, at: dt.datetime) -> dict[str, Any]:
    item = collector_create("instance", resource_id, at)
    return {**item, "event_id": f"delete-{resource_id}", "event_type": "compute.instance.delete.end"}


def placed(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.execute(sa.text(  # type: ignore[arg-type]
            "SELECT tableoid::regclass::text, count(*) FROM events GROUP BY 1")).all())


def close(engine: sa.Engine, *periods: str) -> None:
    """Record periods of the test cloud closed at the newest receipt (what a close
    leaves in billing_periods; prune reads nothing else of it)."""
    with engine.begin() as conn:
        for period in periods:
            conn.execute(sa.text(
                "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
                "cutoff_seq, minor_units) SELECT :cloud, :period, 'closed', now(), 'test', "
                "coalesce(max(seq), 0), 2 FROM events"), {"cloud": CLOUD, "period": period})


@postgresql_only
def test_an_event_id_is_stored_once_across_months(factory: sessionmaker[Session],
                                                  engine: sa.Engine) -> None:
    first = collector_create("instance", "vm-1", MARCH)
    assert store(factory, [first]) == ["stored"]
    # The same id dated in another month (another partition) is still a redelivery.
    again = {**first, "timestamp": collector_create("instance", "vm-1", APRIL)["timestamp"]}
    assert store(factory, [again]) == ["duplicate"]
    assert store(factory, [first, collector_create("instance", "vm-2", APRIL)]) == [
        "duplicate", "stored"]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() == 2
        assert conn.execute(sa.text(
            "SELECT count(*) FROM tally_history.event_ids")).scalar_one() == 2


@postgresql_only
def test_ensure_creates_months_ahead_and_moves_the_default_rows_in(
        factory: sessionmaker[Session], engine: sa.Engine) -> None:
    # No partition of 2031: the events land in the DEFAULT partition, none is lost.
    assert store(factory, [collector_create("instance", "vm-1", MARCH),
                           deleted("vm-1", APRIL)]) == ["stored", "stored"]
    assert placed(engine) == {"tally_history.events_default": 2}
    created = partitions.ensure(engine, 1, dt.datetime(2031, 5, 20))
    assert created == [
        "tally_history.events_y2031m03", "tally_history.events_y2031m04",
        "tally_history.events_y2031m05", "tally_history.events_y2031m06",
        # The interval of vm-1 ended in April; an open one would stay in the DEFAULT.
        "tally_history.resource_intervals_y2031m04", "tally_history.resource_intervals_y2031m05",
        "tally_history.resource_intervals_y2031m06"]
    assert placed(engine) == {"tally_history.events_y2031m03": 1,
                              "tally_history.events_y2031m04": 1}
    with engine.connect() as conn:
        indexes = conn.execute(sa.text(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'tally_history' "
            "AND tablename = 'events_y2031m03'")).scalar_one()
        options = conn.execute(sa.text(
            "SELECT reloptions FROM pg_class WHERE relname IN "
            "('resource_intervals_y2031m04', 'resource_intervals_default')")).scalars().all()
    assert indexes == 5  # the primary key, event_id and the three of the history
    assert options[0] == options[1] and "fillfactor=50" in options[0]
    assert partitions.ensure(engine, 1, dt.datetime(2031, 5, 20)) == []
    # The fold still finds and rewrites the moved rows: a late event replays vm-1.
    late = collector_create("instance", "vm-1", MARCH + dt.timedelta(days=1))
    assert store(factory, [{**late, "event_id": "late-1",
                            "event_type": "compute.instance.update"}]) == ["stored"]
    with engine.connect() as conn:
        assert conn.execute(sa.text(
            "SELECT count(*) FROM resource_intervals WHERE \"end\" IS NULL")).scalar_one() == 0


@postgresql_only
def test_prune_refuses_naming_what_needs_the_months_then_drops_them(
        factory: sessionmaker[Session], engine: sa.Engine, tmp_path: Path) -> None:
    assert store(factory, [collector_create("instance", "vm-old", MARCH),
                           deleted("vm-old", APRIL),
                           collector_create("instance", "vm-live", APRIL)]) == ["stored"] * 3
    before = partitions.month_start("2031-05")

    def refused() -> str:
        with pytest.raises(partitions.Refused) as caught:
            partitions.prune(engine, before, tmp_path / "archive")
        return str(caught.value)

    assert "wait in a DEFAULT partition (events: 3, resource_intervals: 1)" in refused()
    partitions.ensure(engine, 0, dt.datetime(2031, 5, 1))
    reason = refused()
    assert "2 period(s) not closed still need them (cloud month): sim 2031-03, sim 2031-04" \
        in reason
    assert "1 resource(s) still live or with later events" in reason and "vm-live" in reason
    assert "late events not yet booked on a statement (cloud events): sim 3" in reason
    close(engine, "2031-03", "2031-04")
    reason = refused()
    assert "not closed" not in reason and "late events" not in reason
    assert "instance vm-live" in reason
    # vm-live's delete in May: its history ends after the cutoff, still needed.
    assert store(factory, [deleted("vm-live", MAY)]) == ["stored"]
    assert "vm-live" in refused()
    assert not (tmp_path / "archive").exists()  # nothing written while refused
    with engine.begin() as conn:  # vm-live never existed before May: only vm-old remains
        conn.execute(sa.text("DELETE FROM events WHERE resource_id = 'vm-live'"))
        conn.execute(sa.text("DELETE FROM current_resources WHERE resource_id = 'vm-live'"))
        conn.execute(sa.text("DELETE FROM resource_intervals WHERE resource_id = 'vm-live'"))
    pruned = partitions.prune(engine, before, tmp_path / "archive")
    # Those of 2031 and the empty ones the migration made ahead of the clock.
    assert [name for name in pruned.partitions if "2031" in name] == [
        "tally_history.events_y2031m03", "tally_history.events_y2031m04",
        "tally_history.resource_intervals_y2031m04"]
    with engine.connect() as conn:
        for table, _ in partitions.TABLES:
            assert min(partitions.months_of(conn, table)) == before
    assert sorted(path.name for path in pruned.archived if "2031" in path.name) == [
        "events_y2031m03.csv", "events_y2031m04.csv", "resource_intervals_y2031m04.csv"]
    assert len(pruned.archived) == len(pruned.partitions)
    march = (tmp_path / "archive" / "events_y2031m03.csv").read_text().splitlines()
    assert march[0].startswith("seq,event_id,") and len(march) == 2
    assert "collector-instance-vm-old-" in march[1]
    assert placed(engine) == {}
    # A redelivery of a pruned event is still recognised: stored once, ever.
    assert store(factory, [collector_create("instance", "vm-old", MARCH)]) == ["duplicate"]
    assert partitions.prune(engine, before).partitions == []


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_tally_manage_partitions_and_prune(db_url: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "reporting.conf"
    config.write_text(f"[database]\nconnection = {db_url}\n")
    base = ["--config-file", str(config)]
    assert manage.main([*base, "history", "prune", "--before", "2031-13"]) == 2
    assert "--before: '2031-13' is not a month (write YYYY-MM" in capsys.readouterr().err
    assert manage.main([*base, "partitions", "ensure", "--months-ahead", "-1"]) == 2
    assert "--months-ahead must be 0 or more" in capsys.readouterr().err
    if db_url.startswith("sqlite"):
        assert manage.main([*base, "partitions", "ensure"]) == 0
        assert "the history is not partitioned" in capsys.readouterr().out
        assert manage.main([*base, "history", "prune", "--before", "2031-05"]) == 1
        assert "the history is not partitioned" in capsys.readouterr().err
        return
    assert manage.main([*base, "partitions", "ensure", "--months-ahead", "0"]) == 0
    assert "every partition exists already" in capsys.readouterr().out
    assert manage.main([*base, "partitions", "ensure", "--since", "2026-7"]) == 2
    assert "--since: '2026-7' is not a month" in capsys.readouterr().err
    # The migration made this month and later ones: --since adds the two before it.
    this = utcnow().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    earlier = [(this - dt.timedelta(days=days)).strftime("y%Ym%m") for days in (40, 10)]
    assert manage.main([*base, "partitions", "ensure", "--months-ahead", "0",
                        "--since", (this - dt.timedelta(days=40)).strftime("%Y-%m")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "created " + ", ".join(
        f"tally_history.{table}_{month}" for table in ("events", "resource_intervals")
        for month in earlier)
    assert manage.main([*base, "history", "prune", "--before", "2001-01"]) == 0
    assert "nothing pruned" in capsys.readouterr().out
