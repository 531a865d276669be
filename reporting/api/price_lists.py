"""``PUT|GET /v1/price-lists/{cloud}``: add a price list version (admin), list them (read).

The list named ``default`` prices every cloud without a list of its own.  Rules in
``reporting.billing.versions``; the document in ``reporting.billing.pricelist``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from reporting import pagination
from reporting.api.auth import require_role
from reporting.api.billing_common import caller_name, cloud_hidden, cloud_path, for_the_caller
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.api.project_scope import require_project_read
from reporting.billing import locks, versions
from reporting.billing.pricelist import DEFAULT_LIST, PriceListError
from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.session import db_session
from reporting.queries import params
from reporting.unique_keys import DuplicateKeyError, loads_json

bp = Blueprint("price_lists", __name__)


@bp.put("/v1/price-lists/<cloud>")
@require_role("admin")
def put_price_list(cloud: str) -> Any:
    name = cloud_path(cloud)
    raw = request.get_data()  # kept: json_object reads it too
    document = json_object()
    try:  # the body is valid JSON: only a member written twice can fail here
        loads_json(raw.decode("utf-8"))
    except DuplicateKeyError as exc:
        raise ApiError(400, "invalid_price_list",
                       f"the price list names a member twice: {exc}") from None
    session = db_session()
    with session.begin():
        seam = writes.of(session)
        seam.begin_write(session)
        seam.xact_lock(session, locks.PRICES_KEY)
        try:
            row = versions.add(session, name, document, caller_name(), utcnow())
        except PriceListError as exc:
            raise ApiError(400, "invalid_price_list", str(exc)) from None
        except versions.VersionConflict as exc:
            raise ApiError(409, "conflict", str(exc)) from None
    return jsonify(versions.render(row)), 201


@bp.get("/v1/price-lists/<cloud>")
@require_project_read  # cloud-wide facts: a project reader may read them too
def get_price_list(cloud: str) -> Any:
    """A project reader sees ``default`` and the lists of clouds its project has
    history in (another cloud's is answered as an unknown one's: no versions), and
    not who added a version."""
    name = cloud_path(cloud)
    params.only(request.args, frozenset({"limit", "marker"}))
    limit = pagination.parse_limit(request.args)
    session = db_session()
    hidden = name != DEFAULT_LIST and cloud_hidden(session, name)
    rows = [] if hidden else versions.rows(session, name)
    if "marker" in request.args:
        (after,) = pagination.decode_marker("price-lists", ["int"], request.args["marker"])
        assert isinstance(after, int)
        rows = [row for row in rows if row.number > after]
    kept, marker = pagination.page(rows, limit, "price-lists", lambda r: (r.number,))
    return pagination.list_body([for_the_caller(versions.render(r)) for r in kept], marker,
                                name=name)
