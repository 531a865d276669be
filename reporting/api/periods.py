"""``POST /v1/periods/{cloud}/{YYYY-MM}/close`` (admin) and ``GET /v1/periods/{cloud}``
(read): close a period, list a cloud's periods.  Semantics in
``reporting.billing.closing`` and ``docs/statements.md``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, current_app, jsonify, request

from mapping.event import format_timestamp
from reporting import pagination
from reporting.api.auth import require_role
from reporting.api.billing_common import (
    caller_name,
    cloud_hidden,
    cloud_path,
    for_the_caller,
    period_name,
)
from reporting.api.clouds import known_clouds
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.api.project_scope import require_project_read
from reporting.billing import closing, handoff, observed, periods, statements, versions
from reporting.billing.pricelist import DEFAULT_LIST
from reporting.clock import utcnow
from reporting.db.billing_models import BillingPeriod
from reporting.db.models import CurrentResource
from reporting.db.session import app_sessionmaker, db_session
from reporting.queries import params

bp = Blueprint("periods", __name__)
_TAG = "periods"


def render(cloud: str, period: str, row: BillingPeriod | None, now: dt.datetime
           ) -> dict[str, Any]:
    _start, end = periods.parse(period)

    def instant(value: dt.datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)

    return {
        "cloud": cloud,
        "period": period,
        "status": "closed" if row is not None else "open",
        "ended": end <= now,
        "closed_at": instant(row.closed_at) if row else None,
        "closed_by": row.closed_by if row else None,
        "cutoff_seq": row.cutoff_seq if row else None,
        "cutoff_received_at": instant(row.cutoff_received_at) if row else None,
        # what closed_by accepted explicitly (null: nothing needed accepting)
        "accepted_unrated_lines": row.accepted_unrated_lines if row else None,
        "accepted_partial_history_from":
            instant(row.accepted_partial_history_from) if row else None,
    }


def require_known(cloud: str) -> None:
    """404 unless Tally knows ``cloud``: the clouds file names it (when the API has one),
    else it has history or a price list of its own.  A close of a misspelt cloud would
    store a closed period that bills nothing and forbids new ``default`` versions
    before its end for every cloud (and a credit booked on one would bill nobody)."""
    named = known_clouds()
    if named is not None:
        if cloud not in named:
            raise ApiError(404, "unknown_cloud",
                           f"the clouds file names no cloud {cloud!r}; add it (and restart "
                           "the API) to close its periods")
        return
    with app_sessionmaker()() as session:  # ended before the close opens its own
        in_history = session.execute(
            sa.select(CurrentResource.cloud).where(CurrentResource.cloud == cloud).limit(1)
        ).first() is not None
        own_list = cloud != DEFAULT_LIST and bool(versions.rows(session, cloud))
    if in_history or own_list:
        return
    raise ApiError(404, "unknown_cloud",
                   f"Tally knows no cloud {cloud!r}: it has no history and no price list "
                   "of its own (GET /v1/clouds lists the clouds in the history)")


_ACCEPTS = ("accept_unrated_lines", "accept_partial_history")


def _acceptance() -> closing.Acceptance:
    """The optional body ``{"accept_unrated_lines": true, "accept_partial_history": true}``
    (no body: nothing accepted)."""
    if not request.get_data():
        return closing.Acceptance()
    body = json_object()
    unknown = sorted(set(body) - set(_ACCEPTS))
    if unknown:
        raise ApiError(400, "invalid_request",
                       f"unknown member(s) {', '.join(unknown)}; a close accepts "
                       f"{' and '.join(_ACCEPTS)}")
    for name, value in body.items():
        if not isinstance(value, bool):
            raise ApiError(400, "invalid_request", f"{name} must be true or false")
    return closing.Acceptance(unrated_lines=body.get("accept_unrated_lines", False),
                              partial_history=body.get("accept_partial_history", False))


@bp.post("/v1/periods/<cloud>/<period>/close")
@require_role("admin")
def close_period(cloud: str, period: str) -> Any:
    cloud = cloud_path(cloud)
    period = period_name(period)
    accept = _acceptance()
    require_known(cloud)
    now = utcnow()
    try:
        # With a webhook configured, the close writes its notice in its transaction.
        result = closing.close(app_sessionmaker(), cloud, period, caller_name(), now, accept,
                               current_app.extensions.get(handoff.NOTICE_KEY))
    except closing.PeriodNotEnded as exc:
        raise ApiError(409, "period_not_ended", str(exc)) from None
    except closing.BeforeHistory as exc:
        raise ApiError(409, "before_history", str(exc)) from None
    except closing.CloseRefused as exc:
        raise ApiError(409, exc.code, str(exc)) from None
    return jsonify(render(cloud, period, result.period, now))


@bp.get("/v1/periods/<cloud>")
@require_project_read  # cloud-wide facts: a project reader may read them too
def list_periods(cloud: str) -> Any:
    """Every month from the one the cloud's history begins in (its first observation,
    ``reporting.billing.observed``; or its first closed period) to the current one,
    newest first.  A project reader gets the periods of the clouds its project
    has history in (another cloud is answered as an unknown one: no periods), without
    who closed them."""
    cloud = cloud_path(cloud)
    params.only(request.args, frozenset({"limit", "marker"}))
    limit = pagination.parse_limit(request.args)
    session = db_session()
    now = utcnow()
    if cloud_hidden(session, cloud):
        closed, first = {}, None
    else:
        closed = statements.closed_periods(session, cloud)
        # From the month the history begins in: earlier months are not billable (a
        # first sync dates creates back to the platform's creation instants).
        observation = observed.first_observation(session, cloud)
        first = observation[0] if observation is not None else None
    names = set(closed)
    current = periods.containing(now)
    if first is not None and first <= now:
        name = periods.containing(first)
        while name <= current:
            names.add(name)
            name = periods.following(name)
    ordered = sorted(names, reverse=True)
    if "marker" in request.args:
        (before,) = pagination.decode_marker(_TAG, ["str"], request.args["marker"])
        ordered = [name for name in ordered if name < str(before)]
    window = ordered[:limit + 1]
    kept, marker = pagination.page(window, limit, _TAG, lambda name: (name,))
    return pagination.list_body(
        [for_the_caller(render(cloud, n, closed.get(n), now)) for n in kept], marker)
