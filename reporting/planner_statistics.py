"""Planner statistics for the fold's by-key lookups on PostgreSQL.

Without statistics, or with statistics of a handful of rows, PostgreSQL may serve
the lookup of ``current_resources`` rows by their whole key from
``ix_current_resources_cloud_type_live`` instead of the primary key: each of a
batch's 1000 lookups then walks every row of its (cloud, type), and booking into a
fresh projection slows down with every batch (measured: a batch of 1000 new
instances took 0.2 s with 2,000 rows in the projection, 0.8 s with 30,000, where
the primary key answers in 2 ms; a first sync of 100,000 resources spent most of
its three minutes there).  Statistics of the first 1000 rows already show few
distinct clouds and types and bring the primary key back.

Autovacuum takes such statistics too, but only at its next round (a minute by
default, never where it is off), and a fresh deployment's first flood (a collector
draining its backlog, a first sync) comes sooner.  So, after a batch is stored,
the ingest path ANALYZEs the lookup tables that have grown to more than twice the
size their statistics describe (a table never analysed describes no size), at
most once a second per process.  Later growth is autovacuum's: a table doubles
ever more rarely.  A table the database user does not own is skipped with a
warning by PostgreSQL.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

LOG = logging.getLogger(__name__)

# The tables the fold looks resources up in, by their whole key.
LOOKUP_TABLES = ("current_resources", "resource_intervals", "events")
CHECK_INTERVAL_S = 1.0

# relpages is the size in pages as of the last ANALYZE (or VACUUM, CREATE INDEX);
# pg_relation_size is the size now, read from the file, never stale.
_OUTGROWN = sa.text(
    "SELECT c.relname FROM pg_class AS c "
    "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN :names "
    "AND pg_relation_size(c.oid) > "
    "2 * c.relpages::bigint * current_setting('block_size')::bigint "
    "ORDER BY c.relname"
).bindparams(sa.bindparam("names", expanding=True))

_clock = time.monotonic  # tests replace it
_next_check: weakref.WeakKeyDictionary[sa.Engine, float] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def analyze_outgrown(session: Session) -> list[str]:
    """ANALYZE the lookup tables more than twice the size their statistics describe.

    Answers the tables analysed (sorted); other dialects than PostgreSQL: none."""
    if session.get_bind().dialect.name != "postgresql":
        return []
    outgrown = list(session.execute(_OUTGROWN, {"names": list(LOOKUP_TABLES)}).scalars())
    if outgrown:
        session.execute(sa.text("ANALYZE " + ", ".join(outgrown)))
    return outgrown


def after_stored(factory: sessionmaker[Session]) -> list[str]:
    """Called after events were stored: ``analyze_outgrown`` at most once every
    ``CHECK_INTERVAL_S`` per engine.  Answers the tables analysed."""
    engine = factory.kw.get("bind")
    if not isinstance(engine, sa.Engine) or engine.dialect.name != "postgresql":
        return []
    now = _clock()
    with _lock:
        if now < _next_check.get(engine, 0.0):
            return []
        _next_check[engine] = now + CHECK_INTERVAL_S
    with factory.begin() as session:
        analysed = analyze_outgrown(session)
    if analysed:
        LOG.info("Analysed %s: grown past twice the size of their planner statistics",
                 ", ".join(analysed))
    return analysed
