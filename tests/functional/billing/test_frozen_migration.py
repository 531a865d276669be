"""Revision 0015 on both backends: statements frozen whole before it are answered as
stored after it, and its downgrade refuses while a statement is frozen as lines."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from reporting.billing import closing, service, versions
from reporting.db import engine as db_engine
from reporting.db import migrations
from tests.functional.billing.history import ACCEPT_ALL, PRICES, october, seed

NOW = dt.datetime(2026, 12, 15)
BEFORE = "0014_period_currency"
FROZEN_LINES = "0015_frozen_lines_late_facts"


def test_whole_bodies_stay_and_frozen_lines_block_the_downgrade(empty_db_url: str) -> None:
    migrations.upgrade(empty_db_url, BEFORE)
    engine = sa.create_engine(empty_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO billing_periods (cloud, period, status, closed_at, closed_by, "
            "cutoff_seq) VALUES ('c0', '2026-09', 'closed', '2026-10-02', 'test', 0)"))
        conn.execute(sa.text(
            "INSERT INTO closed_statements (cloud, period, project_id, body, subtotal, "
            "adjustments_total, total, unrated_lines) VALUES ('c0', '2026-09', 'p', "
            "'{\"as\":\"stored\"}', 0, 0, 0, 0)"))
    engine.dispose()
    migrations.upgrade(empty_db_url)
    engine = db_engine.make_engine(empty_db_url)
    factory = db_engine.make_sessionmaker(engine)
    try:
        with factory() as session:
            assert service.statement_text(session, "c0", "p", "2026-09", NOW) == (
                '{"as":"stored"}')
            for document in PRICES:
                versions.add(session, "default", document, "test", NOW)
            session.commit()
        seed(factory, october())
        closing.close(factory, "c1", "2026-10", "test", NOW, ACCEPT_ALL)
    finally:
        engine.dispose()
    with pytest.raises(RuntimeError, match="frozen as lines"):
        migrations.downgrade(empty_db_url, BEFORE)
    # The later revisions step down; 0015 itself refuses and stays.
    assert migrations.current(empty_db_url) == (FROZEN_LINES,)
