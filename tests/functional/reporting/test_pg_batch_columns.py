"""A batch sent as one array per column (``reporting.db.writes.pg_batch``) reads back
on PostgreSQL as exactly the values sent, whatever the text holds."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reporting.db.writes import pg_batch

pytestmark = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)

# What a text column can hold: anything but NUL (PostgreSQL refuses it, ingest first),
# quotes, backslashes, braces, commas, control characters and the word NULL included.
texts = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")) | (
    st.sampled_from(['"', "\\", "NULL", "null", "", " ", "{}", "a,b", '\\"', "\t\n", "\u2028"]))
COLUMNS = (pg_batch.Column("t", "VARCHAR"), pg_batch.Column("at", "TIMESTAMP WITHOUT TIME ZONE"),
           pg_batch.Column("n", "BIGINT"), pg_batch.Column("b", "BOOLEAN"),
           pg_batch.Column("j", "JSON", is_json=True))
rows = st.lists(st.fixed_dictionaries({
    "t": st.none() | texts,
    "at": st.none() | st.datetimes(min_value=dt.datetime(1970, 1, 1)),
    "n": st.none() | st.integers(-(2**63), 2**63 - 1),
    "b": st.none() | st.booleans(),
    "j": st.none() | st.dictionaries(texts, st.integers() | texts, max_size=3),
}), max_size=6)


@pytest.fixture
def connection(db_url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        yield conn
    engine.dispose()


def read_back(connection: sa.Connection, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    statement = (f"SELECT r.t, r.at, r.n, r.b, CAST(r.j AS text) AS j "  # noqa: S608
                 f"FROM {pg_batch.column_rows(COLUMNS, 'batch')}")
    found = connection.execute(sa.text(statement),
                               pg_batch.column_params(COLUMNS, "batch", batch)).mappings()
    return [dict(row) for row in found]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=rows)
def test_each_column_reads_back_as_sent(connection: sa.Connection,
                                        batch: list[dict[str, Any]]) -> None:
    found = read_back(connection, batch)
    assert [{k: v for k, v in row.items() if k != "j"} for row in found] == [
        {k: v for k, v in row.items() if k != "j"} for row in batch]
    # The JSON text may differ in its escapes (a batch with an integer beyond 64 bits
    # is written by the standard library, in ASCII), never in its value.
    assert [None if row["j"] is None else json.loads(row["j"]) for row in found] == [
        row["j"] for row in batch]


def test_what_orjson_cannot_write_is_quoted_by_the_arrays_rules(
        connection: sa.Connection) -> None:
    batch = [{"t": 'a "q" \\ b', "at": dt.datetime(2026, 1, 2, 3, 4, 5, 6), "n": 2**63 - 1,
              "b": True, "j": {"big": 2**70}},
             {"t": None, "at": None, "n": None, "b": False, "j": None}]
    assert pg_batch.typed_array([2**70, None]) == '{"1180591620717411303424",NULL}'
    found = read_back(connection, batch)
    assert found[0]["t"] == 'a "q" \\ b' and found[0]["j"] == '{"big":1180591620717411303424}'
    assert found[1] == {"t": None, "at": None, "n": None, "b": False, "j": None}
