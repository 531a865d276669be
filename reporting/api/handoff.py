"""The hand-off on close (``docs/statements.md``, "Hand-off on close"):

- ``GET /v1/periods/{cloud}/{YYYY-MM}/deliveries`` (admin): the period's webhook
  deliveries with every attempt; ``POST …/deliveries/{id}/redeliver`` (admin) makes one
  due now for a new round of attempts;
- ``GET /v1/periods/{cloud}/{YYYY-MM}/export?format=json|csv`` (read): every closed
  statement of a closed period with its number and lines, from the frozen rows, so
  the same bytes every time (409 ``period_open`` for an open period).

``init_app`` reads ``[handoff]``: with a webhook URL, closes write their notice
(``reporting.billing.handoff.outbox``) and each serving process runs the delivery
worker (``reporting.billing.delivery``) in a daemon thread, started by its first
request (or by tally-reporting's workers as they start).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Flask, Response, request, stream_with_context
from oslo_config import cfg

from mapping.event import format_timestamp
from reporting.api.auth import require_role
from reporting.api.billing_common import cloud_path, period_name
from reporting.api.errors import ApiError
from reporting.api.periods import require_known
from reporting.api.statements import LINE_FIELDS, NUMERIC_FIELDS, cell, neutralised, tier_row
from reporting.billing import delivery, handoff
from reporting.billing.delivery import Deliverer, settings
from reporting.clock import utcnow
from reporting.db.base import BIGINT_MAX
from reporting.db.billing_models import BillingPeriod
from reporting.db.handoff_models import WebhookAttempt, WebhookDelivery
from reporting.db.session import SESSIONMAKER_KEY, app_sessionmaker, db_session
from reporting.queries import params
from tally_common.digits import ascii_digits

bp = Blueprint("handoff", __name__)

DELIVERER_KEY = "tally.handoff.deliverer"
FORMATS = ("json", "csv")
# The export's CSV: one row per line, adjustment and statement, each with the
# statement's number (docs/statements.md gives the layout).
CSV_FIELDS = ("number", "project_id", "currency", "record", *LINE_FIELDS, "period",
              "event_ids", "subtotal", "adjustments_total", "total", "unrated_lines")
_TOTALS = ("subtotal", "adjustments_total", "total", "unrated_lines")


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """With ``[handoff] webhook_url``: closes write their notice and the delivery
    worker runs; a URL without a secret raises (the service does not start)."""
    config = settings(conf)  # HandoffConfigError, a ValueError, for a URL without a secret
    if config is None:
        return
    app.extensions[handoff.NOTICE_KEY] = handoff.outbox(conf)
    if not conf.handoff.deliver:
        return
    deliverer = Deliverer(app.extensions[SESSIONMAKER_KEY], config)
    app.extensions[DELIVERER_KEY] = deliverer

    @app.before_request
    def _deliver_here() -> None:
        deliverer.ensure_running()  # once per process (a fork has no thread)


def deliverer_of(app: Flask) -> Deliverer | None:
    return app.extensions.get(DELIVERER_KEY)


def _attempt(row: WebhookAttempt) -> dict[str, Any]:
    return {"number": row.number, "attempted_at": format_timestamp(row.attempted_at),
            "status_code": row.status_code, "error": row.error}


def _delivery(row: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    return {
        "id": row.id, "cloud": row.cloud, "period": row.period, "event": row.event,
        "status": row.status, "created_at": format_timestamp(row.created_at),
        "next_attempt_at": (format_timestamp(row.next_attempt_at)
                            if row.status == "pending" else None),
        "delivered_at": format_timestamp(row.delivered_at) if row.delivered_at else None,
        "attempts": [_attempt(a) for a in attempts],
    }


@bp.get("/v1/periods/<cloud>/<period>/deliveries")
@require_role("admin")
def list_deliveries(cloud: str, period: str) -> Response:
    """The period's deliveries, oldest first, each with its attempts in order."""
    cloud, period = cloud_path(cloud), period_name(period)
    params.only(request.args, frozenset())
    session = db_session()
    rows = list(session.execute(
        sa.select(WebhookDelivery)
        .where(WebhookDelivery.cloud == cloud, WebhookDelivery.period == period)
        .order_by(WebhookDelivery.id)).scalars())
    if not rows:
        require_known(cloud)
    attempts: dict[int, list[WebhookAttempt]] = {row.id: [] for row in rows}
    if rows:
        for attempt in session.execute(
                sa.select(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(list(attempts)))
                .order_by(WebhookAttempt.delivery_id, WebhookAttempt.number)).scalars():
            attempts[attempt.delivery_id].append(attempt)
    items = [_delivery(row, attempts[row.id]) for row in rows]
    body = {"cloud": cloud, "period": period, "items": items, "next_marker": None}
    return Response(json.dumps(body, separators=(",", ":")), mimetype="application/json")


@bp.post("/v1/periods/<cloud>/<period>/deliveries/<delivery_id>/redeliver")
@require_role("admin")
def redeliver(cloud: str, period: str, delivery_id: str) -> Response:
    """Post a delivery again (failed, delivered or pending): due now, a new round of
    ``[handoff] max_attempts``; 409 while a worker is posting it."""
    cloud, period = cloud_path(cloud), period_name(period)
    session = db_session()
    number = _delivery_number(delivery_id)
    row = session.get(WebhookDelivery, number) if number is not None else None
    if row is None or (row.cloud, row.period) != (cloud, period):
        raise ApiError(404, "not_found",
                       f"period {period} of {cloud} has no delivery {delivery_id!r}")
    session.rollback()  # its snapshot ends: the update below decides
    if not delivery.redeliver(app_sessionmaker(), row.id, utcnow()):
        raise ApiError(409, "conflict",
                       f"delivery {row.id} is being posted now; ask again once the "
                       "attempt is recorded")
    return _one(session, row.id)


def _delivery_number(text: str) -> int | None:
    """The delivery id ``text`` names, or None: ASCII digits within the BIGINT column
    (SQLite cannot bind more)."""
    if not ascii_digits(text):
        return None
    number = int(text)
    return number if number <= BIGINT_MAX else None


def _one(session: Any, delivery_id: int) -> Response:
    row = session.get(WebhookDelivery, delivery_id, populate_existing=True)
    attempts = list(session.execute(
        sa.select(WebhookAttempt).where(WebhookAttempt.delivery_id == delivery_id)
        .order_by(WebhookAttempt.number)).scalars())
    return Response(json.dumps(_delivery(row, attempts), separators=(",", ":")),
                    mimetype="application/json")


@bp.get("/v1/periods/<cloud>/<period>/export")
@require_role("read")
def export(cloud: str, period: str) -> Response:
    """Every closed statement of a closed period, JSON or CSV, streamed."""
    cloud, period = cloud_path(cloud), period_name(period)
    params.only(request.args, frozenset({"format"}))
    fmt = request.args.get("format", "json")
    if fmt not in FORMATS:
        raise ApiError(400, "bad_request", f"format must be json or csv, not {fmt!r}")
    session = db_session()
    closed = session.get(BillingPeriod, (cloud, period))
    if closed is None:
        require_known(cloud)
        raise ApiError(409, "period_open",
                       f"period {period} of {cloud} is not closed: only a closed period's "
                       "statements are exported (POST /v1/periods/{cloud}/{period}/close)")
    pieces = handoff.export_json(session, closed) if fmt == "json" else _export_csv(
        session, closed)
    return Response(stream_with_context(_closing(session, pieces)),
                    mimetype="application/json" if fmt == "json" else "text/csv")


def _closing(session: Any, pieces: Iterator[str]) -> Iterator[str]:
    """``pieces``, then the session closed.  The request's teardown closed it once the
    view returned, before the first piece was sent; streaming the rest opened a new
    transaction on it, whose connection nothing else would give back to the pool."""
    try:
        yield from pieces
    finally:
        session.close()


def _rows(writer: Any, rows: list[dict[str, Any]]) -> None:
    """Cells as a statement's CSV writes them: numbers as Tally wrote them, text that
    would start like a formula after an apostrophe."""
    for row in rows:
        writer.writerow([neutralised(cell(row.get(field)), field in NUMERIC_FIELDS)
                         for field in CSV_FIELDS])


def _export_csv(session: Any, closed: BillingPeriod) -> Iterator[str]:
    """One row per line (``record`` ``line``), per tier line (``tier``: the columns it
    shares with a line), per adjustment (``adjustment``) and
    per statement (``statement``, after its lines: the totals), each with the
    statement's number, project and currency."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_FIELDS)
    for number, text in handoff.statements(session, closed):
        document = json.loads(text)
        which = {"number": number, "project_id": document["project_id"],
                 "currency": document["currency"]}
        rows = [{**which, "record": "line", **line} for line in document["lines"]]
        rows.extend({**which, **tier_row(tier, value=False)}
                    for tier in document.get("tiers", []))
        rows.extend({**which, "record": "adjustment", **item}
                    for item in document["adjustments"])
        rows.append({**which, "record": "statement",
                     **{name: document[name] for name in _TOTALS}})
        _rows(writer, rows)
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    yield out.getvalue()
