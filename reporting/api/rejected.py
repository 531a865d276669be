"""The dead letter over HTTP: list refused items, replay them after a schema fix."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from flask import Blueprint, current_app, jsonify, request

from mapping.event import MAX_BATCH, TimestampError, format_timestamp, parse_timestamp
from reporting import dead_letter
from reporting.api.auth import require_role
from reporting.api.clouds import known_clouds
from reporting.api.errors import ApiError
from reporting.api.events import future_clock
from reporting.api.jsonbody import batch_of, json_object
from reporting.db.base import BIGINT_MAX, BIGINT_MIN
from reporting.db.models import RejectedEvent
from reporting.db.session import app_sessionmaker, db_session
from reporting.pagination import decode_marker, encode_marker, list_body, parse_limit

bp = Blueprint("rejected", __name__)

_LIST_TAG = "rejected-events"
_FILTERS = {"cloud", "since", "reason", "replayed", "limit", "marker"}
# A page of the dead letter holds rows up to this many bytes of items (and at least
# one row, however large): 1000 rows of 9 MiB must not become one 9 GiB response.
MAX_PAGE_BYTES = 4 * 1024 * 1024


def _bad(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def render(row: RejectedEvent) -> dict[str, Any]:
    return {
        "id": row.id,
        "received_at": format_timestamp(row.received_at),
        "cloud": row.cloud,
        "event_id": row.event_id,
        "reason": row.reason,
        "raw": dead_letter.original(row),
        "replayed_at": format_timestamp(row.replayed_at) if row.replayed_at else None,
    }


@bp.get("/v1/rejected-events")
@require_role("read")
def list_rejected() -> Any:
    """Rows in the order they were refused; filters: cloud, since, reason (prefix), replayed."""
    args = request.args
    unknown = sorted(set(args) - _FILTERS)
    if unknown:
        raise _bad(f"unknown query parameter(s): {', '.join(unknown)}")
    if any("\x00" in value for value in args.values()):
        raise _bad("a query parameter holds NUL")
    limit = parse_limit(args)
    query = sa.select(RejectedEvent).order_by(RejectedEvent.id).limit(limit + 1)
    if "cloud" in args:
        query = query.where(RejectedEvent.cloud == args["cloud"])
    if "since" in args:
        try:
            since = parse_timestamp(args["since"]).replace(tzinfo=None)
        except TimestampError as exc:
            raise _bad(f"since: {exc}") from None
        query = query.where(RejectedEvent.received_at >= since)
    if "reason" in args:
        query = query.where(RejectedEvent.reason.startswith(args["reason"], autoescape=True))
    if "replayed" in args:
        flag = args["replayed"].lower()
        if flag not in ("true", "false"):
            raise _bad("replayed must be true or false")
        column = RejectedEvent.replayed_at
        query = query.where(column.is_not(None) if flag == "true" else column.is_(None))
    if "marker" in args:
        (after,) = decode_marker(_LIST_TAG, ("int",), args["marker"])
        if not isinstance(after, int) or not BIGINT_MIN - 1 <= after <= BIGINT_MAX:
            raise _bad("marker is not valid for this list")
        query = query.where(RejectedEvent.id > after)
    kept, more = _sized_page(query, limit)
    marker = encode_marker(_LIST_TAG, (kept[-1].id,)) if more else None
    return jsonify(list_body([render(row) for row in kept], marker))


def _sized_page(query: sa.Select[Any], limit: int) -> tuple[list[RejectedEvent], bool]:
    """The page's rows and whether more follow: at most ``limit`` rows and, past the
    first, no more than MAX_PAGE_BYTES of items.  The sizes are read first, so rows
    that do not fit are never loaded."""
    size = sa.func.coalesce(sa.func.length(RejectedEvent.raw_json),
                            sa.func.length(sa.cast(RejectedEvent.raw, sa.Text)), 0)
    sized = db_session().execute(query.with_only_columns(RejectedEvent.id, size)).all()
    taken, total = 0, 0
    for _, nbytes in sized[:limit]:
        if taken and total + int(nbytes) > MAX_PAGE_BYTES:
            break
        total += int(nbytes)
        taken += 1
    ids = [row_id for row_id, _ in sized[:taken]]
    rows = list(db_session().execute(
        sa.select(RejectedEvent).where(RejectedEvent.id.in_(ids)).order_by(RejectedEvent.id)
    ).scalars()) if ids else []
    return rows, len(sized) > taken


def _ids(body: dict[str, Any]) -> list[int]:
    ids = batch_of(body, "ids", limit=MAX_BATCH, what=" of rejected-event ids")
    if not all(isinstance(i, int) and not isinstance(i, bool) and BIGINT_MIN <= i <= BIGINT_MAX
               for i in ids):
        raise _bad(f"every id must be an integer between {BIGINT_MIN} and {BIGINT_MAX}")
    return list(dict.fromkeys(ids))  # a repeated id is replayed once


@bp.post("/v1/rejected-events/replay")
@require_role("admin")
def replay() -> Any:
    """Re-validate the named rows under the current schemas and ingest those that pass
    (the rules are ``dead_letter.replay``'s)."""
    outcomes = dead_letter.replay(
        app_sessionmaker(), _ids(json_object()),
        require_size_schema=current_app.config["TALLY_REQUIRE_SIZE_SCHEMA"],
        known_clouds=known_clouds(), future=future_clock())
    results: list[dict[str, Any]] = []
    for outcome in outcomes:
        entry: dict[str, Any] = {"id": outcome.row_id, "status": outcome.status}
        if outcome.status != "not_found":
            entry["event_id"] = outcome.event_id
        if outcome.reason is not None:
            entry["reason"] = outcome.reason
        results.append(entry)
    counts = {status: sum(1 for o in outcomes if o.status == status)
              for status in dead_letter.REPLAY_STATUSES}
    return jsonify({"results": results, **counts})
