"""What the billing endpoints share: path checks and the caller's name."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import sqlalchemy as sa
from flask import current_app, request
from sqlalchemy.orm import Session

from reporting.api.auth import current_role
from reporting.api.errors import ApiError
from reporting.api.project_scope import visible_projects
from reporting.billing import periods
from reporting.db.models import ResourceInterval
from reporting.queries import params, scope

# Who added a price list version or closed a period: a keystone user's name, a digest
# of an admin's bearer token.  Shown to read and admin, never to a project reader.
WHO_FIELDS = ("created_by", "closed_by")


def cloud_path(cloud: str) -> str:
    """A cloud (or ``default``) from the path; 400 unless it could be stored."""
    if not cloud or len(cloud) > 255 or not params.storable(cloud):
        raise ApiError(400, "bad_request", "cloud must be 1 to 255 storable characters")
    return cloud


def period_name(value: str | None) -> str:
    try:
        periods.parse(value)
    except periods.PeriodError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    assert value is not None
    return value


def require_started(period: str, now: dt.datetime) -> None:
    """409 ``period_not_started`` for a month after now's: no statement exists yet."""
    if periods.parse(period)[0] > now:
        raise ApiError(409, "period_not_started",
                       f"period {period} has not started yet (it starts at {period}-01); "
                       "no statement exists before its month")


def caller_name() -> str:
    """Who is asking, for the record: the keystone user, else which bearer token (a
    short digest, never the token), else the strategy."""
    strategy = current_app.config["TALLY_AUTH_STRATEGY"]
    if strategy == "keystone":
        name = request.environ.get("HTTP_X_USER_NAME") or request.environ.get("HTTP_X_USER_ID")
        if name:
            return f"keystone:{name}"[:255]
    if strategy == "token":
        _scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        digest = hashlib.sha256(token.strip().encode()).hexdigest()[:12]
        return f"token:{digest} ({current_role()})"
    return f"{strategy} ({current_role()})"


def for_the_caller(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` as the caller may see it: who did it (``created_by``, ``closed_by``)
    is null for a project reader (``require_project_read`` views only)."""
    if visible_projects() is None:
        return item
    return {key: (None if key in WHO_FIELDS else value) for key, value in item.items()}


def cloud_hidden(session: Session, cloud: str) -> bool:
    """Whether a project reader must be answered as if ``cloud`` were unknown: none of
    its projects has history there, so the answer would only tell that the cloud
    exists (``GET /v1/clouds`` is refused to it).  False for read and admin."""
    projects = visible_projects()
    if projects is None:
        return False
    query = scope.restrict(
        sa.select(ResourceInterval.id).where(ResourceInterval.cloud == cloud),
        ResourceInterval.project_id, projects)
    return session.execute(query.limit(1)).first() is None
