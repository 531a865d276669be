"""What the billing endpoints share: path checks and the caller's name."""

from __future__ import annotations

import hashlib

from flask import current_app, request

from reporting.api.auth import current_role
from reporting.api.errors import ApiError
from reporting.billing import periods
from reporting.queries import params


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
