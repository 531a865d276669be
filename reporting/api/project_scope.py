"""Which projects a request may read: decided once by auth, applied by the queries.

``read`` and ``admin`` read every project; ``project_reader`` (a keystone token
scoped to project P whose roles map to it, or a bearer token bound to P) reads P
only. A view serving project data is decorated with :func:`require_project_read`
(instead of ``require_role("read")``) and passes :func:`visible_projects` to its
queries, which add ``project_id IN (...)`` through
``reporting.queries.scope.restrict``:

- a list is filtered to the visible projects;
- a filter naming another project (``project_id=Q``) is 403: :func:`requested_project`;
- one resource outside them is 404, exactly as a resource that does not exist.

A view not decorated this way refuses project readers (403), so a new endpoint
cannot leak another project's rows by forgetting the filter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import g

from reporting.api.auth import PROJECT_READER, authenticated_caller, with_note
from reporting.api.errors import ApiError

F = TypeVar("F", bound=Callable[..., Any])

# Every project: what read and admin see.
ALL_PROJECTS = None


def _decide() -> frozenset[str] | None:
    caller = authenticated_caller()
    if caller.role in ("read", "admin"):
        return ALL_PROJECTS
    if caller.role == PROJECT_READER:
        if not caller.project_id:
            raise ApiError(403, "forbidden",
                           "the project_reader role needs a token scoped to a project")
        return frozenset({caller.project_id})
    raise ApiError(403, "forbidden", with_note(
        "this request needs the read or project_reader role", caller))


def require_project_read(view: F) -> F:
    """401 without credentials; 403 without read, admin or a project-scoped reader;
    else the view runs with :func:`visible_projects` decided."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.tally_visible_projects = _decide()
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def visible_projects() -> frozenset[str] | None:
    """The projects this request may read; None for every project."""
    if "tally_visible_projects" not in g:
        # A programming error: the view forgot require_project_read.
        raise RuntimeError("visible_projects() outside a require_project_read view")
    projects: frozenset[str] | None = g.tally_visible_projects
    return projects


def requested_project(value: str | None, name: str = "project_id") -> str | None:
    """A parsed ``project_id`` filter, 403 when it names a project the caller may not
    read (never an empty answer that would look like "no usage there")."""
    projects = visible_projects()
    if value is not None and projects is not None and value not in projects:
        raise ApiError(403, "forbidden",
                       f"{name}={value} is outside the project your token is scoped to")
    return value
