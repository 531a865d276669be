"""``GET /v1/usage``: resource-seconds over a period (docs/reporting-queries.md), role
``read`` (every project) or ``project_reader`` (the intervals its project owned).

Parameters: ``from`` and ``to`` (required, RFC 3339, ``from < to``), ``cloud``,
``project_id``, ``group_by`` (``resource`` default, ``project``, ``resource_type``),
``limit``/``marker`` (groups per page).  Semantics in ``reporting.queries.usage``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from mapping.event import format_timestamp
from reporting import pagination
from reporting.api.project_scope import requested_project, require_project_read, visible_projects
from reporting.api.read_limits import expensive_read
from reporting.clock import utcnow
from reporting.db.session import db_session
from reporting.queries import params, usage_store
from reporting.queries import usage as queries

bp = Blueprint("usage", __name__)

_PARAMS = frozenset({"from", "to", "cloud", "project_id", "group_by", "limit", "marker"})


@bp.get("/v1/usage")
@require_project_read
@expensive_read
def get_usage() -> dict[str, Any]:
    args = request.args
    params.only(args, _PARAMS)
    limit = pagination.parse_limit(args)
    start = params.required_instant(args, "from")
    end = params.required_instant(args, "to")
    if not start < end:
        raise pagination.bad_request("from must be before to")
    group_by = params.choice(args, "group_by", queries.GROUP_BY, "resource")
    filters = queries.UsageFilter(
        cloud=params.text(args, "cloud"),
        project_id=requested_project(params.text(args, "project_id")),
        projects=visible_projects(),
    )
    columns = queries.group_columns(group_by)
    tag = "usage-" + group_by
    marker = args.get("marker")
    shape: list[pagination.KeyPart] = ["str" for _ in columns]
    after: Any = (
        pagination.decode_marker(tag, shape, marker)
        if marker is not None
        else None
    )
    # Nothing is counted for time that has not happened: the period ends at now at
    # the latest (an open interval counts up to now, not up to a future ``to``).
    until = min(end, utcnow())
    groups, counts, more = (
        usage_store.usage_page(db_session(), filters, group_by, start, until, after, limit)
        if start < until
        else ([], {}, False)
    )
    next_marker = pagination.encode_marker(tag, groups[-1].key) if more else None
    return pagination.list_body(
        [group.as_dict(columns, counts[group.key]) for group in groups],
        next_marker,
        **{"from": format_timestamp(start), "to": format_timestamp(end), "group_by": group_by},
    )
