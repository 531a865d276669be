"""The hand-off on close: what the invoicing system is told and what it imports.

A close writes one webhook delivery (``period.closed``) in its own transaction when
``[handoff] webhook_url`` is set (``outbox``): an outbox row, so a close that commits
always has its notice and a close rolled back has none.  The delivery worker
(``reporting.billing.delivery``) posts it, signed.  The notice names every closed
statement of the period with its number and totals; the statements themselves are
imported from the export (``export_json``, and the API's CSV of ``statements``), built
from the frozen rows (``reporting.billing.frozen``), so its bytes never change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from urllib.parse import quote

import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy.orm import Session

from mapping.event import format_timestamp
from reporting.billing import frozen, money
from reporting.db.billing_models import BillingPeriod, ClosedStatement
from reporting.db.handoff_models import WebhookDelivery

EVENT_CLOSED = "period.closed"
# Where the app keeps the close's ``Notice`` (absent: no webhook configured).
NOTICE_KEY = "tally.handoff.notice"

handoff_opts: list[cfg.Opt] = [
    cfg.URIOpt(
        "webhook_url", schemes=["http", "https"],
        help="Where a close's notice is posted (period.closed, JSON, signed). Unset: a "
        "close writes no delivery and nothing is posted.",
    ),
    cfg.StrOpt(
        "webhook_secret", secret=True,
        help="The HMAC-SHA256 key of X-Tally-Signature (sha256=<hex of the body's "
        "HMAC>). Required when webhook_url is set.",
    ),
    cfg.FloatOpt("webhook_timeout_s", default=10.0, min=0.1,
                 help="Seconds to connect, and to wait for each part of the answer, of "
                 "one POST."),
    cfg.FloatOpt("retry_base_s", default=30.0, min=0.1,
                 help="Seconds before the second attempt of a delivery; each later "
                 "attempt waits twice as long as the one before, up to retry_max_s."),
    cfg.FloatOpt("retry_max_s", default=3600.0, min=0.0,
                 help="The longest wait between two attempts of a delivery."),
    cfg.IntOpt("max_attempts", default=12, min=1,
               help="Attempts of a delivery before it is marked failed (GET "
               "/v1/periods/{cloud}/{period}/deliveries lists it with every attempt)."),
    cfg.BoolOpt("deliver", default=True,
                help="Whether this service's processes run the delivery worker. Several "
                "may (each delivery is posted by one at a time); false leaves the "
                "deliveries to other reporting instances sharing the database."),
    cfg.FloatOpt("poll_interval_s", default=5.0, min=0.1,
                 help="Seconds between two looks of the delivery worker for deliveries "
                 "due."),
]

Notice = Callable[[Session, BillingPeriod], None]


def _statement_rows(session: Session, cloud: str, period: str) -> Iterator[ClosedStatement]:
    query = (sa.select(ClosedStatement)
             .where(ClosedStatement.cloud == cloud, ClosedStatement.period == period)
             .order_by(ClosedStatement.number, ClosedStatement.project_id)
             .execution_options(yield_per=100))
    yield from session.execute(query).scalars()


def notice_body(session: Session, closed: BillingPeriod) -> str:
    """The ``period.closed`` notice of a closed period: the period, who closed it, and
    per closed statement its number, project, currency and totals (the lines are in
    the export it links)."""
    places = closed.minor_units
    model = ClosedStatement
    # The totals only: a close must not read its frozen lines back into Python.
    rows = session.execute(
        sa.select(model.number, model.project_id, model.subtotal, model.adjustments_total,
                  model.total, model.unrated_lines)
        .where(model.cloud == closed.cloud, model.period == closed.period)
        .order_by(model.number, model.project_id))
    items = [{
        "number": row.number, "project_id": row.project_id, "currency": closed.currency,
        "subtotal": money.money(row.subtotal, places),
        "adjustments_total": money.money(row.adjustments_total, places),
        "total": money.money(row.total, places), "unrated_lines": row.unrated_lines,
    } for row in rows]
    return json.dumps({
        "event": EVENT_CLOSED, "cloud": closed.cloud, "period": closed.period,
        "closed_at": format_timestamp(closed.closed_at), "closed_by": closed.closed_by,
        "cutoff_seq": closed.cutoff_seq, "currency": closed.currency,
        "statements": items,
        "export": {"json": export_path(closed.cloud, closed.period, "json"),
                   "csv": export_path(closed.cloud, closed.period, "csv")},
    }, separators=(",", ":"), ensure_ascii=False)


def export_path(cloud: str, period: str, fmt: str) -> str:
    return f"/v1/periods/{quote(cloud, safe='')}/{period}/export?format={fmt}"


def outbox(conf: cfg.ConfigOpts) -> Notice | None:
    """What a close writes in its transaction: one delivery when a webhook URL is
    configured, nothing (None) otherwise."""
    if not conf.handoff.webhook_url:
        return None

    def write(session: Session, closed: BillingPeriod) -> None:
        session.add(WebhookDelivery(
            cloud=closed.cloud, period=closed.period, event=EVENT_CLOSED,
            body=notice_body(session, closed), created_at=closed.closed_at,
            status="pending", attempts=0, retry_from=0, next_attempt_at=closed.closed_at))
        session.flush()

    return write


def export_json(session: Session, closed: BillingPeriod) -> Iterator[str]:
    """The export of a closed period as JSON text, in pieces: the period, then every
    closed statement in number order, each ``{"number": n, "statement": <its exact
    text>}`` (the text ``GET /v1/statements`` answers for it)."""
    head = json.dumps({
        "cloud": closed.cloud, "period": closed.period,
        "closed_at": format_timestamp(closed.closed_at), "closed_by": closed.closed_by,
        "cutoff_seq": closed.cutoff_seq, "currency": closed.currency,
    }, separators=(",", ":"), ensure_ascii=False)
    yield head[:-1] + ',"statements":['
    for index, (number, text) in enumerate(statements(session, closed)):
        yield ("," if index else "") + f'{{"number":{json.dumps(number)},"statement":{text}}}'
    yield "]}"


def statements(session: Session, closed: BillingPeriod) -> Iterator[tuple[int | None, str]]:
    """(number, exact text) of every closed statement of the period, in number order."""
    known = frozen.kinds(session, closed.cloud, closed.period)
    for row in _statement_rows(session, closed.cloud, closed.period):
        yield row.number, frozen.text(session, row, closed.minor_units, known)
