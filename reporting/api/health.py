"""Health and metrics (docs/reporting-queries.md); open endpoints, no role needed.

- ``GET /healthz``: the process answers;
- ``GET /readyz``: the database answers AND its migrations are at head (503
  otherwise, so a load balancer keeps traffic off a replica that lags);
- ``GET /metrics``: Prometheus text, aggregated over every gunicorn worker
  (``reporting.metrics.exposition``).
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Response
from sqlalchemy.exc import SQLAlchemyError

from reporting import metrics
from reporting.api.errors import ApiError, database_reason
from reporting.db.session import app_engine

LOG = logging.getLogger(__name__)

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@bp.get("/readyz")
def readyz() -> dict[str, Any]:
    from reporting.db import migrations

    engine = app_engine()
    unreachable = None
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        at_head = migrations.is_at_head(engine)
    except SQLAlchemyError as exc:
        unreachable = f"{type(exc).__name__}: {database_reason(exc)}"
    if unreachable is not None:
        # The reason goes to the operator's log, not to the caller; logged after the
        # except block, where oslo.log would add the exception a second time.
        LOG.warning("readyz: database unreachable: %s", unreachable)
        raise ApiError(503, "not_ready", "database unreachable")
    if not at_head:
        raise ApiError(503, "not_ready", "database migrations are not at head")
    return {"status": "ready"}


@bp.get("/metrics")
def prometheus_metrics() -> Response:
    body, content_type = metrics.exposition()
    return Response(body, mimetype=None, content_type=content_type)
