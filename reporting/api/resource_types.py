"""Registered size schemas (docs/reporting-api.md): list, read, and register or replace one."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, jsonify, request

from mapping.event import format_timestamp
from reporting.api.auth import require_role
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.models import ResourceType
from reporting.db.session import app_sessionmaker, db_session
from reporting.pagination import decode_marker, list_body, page, parse_limit
from reporting.validation import check_size_schema, unstorable

bp = Blueprint("resource_types", __name__)

_LIST_TAG = "resource-types"
# The same shapes the event schema allows for these two fields.
_PLATFORM = re.compile(r"^[^/\x00]{1,64}$")
_RESOURCE_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def render(row: ResourceType) -> dict[str, Any]:
    return {
        "platform": row.platform,
        "resource_type": row.resource_type,
        "size_schema": row.size_schema,
        "updated_at": format_timestamp(row.updated_at),
    }


def _check_path(platform: str, resource_type: str) -> None:
    if not _PLATFORM.match(platform):
        raise ApiError(400, "bad_request", "platform must be 1 to 64 characters")
    if not _RESOURCE_TYPE.match(resource_type):
        raise ApiError(
            400, "bad_request", "resource_type must match ^[a-z][a-z0-9_]*$ (at most 64 characters)"
        )


@bp.get("/v1/resource-types")
@require_role("read")
def list_types() -> Any:
    unknown = sorted(set(request.args) - {"limit", "marker"})
    if unknown:
        raise ApiError(400, "bad_request", f"unknown query parameter(s): {', '.join(unknown)}")
    limit = parse_limit(request.args)
    query = (
        sa.select(ResourceType)
        .order_by(ResourceType.platform, ResourceType.resource_type)
        .limit(limit + 1)
    )
    if "marker" in request.args:
        platform, resource_type = decode_marker(_LIST_TAG, ("str", "str"), request.args["marker"])
        if unstorable([platform, resource_type]):
            raise ApiError(400, "bad_request", "marker is not valid for this list")
        query = query.where(
            sa.tuple_(ResourceType.platform, ResourceType.resource_type)
            > sa.tuple_(sa.literal(platform), sa.literal(resource_type))
        )
    rows = list(db_session().execute(query).scalars())
    kept, marker = page(rows, limit, _LIST_TAG, lambda r: (r.platform, r.resource_type))
    return jsonify(list_body([render(row) for row in kept], marker))


@bp.get("/v1/resource-types/<platform>/<resource_type>")
@require_role("read")
def get_type(platform: str, resource_type: str) -> Any:
    _check_path(platform, resource_type)
    row = db_session().get(ResourceType, (platform, resource_type))
    if row is None:
        raise ApiError(404, "not_found", f"no size schema is registered for {platform}/{resource_type}")
    return jsonify(render(row))


@bp.put("/v1/resource-types/<platform>/<resource_type>")
@require_role("admin")
def put_type(platform: str, resource_type: str) -> Any:
    """Register or replace the size schema; events ingested from now on are checked
    against it (stored events are not re-validated)."""
    _check_path(platform, resource_type)
    body = json_object()
    unknown = sorted(set(body) - {"size_schema"})
    if unknown:
        raise ApiError(400, "bad_request", f"unknown member(s) in the body: {', '.join(unknown)}")
    if "size_schema" not in body:
        raise ApiError(400, "bad_request", "the body must hold 'size_schema'")
    document = body["size_schema"]
    problem = check_size_schema(document)
    if problem is not None:
        raise ApiError(400, "invalid_schema", f"size_schema is not a valid JSON Schema: {problem}")
    if unstorable(document):
        raise ApiError(400, "invalid_schema", "size_schema holds NUL or an unpaired surrogate")
    with app_sessionmaker()() as reader:
        created = reader.get(ResourceType, (platform, resource_type)) is None
    session = db_session()
    # The write transaction starts with the write: SQLite cannot always upgrade a
    # reading transaction to a writing one while another worker writes.
    with session.begin():
        # An upsert, so two concurrent PUTs of a new type both succeed (the last wins).
        writes.of(session).upsert_resource_type(
            session, platform, resource_type, document, utcnow())
        row = session.get(ResourceType, (platform, resource_type), populate_existing=True)
    assert row is not None
    return jsonify(render(row)), 201 if created else 200
