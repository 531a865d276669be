"""``GET /v1/clouds``: every cloud name the history holds, beside the clouds file's.

One cloud booked under two names doubles its usage, so an operator (or a collector
checking its ``[collector] cloud`` at start) must be able to see every name in use.
With a clouds file, ingest refuses an event of a cloud the file does not name
(reason ``unknown cloud``); without one, any cloud is accepted.

Names and resource counts are cloud-wide: roles ``ingest`` (the collector checks its
cloud here at start), ``read`` and ``admin``; a project reader is refused (403).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Flask, current_app, jsonify, request

from reporting.api.auth import require_role
from reporting.api.errors import ApiError
from reporting.db.models import CurrentResource
from reporting.db.session import db_session

bp = Blueprint("clouds", __name__)

_KEY = "TALLY_KNOWN_CLOUDS"


def set_known_clouds(app: Flask, names: frozenset[str] | None) -> None:
    """The clouds file's names (None: the API has no clouds file)."""
    app.config[_KEY] = names


def known_clouds() -> frozenset[str] | None:
    names: frozenset[str] | None = current_app.config.get(_KEY)
    return names


@bp.get("/v1/clouds")
@require_role("ingest", "read")
def list_clouds() -> Any:
    if request.args:
        raise ApiError(400, "bad_request",
                       f"unknown query parameter(s): {', '.join(sorted(request.args))}")
    counts = dict(db_session().execute(
        sa.select(CurrentResource.cloud, sa.func.count()).group_by(CurrentResource.cloud)
    ).all())
    named = known_clouds()
    items = [
        {"cloud": cloud,
         "in_history": cloud in counts,
         "in_clouds_file": None if named is None else cloud in named,
         "resources": int(counts.get(cloud, 0))}
        for cloud in sorted(set(counts) | (named or frozenset()))
    ]
    return jsonify({"clouds_file": named is not None, "items": items})
