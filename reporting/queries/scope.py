"""The query side of project scoping (``reporting.api.project_scope``): the projects
a caller may read become ``project_id IN (...)`` on whichever table a query reads."""

from __future__ import annotations

from typing import Any, TypeVar

import sqlalchemy as sa

Query = TypeVar("Query", bound=Any)


def condition(column: Any, projects: frozenset[str] | None) -> sa.ColumnElement[bool] | None:
    """``column IN projects``; None for None (every project)."""
    if projects is None:
        return None
    return column.in_(sorted(projects))


def restrict(query: Query, column: Any, projects: frozenset[str] | None) -> Query:
    """``query`` limited to rows whose ``column`` is in ``projects`` (None: unchanged)."""
    where = condition(column, projects)
    return query if where is None else query.where(where)
