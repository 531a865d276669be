"""Neutron (network v2.0): versions and ``floatingips``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, request

from simcloud import model
from simcloud.api import common
from simcloud.api.timeparse import parse_iso8601
from simcloud.model import Resource
from simcloud.payloads import floating_ip_view

bp = Blueprint("neutron", __name__, url_prefix="/networking")
UNSIMULATED = frozenset({"sort_key", "sort_dir", "status", "floating_ip_address", "port_id",
                         "router_id", "floating_network_id", "fixed_ip_address", "tags",
                         "description", "revision_number", "fields"})


def _bad(message: str, code: int = 400, kind: str = "HTTPBadRequest") -> Response:
    return common.json_response({"NeutronError": {"type": kind, "message": message,
                                                  "detail": ""}}, code)


def _is_version_document() -> bool:
    return request.path.rstrip("/") in ("/networking", "/networking/v2.0")


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    return common.guard("network", public=_is_version_document)


@bp.get("/")
def versions() -> Response:
    base = common.base_url()
    return common.json_response({"versions": [
        {"id": "v2.0", "status": "CURRENT",
         "links": [{"rel": "self", "href": f"{base}/networking/v2.0/"}]}]})


@bp.get("/v2.0")
def version() -> Response:
    base = common.base_url()
    return common.json_response({"resources": [
        {"name": "floatingip", "collection": "floatingips",
         "links": [{"rel": "self", "href": f"{base}/networking/v2.0/floatingips"}]}]})


@bp.get("/v2.0/floatingips")
def floatingips() -> Response:
    tok = common.token()
    args = request.args
    for name in args:
        if name in UNSIMULATED:
            return _bad(f"simcloud does not simulate the floatingips parameter {name!r}")
    if common.bool_param(args.get("page_reverse", "false")):
        return _bad("simcloud does not simulate page_reverse=True")
    changed_since = None
    if "changed_since" in args:
        # neutron's timestamp extension: updated_at >= the instant given
        changed_since = parse_iso8601(args["changed_since"])
        if changed_since is None:
            return _bad("The input changed_since must be in the following format: "
                        "YYYY-MM-DDTHH:MM:SSZ", 400, "InvalidInput")
    scope = tok.project_id if not tok.is_admin else (
        args.get("project_id") or args.get("tenant_id"))
    limit = common.int_param("limit", args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    # neutron's get_limit_and_marker: pagination_max_limit (none by default) caps the
    # limit asked for, and pages a request that asked for none.
    max_limit = common.world().config.page_cap("network", None)
    if max_limit is not None:
        limit = min(max_limit, limit or max_limit) or max_limit
    w = common.world()
    now = w.now

    def visible(res: Resource) -> bool:
        if changed_since is not None and res.updated_at(now) < changed_since:
            return False
        return res.exists_at(now) and (scope is None or res.phase_at(now).project == scope)

    # Without a limit neutron answers everything, with no links.
    page = w.indexes[model.FLOATING_IP].page(visible, args.get("marker"),
                                             limit if limit else len(w.resources) + 1)
    if page is None:
        return _bad(f"Marker {args.get('marker')} could not be found.", 404, "MarkerNotFound")
    items, _ = page
    common.page_latency("network", len(items))
    body: dict[str, Any] = {"floatingips": [floating_ip_view(r, r.phase_at(now), now)
                                            for r in items]}
    if limit:
        # neutron's get_pagination_links: next on a page as long as the limit (a full
        # last page too: the page after it is empty), previous on every forward page.
        links = []
        base = f"{common.base_url()}{request.path}"
        params = {k: v for k, v in args.items() if k not in ("marker", "page_reverse")}
        if len(items) >= limit:
            links.append({"rel": "next", "href": f"{base}?{urlencode(dict(params, marker=items[-1].id))}"})
        previous = dict(params, page_reverse="True")
        if items:
            previous["marker"] = items[0].id
        links.append({"rel": "previous", "href": f"{base}?{urlencode(previous)}"})
        body["floatingips_links"] = links
    return common.json_response(body)
