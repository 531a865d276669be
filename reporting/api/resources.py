"""Inventory and per-resource queries (docs/reporting-queries.md), role ``read`` (every
project) or ``project_reader`` (its project only: ``reporting.api.project_scope``).

- ``GET /v1/resources``: the inventory, current or ``as_of`` an instant;
- ``GET /v1/resources/{platform}/{cloud}/{resource_type}/{resource_id}``: one row;
- ``.../events``: its history in fold order, each event with ``received_at``;
- ``.../lifecycle``: its intervals ``[start, end)``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, request

from mapping.event import MAX_ID_LEN, ResourceKey, format_timestamp
from reporting import pagination
from reporting.api.errors import ApiError
from reporting.api.project_scope import requested_project, require_project_read, visible_projects
from reporting.api.read_limits import expensive_read
from reporting.db.models import Event, ResourceInterval
from reporting.db.session import db_session
from reporting.queries import params
from reporting.queries import resources as queries

bp = Blueprint("resources", __name__)

RESOURCE_PATH = "/v1/resources/<platform>/<cloud>/<resource_type>/<resource_id>"
_RESOURCE_KEY_SHAPE: tuple[pagination.KeyPart, ...] = ("str", "str", "str", "str")
_EVENT_KEY_SHAPE: tuple[pagination.KeyPart, ...] = ("datetime", "int")
_LIST_PARAMS = frozenset(
    {"cloud", "resource_type", "project_id", "live", "as_of", "limit", "marker"}
)
_PAGE_PARAMS = frozenset({"limit", "marker"})


def _instant(moment: dt.datetime | None) -> str | None:
    return format_timestamp(moment) if moment is not None else None


def render_resource(row: queries.ResourceRow) -> dict[str, Any]:
    return {
        "platform": row.platform,
        "cloud": row.cloud,
        "resource_type": row.resource_type,
        "resource_id": row.resource_id,
        "project_id": row.project_id,
        "state": row.state,
        "size": row.size,
        "live": row.live,
        "created_at": _instant(row.created_at),
        "deleted_at": _instant(row.deleted_at),
        "last_event_at": _instant(row.last_event_at),
        "last_event_id": row.last_event_id,
    }


def render_event(event: Event) -> dict[str, Any]:
    """The canonical event as it was stored, plus when Tally received it."""
    return {
        "event_id": event.event_id,
        "event_type": event.event_type,
        "platform": event.platform,
        "cloud": event.cloud,
        "resource_type": event.resource_type,
        "resource_id": event.resource_id,
        "project_id": event.project_id,
        "timestamp": format_timestamp(event.timestamp),
        "source": event.source,
        "payload": event.payload,
        "received_at": format_timestamp(event.received_at),
    }


def render_interval(interval: ResourceInterval) -> dict[str, Any]:
    return {
        "start": format_timestamp(interval.start),
        "end": _instant(interval.end),
        "project_id": interval.project_id,
        "state": interval.state,
        "size": interval.size,
        "event_id": interval.event_id,
    }


@bp.get("/v1/resources")
@require_project_read
@expensive_read
def list_resources() -> dict[str, Any]:
    args = request.args
    params.only(args, _LIST_PARAMS)
    limit = pagination.parse_limit(args)
    live = params.boolean(args, "live")
    as_of = params.instant(args, "as_of")
    filters = queries.InventoryFilter(
        cloud=params.text(args, "cloud"),
        resource_type=params.text(args, "resource_type"),
        project_id=requested_project(params.text(args, "project_id")),
        live=live,
        projects=visible_projects(),
    )
    tag = "resources" if as_of is None else "resources-as-of"
    marker = args.get("marker")
    after: Any = (
        pagination.decode_marker(tag, _RESOURCE_KEY_SHAPE, marker) if marker is not None else None
    )
    session = db_session()
    if as_of is None:
        rows = queries.current_inventory(session, filters, after, limit + 1)
    else:
        if live is False:
            raise pagination.bad_request(
                "as_of lists what was live at that instant; it cannot be combined with live=false"
            )
        rows = queries.inventory_as_of(session, filters, as_of, after, limit + 1)
    kept, next_marker = pagination.page(rows, limit, tag, lambda row: row.key)
    return pagination.list_body([render_resource(row) for row in kept], next_marker)


def _not_found() -> ApiError:
    return ApiError(404, "not_found", "no such resource")


def _key(platform: str, cloud: str, resource_type: str, resource_id: str) -> ResourceKey:
    key = (platform, cloud, resource_type, resource_id)
    if not all(params.storable(part) and len(part) <= MAX_ID_LEN for part in key):
        raise _not_found()  # no stored resource can have such an identity
    return key


@bp.get(RESOURCE_PATH)
@require_project_read
def get_resource(platform: str, cloud: str, resource_type: str, resource_id: str) -> Any:
    params.only(request.args, frozenset())
    key = _key(platform, cloud, resource_type, resource_id)
    row = queries.get_resource(db_session(), key, visible_projects())
    if row is None:
        raise _not_found()
    return render_resource(row)


@bp.get(RESOURCE_PATH + "/events")
@require_project_read
@expensive_read
def resource_events(platform: str, cloud: str, resource_type: str, resource_id: str) -> Any:
    key = _key(platform, cloud, resource_type, resource_id)
    params.only(request.args, _PAGE_PARAMS)
    limit = pagination.parse_limit(request.args)
    marker = request.args.get("marker")
    after: Any = (
        pagination.decode_marker("events", _EVENT_KEY_SHAPE, marker) if marker is not None else None
    )
    session = db_session()
    if not queries.resource_exists(session, key, visible_projects()):
        raise _not_found()
    events = queries.resource_events(session, key, after, limit + 1)
    kept, next_marker = pagination.page(
        events, limit, "events", lambda event: (event.timestamp, event.seq)
    )
    return pagination.list_body([render_event(event) for event in kept], next_marker)


@bp.get(RESOURCE_PATH + "/lifecycle")
@require_project_read
def resource_lifecycle(platform: str, cloud: str, resource_type: str, resource_id: str) -> Any:
    key = _key(platform, cloud, resource_type, resource_id)
    params.only(request.args, frozenset())
    session = db_session()
    if not queries.resource_exists(session, key, visible_projects()):
        raise _not_found()
    intervals = queries.resource_lifecycle(session, key)
    return {"intervals": [render_interval(interval) for interval in intervals]}
