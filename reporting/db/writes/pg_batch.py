"""PostgreSQL batch writes: a whole batch as ONE JSON parameter.

``json_to_recordset`` turns it back into typed rows server-side, so writing 1000
rows costs one short statement and one ``orjson.dumps`` instead of thousands of
bind parameters adapted one by one (the ingest hot path).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

_DIALECT = postgresql.dialect()


def _default(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as one JSON text.  Values are what ingest validated: finite numbers
    (orjson would write NaN as null), no NUL, no lone surrogate.  What orjson
    cannot write (an integer beyond 64 bits) is written by the standard library."""
    try:
        # orjson writes a naive datetime as isoformat() does, without a call per value.
        return orjson.dumps(rows, default=_default).decode()
    except orjson.JSONEncodeError:
        return json.dumps(rows, default=_default, separators=(",", ":"))


def array_literal(values: Iterable[str | int]) -> str:
    """``values`` as the text of a PostgreSQL array, for a ``CAST(:p AS type[])``
    parameter: psycopg adapts a list element by element in Python, which cost a
    tenth of a batch's Python time for the ids, locks and locators of the fold.
    Every element is quoted (a comma, brace, space or the word NULL stays data)."""
    texts = list(map(str, values))
    every = "".join(texts)
    if '"' not in every and "\\" not in every:  # ids, keys, ctids: nothing to escape
        return '{"' + '","'.join(texts) + '"}' if texts else "{}"
    return "{" + ",".join(
        '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"' for text in texts
    ) + "}"


def _quoted(name: str) -> str:
    return f'"{name}"'


def column_definitions(table: sa.Table, columns: Sequence[str]) -> str:
    """``"col" type, ...`` of ``columns`` of ``table``, as a recordset declares them."""
    return _definitions(table, tuple(columns))


def column_type(table: sa.Table, column: str) -> str:
    """The PostgreSQL type of ``column`` of ``table``, as a cast names it."""
    return str(table.c[column].type.compile(dialect=_DIALECT))


@functools.lru_cache(maxsize=256)
def _definitions(table: sa.Table, columns: tuple[str, ...]) -> str:
    # Compiling the types costs more than a batch's statement text: once per shape.
    return ", ".join(f"{_quoted(c)} {column_type(table, c)}" for c in columns)


def recordset(table: sa.Table, columns: Sequence[str], alias: str = "r") -> str:
    """``json_to_recordset(:batch) AS r(col type, ...)`` for ``columns`` of ``table``."""
    return (f"json_to_recordset(CAST(:batch AS json)) AS "
            f"{alias}({column_definitions(table, columns)})")


def insert(session: Session, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT every row (all rows carry the same keys)."""
    columns = list(rows[0])
    names = ", ".join(_quoted(c) for c in columns)
    statement = (
        f"INSERT INTO {table.name} ({names}) "  # noqa: S608 - names come from the model
        f"SELECT {names} FROM {recordset(table, columns)}"
    )
    session.execute(sa.text(statement), {"batch": dumps(rows)})

