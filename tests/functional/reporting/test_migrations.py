"""The Alembic chain on SQLite and PostgreSQL: round trip, drift, seeds, 0006 rules."""

from __future__ import annotations

import datetime as dt
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from mapping.size_schemas import LOADBALANCER_SEED_MARKER_KEY, SEEDED_SIZE_SCHEMAS
from reporting.db import migrations
from reporting.db.models import POSTGRESQL_ONLY_DRIFT, Base

# The first revisions and their ids are fixed; later components append to the chain.
FIXED = ["0001_events", "0002_projection", "0003_rejected_events", "0004_resource_types",
         "0005_sync", "0006_seed_loadbalancer_type"]
(HEAD,) = migrations.heads()
CHAIN = FIXED + [r for r in migrations.revisions() if r not in FIXED]


def tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def lb_schema(url: str) -> Any:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT size_schema FROM resource_types "
                        "WHERE platform = 'openstack' AND resource_type = 'loadbalancer'")
            ).first()
    finally:
        engine.dispose()
    if row is None:
        return None
    value = row[0]
    return sa.JSON().result_processor(sa.create_engine(url).dialect, None)(value) if isinstance(
        value, str) else value


def set_lb_schema(url: str, document: Any, *, insert: bool = False) -> None:
    engine = sa.create_engine(url)
    table = sa.table("resource_types", sa.column("platform"), sa.column("resource_type"),
                     sa.column("size_schema", sa.JSON), sa.column("updated_at", sa.DateTime))
    with engine.begin() as conn:
        if insert:
            conn.execute(table.insert().values(platform="openstack", resource_type="loadbalancer",
                                               size_schema=document, updated_at=dt.datetime(2026, 1, 1)))
        else:
            conn.execute(table.update().where(table.c.resource_type == "loadbalancer")
                         .values(size_schema=document))
    engine.dispose()


def test_the_chain_is_linear_with_the_fixed_ids() -> None:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(migrations.script_location()))
    revisions = [r.revision for r in reversed(list(script.walk_revisions()))]
    assert revisions[: len(FIXED)] == FIXED
    assert revisions == CHAIN
    assert migrations.heads() == (HEAD,) == (revisions[-1],)
    assert not (migrations.script_location() / "__init__.py").exists()


def test_upgrade_downgrade_upgrade(empty_db_url: str) -> None:
    assert migrations.current(empty_db_url) == ()
    migrations.upgrade(empty_db_url)
    assert migrations.current(empty_db_url) == (HEAD,)
    assert tables(empty_db_url) == set(Base.metadata.tables)
    migrations.downgrade(empty_db_url, "base")
    assert migrations.current(empty_db_url) == ()
    assert tables(empty_db_url) == set()
    migrations.upgrade(empty_db_url)
    assert migrations.current(empty_db_url) == (HEAD,)
    # Step by step down and up again: every revision's downgrade works on its own.
    for target in reversed(CHAIN[:-1]):
        migrations.downgrade(empty_db_url, target)
        assert migrations.current(empty_db_url) == (target,)
    migrations.downgrade(empty_db_url, "base")
    for target in CHAIN:
        migrations.upgrade(empty_db_url, target)
        assert migrations.current(empty_db_url) == (target,)


def _named(change: Any) -> tuple[str, str]:
    return change[0], change[1].name


def test_models_and_migrations_do_not_drift(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    if db_url.startswith("sqlite"):
        assert diff == []
    else:
        # Partitioned history: event_id unique through tally_history.event_ids (below).
        assert all(isinstance(change, tuple) for change in diff), diff
        assert sorted(map(_named, diff)) == sorted(POSTGRESQL_ONLY_DRIFT)


def _catalog(url: str, query: str) -> list[Any]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(query))]
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_the_history_is_partitioned_by_month_on_postgresql(db_url: str) -> None:
    # What the comparison with the metadata cannot see: the partition keys, the keys
    # that hold them, the dedup table's key and a DEFAULT partition behind each table.
    assert _catalog(db_url, "SELECT c.relname, pg_get_partkeydef(c.oid) FROM pg_class c "
                            "WHERE c.relkind = 'p' ORDER BY 1") == [
        ("events", "RANGE (\"timestamp\")"), ("resource_intervals", "RANGE (\"end\")")]
    keys = _catalog(db_url, "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
                            "FROM pg_constraint WHERE contype IN ('p', 'u') AND conrelid = ANY("
                            "ARRAY['events', 'resource_intervals', 'tally_history.event_ids']"
                            "::regclass[]) ORDER BY 1, 2")
    assert keys == [("events", "pk_events", 'PRIMARY KEY (seq, "timestamp")'),
                    ("tally_history.event_ids", "pk_event_ids", "PRIMARY KEY (event_id)")]
    defaults = _catalog(db_url, "SELECT inhparent::regclass::text, inhrelid::regclass::text "
                                "FROM pg_inherits JOIN pg_class c ON c.oid = inhrelid "
                                "WHERE pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' ORDER BY 1")
    assert defaults == [("events", "tally_history.events_default"),
                        ("resource_intervals", "tally_history.resource_intervals_default")]


def test_is_at_head(empty_db_url: str) -> None:
    engine = sa.create_engine(empty_db_url)
    try:
        assert not migrations.is_at_head(engine)
        migrations.upgrade(empty_db_url, "0005_sync")
        assert not migrations.is_at_head(engine)
        migrations.upgrade(empty_db_url)
        assert migrations.is_at_head(engine)
    finally:
        engine.dispose()


def test_seeded_schemas_are_frozen_copies_of_mapping() -> None:
    # The migrations must keep writing what they wrote; mapping/size_schemas.py is the
    # reference.  A change to either side must be a conscious change to both.
    versions = migrations.script_location() / "versions"

    def load(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(name, versions / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    seeded = dict(load("0004_resource_types").SEEDED)
    seeded["loadbalancer"] = load("0006_seed_loadbalancer_type").SEEDED
    assert seeded == SEEDED_SIZE_SCHEMAS


def test_seeds_land_in_the_database(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    table = sa.table("resource_types", sa.column("platform"), sa.column("resource_type"),
                     sa.column("size_schema", sa.JSON))
    with engine.connect() as conn:
        rows = {r.resource_type: r.size_schema for r in conn.execute(sa.select(table))}
    engine.dispose()
    assert rows == SEEDED_SIZE_SCHEMAS


def test_0006_keeps_an_operator_row_on_upgrade_and_downgrade(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, "0005_sync")
    operator = {"type": "object", "properties": {"listeners": {"type": "integer"}}}
    set_lb_schema(empty_db_url, operator, insert=True)
    migrations.upgrade(empty_db_url)  # succeeds on the existing row
    assert migrations.current(empty_db_url) == (HEAD,)
    assert lb_schema(empty_db_url) == operator
    migrations.downgrade(empty_db_url, "0005_sync")
    assert lb_schema(empty_db_url) == operator


def test_0006_downgrade_removes_only_the_unmodified_seed(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url)
    assert lb_schema(empty_db_url) == SEEDED_SIZE_SCHEMAS["loadbalancer"]
    migrations.downgrade(empty_db_url, "0005_sync")
    assert lb_schema(empty_db_url) is None
    migrations.upgrade(empty_db_url)
    assert lb_schema(empty_db_url) == SEEDED_SIZE_SCHEMAS["loadbalancer"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: {**d, "required": ["listeners"]},  # edited, marker still in
        lambda d: {k: v for k, v in d.items() if k != LOADBALANCER_SEED_MARKER_KEY},  # marker removed
        lambda d: {**d, LOADBALANCER_SEED_MARKER_KEY: "operator"},
    ],
)
def test_0006_downgrade_keeps_an_edited_seed(empty_db_url: str, edit: Any) -> None:
    migrations.upgrade(empty_db_url)
    edited = edit(dict(SEEDED_SIZE_SCHEMAS["loadbalancer"]))
    set_lb_schema(empty_db_url, edited)
    migrations.downgrade(empty_db_url, "0005_sync")
    assert lb_schema(empty_db_url) == edited


_HUGE = "12345678901234567890123456789.25"  # 29 digits before the point


def _store_amount(url: str, amount: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO closed_resource_amounts (cloud, period, project_id, resource_type, "
            "resource_id, amount) VALUES ('c1', '2026-10', 'p1', 'image', :r, :a)"),
            {"r": f"i-{amount}", "a": amount})
    engine.dispose()


def _amounts(url: str) -> list[str]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT CAST(amount AS TEXT) FROM closed_resource_amounts"))
        found = [row[0] for row in rows]
    engine.dispose()
    return found


def test_0013_stores_any_amount_and_its_downgrade_loses_none(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, "0012_rejected_filed_key")
    _store_amount(empty_db_url, "1.25")
    migrations.upgrade(empty_db_url, "0013_billing_unbounded_money")
    _store_amount(empty_db_url, _HUGE)  # NUMERIC(18,2) would overflow here
    assert sorted(_amounts(empty_db_url)) == sorted(["1.25", _HUGE])
    if empty_db_url.startswith("sqlite"):
        # decimal text, no bound: nothing to change either way
        migrations.downgrade(empty_db_url, "0012_rejected_filed_key")
        assert sorted(_amounts(empty_db_url)) == sorted(["1.25", _HUGE])
        return
    with pytest.raises(RuntimeError, match="1 row.* of closed_resource_amounts hold an amount"):
        migrations.downgrade(empty_db_url, "0012_rejected_filed_key")
    assert migrations.current(empty_db_url) == ("0013_billing_unbounded_money",)
    assert sorted(_amounts(empty_db_url)) == sorted(["1.25", _HUGE])
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM closed_resource_amounts WHERE amount > 100"))
    engine.dispose()
    migrations.downgrade(empty_db_url, "0012_rejected_filed_key")
    assert _amounts(empty_db_url) == ["1.25"]


def test_0014_gives_each_closed_period_the_currency_its_close_used(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, "0013_billing_unbounded_money")
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        for name, created in (("c2", dt.datetime(2026, 9, 15)),
                              ("default", dt.datetime(2026, 10, 1))):
            conn.execute(sa.text(
                "INSERT INTO price_list_versions (name, number, effective_from, currency, "
                "document, created_at, created_by) VALUES (:n, 1, :e, 'EUR', '{}', :c, 't')"),
                {"n": name, "e": dt.datetime(2026, 8, 1), "c": created})
        for cloud, period, closed_at in (("c1", "2026-08", dt.datetime(2026, 9, 20)),
                                         ("c2", "2026-08", dt.datetime(2026, 9, 20)),
                                         ("c1", "2026-09", dt.datetime(2026, 10, 15))):
            conn.execute(sa.text(
                "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
                "cutoff_seq) VALUES (:cloud, :period, 'closed', :at, 't', 0)"),
                {"cloud": cloud, "period": period, "at": closed_at})
    engine.dispose()

    def currencies() -> dict[tuple[str, str], Any]:
        engine = sa.create_engine(empty_db_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT cloud, period, currency FROM billing_periods"))
            found = {(r.cloud, r.period): r.currency for r in rows}
        engine.dispose()
        return found

    migrations.upgrade(empty_db_url, "0014_period_currency")
    # c1 in August: no version of c1 or default existed at its close (c2's is not its)
    assert currencies() == {("c1", "2026-08"): None, ("c2", "2026-08"): "EUR",
                            ("c1", "2026-09"): "EUR"}
    migrations.downgrade(empty_db_url, "0013_billing_unbounded_money")
    engine = sa.create_engine(empty_db_url)
    assert "currency" not in {c["name"] for c in sa.inspect(engine).get_columns("billing_periods")}
    engine.dispose()
    migrations.upgrade(empty_db_url, "0014_period_currency")
    assert currencies()[("c2", "2026-08")] == "EUR"


def test_0020_gives_periods_closed_before_it_hundredths(empty_db_url: str) -> None:
    """Every currency was rounded to hundredths before 0020 (JPY included): a period
    closed then keeps rendering its frozen lines in hundredths."""
    migrations.upgrade(empty_db_url, "0017_fold_probe_indexes")
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        for cloud, currency in (("c1", "JPY"), ("c2", None)):
            conn.execute(sa.text(
                "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
                "cutoff_seq, currency) VALUES (:cloud, '2026-09', 'closed', :at, 't', 0, :cur)"),
                {"cloud": cloud, "at": dt.datetime(2026, 10, 2), "cur": currency})
    engine.dispose()

    def minor_units() -> dict[str, Any]:
        engine = sa.create_engine(empty_db_url)
        with engine.connect() as conn:
            found = {r.cloud: r.minor_units for r in conn.execute(
                sa.text("SELECT cloud, minor_units FROM billing_periods"))}
            nullable = {c["name"]: c["nullable"] for c in sa.inspect(conn).get_columns(
                "billing_periods")}["minor_units"]
        engine.dispose()
        return {**found, "nullable": nullable}

    migrations.upgrade(empty_db_url, "0020_period_minor_units")
    assert minor_units() == {"c1": 2, "c2": 2, "nullable": False}
    migrations.downgrade(empty_db_url, "0017_fold_probe_indexes")
    engine = sa.create_engine(empty_db_url)
    assert "minor_units" not in {
        c["name"] for c in sa.inspect(engine).get_columns("billing_periods")}
    engine.dispose()
    migrations.upgrade(empty_db_url, "0020_period_minor_units")
    assert minor_units()["c1"] == 2


def _manage(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reporting.cmd.manage", "--config-file", str(config), *args],
        capture_output=True, text=True, timeout=120,
    )


def test_tally_manage(empty_db_url: str, tmp_path: Path) -> None:
    config = tmp_path / "reporting.conf"
    config.write_text(f"[database]\nconnection = {empty_db_url}\n")
    current = _manage(config, "db", "current")
    if empty_db_url.startswith("sqlite"):
        # a missing SQLite file is a typo to report, not a database "at base" to create
        assert current.returncode == 2 and "does not exist" in current.stderr, current.stderr
        current = _manage(config, "db", "upgrade", "base")
    assert current.returncode == 0 and "base" in current.stdout, current.stderr
    assert current.stdout.startswith("database: ") and "base" in current.stdout
    up = _manage(config, "db", "upgrade")
    assert up.returncode == 0, up.stderr
    assert f"{HEAD} (head)" in up.stdout
    down = _manage(config, "db", "downgrade", "0004_resource_types")
    assert down.returncode == 0 and "0004_resource_types (behind head" in down.stdout
    assert migrations.current(empty_db_url) == ("0004_resource_types",)
    bad = _manage(config, "db", "downgrade", "no-such-revision")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "no-such-revision" in bad.stderr
    assert _manage(config, "db", "downgrade").returncode != 0  # REV is required


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[database]\nconnection = nosuchdialect://x\n",
         "tally-manage: configuration error: [database] connection: unsupported database "
         "dialect 'nosuchdialect'"),
        ("[database]\nconnection = postgresql+psycopg://postgres@127.0.0.1:1/x\n",
         "tally-manage: error: "),
        ("[database]\npool_size = many\n", "tally-manage: configuration error: [database] pool_size"),
    ],
)
def test_tally_manage_errors_are_one_line(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "reporting.conf"
    config.write_text(content)
    result = _manage(config, "db", "upgrade")
    assert result.returncode != 0
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
    missing = _manage(tmp_path / "absent.conf", "db", "current")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


def test_0021_records_nothing_accepted_for_periods_closed_before(empty_db_url: str) -> None:
    """A period closed before revision 0021 accepted nothing explicitly: both NULL; the
    downgrade drops the columns and the upgrade brings them back."""
    migrations.upgrade(empty_db_url, "0020_period_minor_units")
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
            "cutoff_seq, currency, minor_units) "
            "VALUES ('c1', '2026-09', 'closed', :at, 't', 0, 'EUR', 2)"),
            {"at": dt.datetime(2026, 10, 2)})
    engine.dispose()

    def accepted() -> list[tuple[Any, ...]]:
        engine = sa.create_engine(empty_db_url)
        with engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.text(
                "SELECT accepted_unrated_lines, accepted_partial_history_from "
                "FROM billing_periods"))]
        engine.dispose()
        return rows

    migrations.upgrade(empty_db_url, "0021_close_acceptances")
    assert accepted() == [(None, None)]
    migrations.downgrade(empty_db_url, "0020_period_minor_units")
    engine = sa.create_engine(empty_db_url)
    assert not {"accepted_unrated_lines", "accepted_partial_history_from"} & {
        c["name"] for c in sa.inspect(engine).get_columns("billing_periods")}
    engine.dispose()
    migrations.upgrade(empty_db_url, "0021_close_acceptances")
    assert accepted() == [(None, None)]


def test_0025_numbers_the_statements_closed_before_it_in_close_order(empty_db_url: str) -> None:
    """Statements closed before revision 0025 get 1, 2, … per cloud in close order
    (the period's closed_at, then period, then project); the downgrade drops the
    numbers and the upgrade gives the same ones again."""
    migrations.upgrade(empty_db_url, "0021_close_acceptances")
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        # c1's 2026-10 was closed before its 2026-09 (a late close of an older month)
        for cloud, period, day in (("c1", "2026-10", 2), ("c1", "2026-09", 5),
                                   ("c2", "2026-09", 1)):
            conn.execute(sa.text(
                "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
                "cutoff_seq, currency, minor_units) "
                "VALUES (:c, :p, 'closed', :at, 't', 0, 'EUR', 2)"),
                {"c": cloud, "p": period, "at": dt.datetime(2026, 11, day)})
            for project in ("pb", "pa"):
                conn.execute(sa.text(
                    "INSERT INTO closed_statements (cloud, period, project_id, body, subtotal, "
                    "adjustments_total, total, unrated_lines) "
                    "VALUES (:c, :p, :j, '{}', 0, 0, 0, 0)"),
                    {"c": cloud, "p": period, "j": project})
    engine.dispose()

    def numbers() -> list[tuple[Any, ...]]:
        engine = sa.create_engine(empty_db_url)
        with engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.text(
                "SELECT cloud, period, project_id, number FROM closed_statements "
                "ORDER BY cloud, number"))]
        engine.dispose()
        return rows

    expected = [("c1", "2026-10", "pa", 1), ("c1", "2026-10", "pb", 2),
                ("c1", "2026-09", "pa", 3), ("c1", "2026-09", "pb", 4),
                ("c2", "2026-09", "pa", 1), ("c2", "2026-09", "pb", 2)]
    migrations.upgrade(empty_db_url, "0025_close_handoff")
    assert numbers() == expected
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(sa.text("UPDATE closed_statements SET number = 1 "
                             "WHERE cloud = 'c1' AND number = 2"))
    engine.dispose()
    migrations.downgrade(empty_db_url, "0021_close_acceptances")
    engine = sa.create_engine(empty_db_url)
    assert "number" not in {
        c["name"] for c in sa.inspect(engine).get_columns("closed_statements")}
    engine.dispose()
    migrations.upgrade(empty_db_url, "0025_close_handoff")
    assert numbers() == expected


def test_0028_adds_the_lines_and_a_line_is_reversed_once(empty_db_url: str) -> None:
    """Revision 0028 adds ``account_lines``, where a second reversal of one line is
    refused by the unique index; its downgrade drops the table and the upgrade brings
    it back empty."""
    migrations.upgrade(empty_db_url, "0028_manual_lines")
    engine = sa.create_engine(empty_db_url)
    insert = sa.text(
        "INSERT INTO account_lines (account_id, number, cloud, period, kind, amount, "
        "currency, minor_units, reason, effective_at, reverses, created_at, created_by) "
        "VALUES ('acme', :n, 'c1', '2026-10', :k, '1.50', 'EUR', 2, 'r', :at, :rev, :at, 't')")
    at = dt.datetime(2026, 10, 2)
    with engine.begin() as conn:
        for number, kind, reverses in ((1, "credit", None), (2, "charge", 1),
                                       (3, "credit", None)):
            conn.execute(insert, {"n": number, "k": kind, "at": at, "rev": reverses})
        amounts = [str(a) for (a,) in conn.execute(sa.text(
            "SELECT amount FROM account_lines ORDER BY number"))]
    assert [a.rstrip("0") for a in amounts] == ["1.5", "1.5", "1.5"]
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(insert, {"n": 4, "k": "credit", "at": at, "rev": 1})
    engine.dispose()
    migrations.downgrade(empty_db_url, "0027_sync_run_kind")
    assert "account_lines" not in tables(empty_db_url)
    migrations.upgrade(empty_db_url, "0028_manual_lines")
    assert "account_lines" in tables(empty_db_url)


def test_0029_adds_the_webhook_outbox_and_its_downgrade_removes_it(empty_db_url: str) -> None:
    """The deliveries and their attempts: stored, one attempt number per delivery, and
    gone on the downgrade (nothing else of the schema changes)."""
    migrations.upgrade(empty_db_url, "0028_manual_lines")
    before = tables(empty_db_url)
    migrations.upgrade(empty_db_url, "0029_close_webhooks")
    assert tables(empty_db_url) == before | {"webhook_deliveries", "webhook_attempts"}
    engine = sa.create_engine(empty_db_url)
    at = dt.datetime(2026, 11, 1)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO webhook_deliveries (cloud, period, event, body, created_at, status, "
            "attempts, retry_from, next_attempt_at) "
            "VALUES ('c1', '2026-10', 'period.closed', '{}', :at, 'pending', 1, 0, :at)"),
            {"at": at})
        (delivery_id,) = conn.execute(sa.text("SELECT id FROM webhook_deliveries")).one()
        conn.execute(sa.text(
            "INSERT INTO webhook_attempts (delivery_id, number, attempted_at, status_code) "
            "VALUES (:d, 1, :at, 500)"), {"d": delivery_id, "at": at})
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(sa.text(
            "INSERT INTO webhook_attempts (delivery_id, number, attempted_at, status_code) "
            "VALUES (:d, 1, :at, 200)"), {"d": delivery_id, "at": at})
    engine.dispose()
    migrations.downgrade(empty_db_url, "0028_manual_lines")
    assert tables(empty_db_url) == before
    migrations.upgrade(empty_db_url)
    assert migrations.current(empty_db_url) == (HEAD,)


def test_0030_adds_the_commitments_one_per_instant(empty_db_url: str) -> None:
    """Revision 0030 adds ``account_commitments``, where a second commitment of an
    account at the same instant is refused by the primary key; its downgrade drops the
    table (nothing else of the schema changes) and the upgrade brings it back empty."""
    migrations.upgrade(empty_db_url, "0029_close_webhooks")
    before = tables(empty_db_url)
    migrations.upgrade(empty_db_url, "0030_account_commitments")
    assert tables(empty_db_url) == before | {"account_commitments"}
    engine = sa.create_engine(empty_db_url)
    insert = sa.text(
        "INSERT INTO account_commitments (account_id, effective_from, currency, minimum, "
        "minor_units, created_at, created_by) VALUES ('acme', :at, 'EUR', :m, 2, :at, 't')")
    with engine.begin() as conn:
        conn.execute(insert, {"at": dt.datetime(2026, 10, 1), "m": "50.00"})
        conn.execute(insert, {"at": dt.datetime(2026, 11, 1), "m": "0"})
        minimums = [str(m) for (m,) in conn.execute(sa.text(
            "SELECT minimum FROM account_commitments ORDER BY effective_from"))]
    assert minimums[0].startswith("50") and minimums[1].rstrip(".0") == ""
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(insert, {"at": dt.datetime(2026, 10, 1), "m": "60.00"})
    engine.dispose()
    migrations.downgrade(empty_db_url, "0029_close_webhooks")
    assert tables(empty_db_url) == before
    migrations.upgrade(empty_db_url)
    assert migrations.current(empty_db_url) == (HEAD,)
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM account_commitments")).scalar() == 0
    engine.dispose()


def test_0031_adds_the_discounts_one_per_instant(empty_db_url: str) -> None:
    """Revision 0031 adds ``account_discounts``, where a second discount of an account
    at the same instant is refused by the primary key and a percent keeps its
    hundredths; its downgrade drops the table (nothing else of the schema changes) and
    the upgrade brings it back empty."""
    migrations.upgrade(empty_db_url, "0030_account_commitments")
    before = tables(empty_db_url)
    migrations.upgrade(empty_db_url, "0031_account_discounts")
    assert tables(empty_db_url) == before | {"account_discounts"}
    engine = sa.create_engine(empty_db_url)
    insert = sa.text(
        "INSERT INTO account_discounts (account_id, effective_from, percent, reason, "
        "created_at, created_by) VALUES ('acme', :at, :p, 'agreed', :at, 't')")
    with engine.begin() as conn:
        conn.execute(insert, {"at": dt.datetime(2026, 10, 1), "p": "12.50"})
        conn.execute(insert, {"at": dt.datetime(2026, 11, 1), "p": "0.01"})
        percents = [str(p) for (p,) in conn.execute(sa.text(
            "SELECT percent FROM account_discounts ORDER BY effective_from"))]
    assert percents == ["12.50", "0.01"]
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.execute(insert, {"at": dt.datetime(2026, 10, 1), "p": "20"})
    engine.dispose()
    migrations.downgrade(empty_db_url, "0030_account_commitments")
    assert tables(empty_db_url) == before
    migrations.upgrade(empty_db_url)
    assert migrations.current(empty_db_url) == (HEAD,)
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM account_discounts")).scalar() == 0
    engine.dispose()


_HISTORY = (
    # Events of three months, one of them years before the others (its own partition),
    # and intervals ended in several months and open.
    "INSERT INTO events (event_id, event_type, platform, cloud, resource_type, resource_id, "
    "project_id, timestamp, source, payload, received_at) "
    "SELECT 'e-' || g, 'compute.instance.update', 'openstack', 'c1', 'instance', "
    "'vm-' || (g % 50), 'p-' || (g % 7), CASE WHEN g % 97 = 0 THEN :old ELSE :t0 END "
    "+ g * interval '37 minutes', 'collector', '{\"n\": 1}', :t0 FROM generate_series(1, 4000) g",
    "INSERT INTO resource_intervals (platform, cloud, resource_type, resource_id, start, "
    "\"end\", project_id, state, size, event_id) SELECT 'openstack', 'c1', 'instance', "
    "'vm-' || g, :t0 + g * interval '1 hour', CASE WHEN g % 3 = 0 THEN NULL "
    "ELSE :t0 + g * interval '2 hours' END, 'p-1', 'active', '{\"vcpus\": 2}', 'e-' || g "
    "FROM generate_series(1, 1500) g",
)


def _rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return {table: [tuple(r) for r in conn.execute(sa.text(
                f"SELECT * FROM {table} ORDER BY {key}"))]  # noqa: S608 - our names
                for table, key in (("events", "seq"), ("resource_intervals", "id"))}
    finally:
        engine.dispose()


def _sequences(url: str) -> list[tuple[Any, ...]]:
    return _catalog(url, "SELECT last_value, increment_by, cache_size FROM pg_sequences "
                         "WHERE sequencename IN ('events_seq_seq', 'resource_intervals_id_seq') "
                         "ORDER BY sequencename") if not url.startswith("sqlite") else []


def test_0032_keeps_every_row_of_a_populated_history_both_ways(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, "0031_account_discounts")
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        for statement in _HISTORY if not empty_db_url.startswith("sqlite") else ():
            conn.execute(sa.text(statement), {"t0": dt.datetime(2026, 3, 1),
                                              "old": dt.datetime(2019, 6, 1)})
        if empty_db_url.startswith("sqlite"):  # no generate_series: a few rows by hand
            for n in range(1, 40):
                conn.execute(sa.text(
                    "INSERT INTO events (event_id, event_type, platform, cloud, resource_type, "
                    "resource_id, project_id, timestamp, source, payload, received_at) VALUES "
                    "(:e, 't', 'openstack', 'c1', 'instance', 'vm', 'p', :t, 'collector', '{}', "
                    ":t)"), {"e": f"e-{n}", "t": dt.datetime(2026, 1 + n % 12, 1)})
    engine.dispose()
    before, sequences = _rows(empty_db_url), _sequences(empty_db_url)
    assert len(before["events"]) > 0
    migrations.upgrade(empty_db_url)
    assert _rows(empty_db_url) == before
    assert _sequences(empty_db_url) == sequences
    if not empty_db_url.startswith("sqlite"):
        placed = dict(_catalog(empty_db_url, "SELECT tableoid::regclass::text, count(*) "
                                             "FROM events GROUP BY 1"))
        assert placed["tally_history.events_y2019m06"] > 0  # a month of its own
        assert placed.get("tally_history.events_default", 0) == 0
        ids = _catalog(empty_db_url, "SELECT count(*) FROM tally_history.event_ids")
        assert ids == [(len(before["events"]),)]
        opened = _catalog(empty_db_url, "SELECT count(*) FROM tally_history."
                                        "resource_intervals_default")
        assert opened == [(500,)]  # the open intervals
    migrations.downgrade(empty_db_url, "0031_account_discounts")
    assert _rows(empty_db_url) == before
    assert _sequences(empty_db_url) == sequences
    if not empty_db_url.startswith("sqlite"):
        assert _catalog(empty_db_url, "SELECT to_regnamespace('tally_history')") == [(None,)]
        assert _catalog(empty_db_url, "SELECT conname FROM pg_constraint WHERE conrelid = "
                                      "'events'::regclass ORDER BY 1") == [
            ("pk_events",), ("uq_events_event_id",)]


def test_0033_fills_first_event_at_from_the_events_held(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, "0032_history_partitions")
    engine = sa.create_engine(empty_db_url)
    held = {"vm-a": [dt.datetime(2026, 5, 2), dt.datetime(2026, 1, 9), dt.datetime(2026, 3, 1)],
            "vm-b": [dt.datetime(2025, 12, 31)], "vm-pruned": []}
    with engine.begin() as conn:
        if not empty_db_url.startswith("sqlite"):
            conn.execute(sa.text("INSERT INTO tally_history.event_ids "
                                 "SELECT 'e-' || g FROM generate_series(1, 4) g"))
        n = 0
        for rid, instants in held.items():
            for at in instants:
                n += 1
                conn.execute(sa.text(
                    "INSERT INTO events (seq, event_id, event_type, platform, cloud, "
                    "resource_type, resource_id, project_id, timestamp, source, payload, "
                    "received_at) VALUES (:n, :e, 't', 'openstack', 'c1', 'instance', :r, 'p', "
                    ":t, 'collector', '{}', :t)"), {"n": n, "e": f"e-{n}", "r": rid, "t": at})
            conn.execute(sa.text(
                "INSERT INTO current_resources (platform, cloud, resource_type, resource_id, "
                "project_id, live, last_event_at, last_event_id, last_event_seq) VALUES "
                "('openstack', 'c1', 'instance', :r, 'p', false, :t, 'e', 1)"),
                {"r": rid, "t": dt.datetime(2026, 6, 1)})
        # Another cloud's events of the same resource id are not its events.
        conn.execute(sa.text(
            "INSERT INTO events (seq, event_id, event_type, platform, cloud, resource_type, "
            "resource_id, project_id, timestamp, source, payload, received_at) VALUES "
            "(99, 'other', 't', 'openstack', 'c2', 'instance', 'vm-a', 'p', :t, 'collector', "
            "'{}', :t)"), {"t": dt.datetime(2020, 1, 1)})
    engine.dispose()
    migrations.upgrade(empty_db_url)
    engine = sa.create_engine(empty_db_url)
    with engine.connect() as conn:
        filled = dict(conn.execute(sa.text(  # type: ignore[arg-type]
            "SELECT resource_id, first_event_at FROM current_resources").columns(
                resource_id=sa.String, first_event_at=sa.DateTime)).all())
    engine.dispose()
    assert filled == {"vm-a": dt.datetime(2026, 1, 9), "vm-b": dt.datetime(2025, 12, 31),
                      "vm-pruned": None}
    migrations.downgrade(empty_db_url, "0032_history_partitions")
    assert len(_catalog(empty_db_url, "SELECT * FROM current_resources")) == 3
