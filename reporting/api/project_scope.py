"""Which projects a request may read: decided once by auth, applied by the queries.

``read`` and ``admin`` read every project; ``project_reader`` (a keystone token
scoped to project P whose roles map to it, or a bearer token bound to P) reads P
only; ``account_reader`` reads every project its billing account holds now (the
account its bearer token names, or the one holding the project its keystone token
is scoped to), and that account's own views (:func:`require_account_read`). A view
serving project data is decorated with :func:`require_project_read`
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

from reporting.api.auth import authenticated_caller, with_note
from reporting.api.callers import ACCOUNT_READER, PROJECT_READER
from reporting.api.errors import ApiError
from reporting.billing import accounts
from reporting.clock import utcnow
from reporting.db.account_models import BillingAccount
from reporting.db.session import db_session

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
    if caller.role == ACCOUNT_READER:
        return accounts.held_now(db_session(), reader_account(), utcnow())
    raise ApiError(403, "forbidden", with_note(
        "this request needs the read or project_reader role", caller))


def reader_account() -> str:
    """An account reader's account: the one its bearer token names, or the one holding
    now the project its keystone token is scoped to; 403 when there is none."""
    if "tally_reader_account" in g:
        account: str = g.tally_reader_account
        return account
    caller = authenticated_caller()
    session = db_session()
    if caller.account_id is not None:
        account = caller.account_id
        if session.get(BillingAccount, account) is None:
            raise ApiError(403, "forbidden",
                           f"the token reads account {account}, which does not exist")
    else:
        if not caller.project_id:
            raise ApiError(403, "forbidden",
                           "the account_reader role needs a token scoped to a project")
        holders = accounts.holding_now(session, caller.project_id, utcnow())
        if not holders:
            raise ApiError(403, "forbidden",
                           f"project {caller.project_id}, which the token is scoped to, "
                           "belongs to no billing account now, so account_reader reads "
                           "nothing")
        if len(holders) > 1:
            raise ApiError(403, "forbidden",
                           f"project {caller.project_id}, which the token is scoped to, "
                           f"belongs to several billing accounts now ({', '.join(holders)}: "
                           "one per cloud), so account_reader cannot tell which it reads")
        account = holders[0]
    g.tally_reader_account = account
    return account


def require_account_read(view: F) -> F:
    """A view of one account (its ``account_id``) or of the accounts list: read and
    admin see every account, an account reader its own (another is 403); every other
    role 403.  The view reads :func:`visible_account` (None: every account)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        caller = authenticated_caller()
        if caller.role in ("read", "admin"):
            g.tally_visible_account = None
        elif caller.role == ACCOUNT_READER:
            account = reader_account()
            named = kwargs.get("account_id")
            if named is not None and named != account:
                raise ApiError(403, "forbidden",
                               f"the token reads account {account} only, not {named}")
            g.tally_visible_account = account
        else:
            raise ApiError(403, "forbidden", with_note(
                "this request needs the read or account_reader role", caller))
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def visible_account() -> str | None:
    """The one account this request may read; None for every account."""
    account: str | None = g.tally_visible_account
    return account


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
                       f"{name}={value} is outside the project your token is scoped to"
                       if len(projects) <= 1 and authenticated_caller().role == PROJECT_READER
                       else f"{name}={value} is outside the projects your token may read")
    return value
