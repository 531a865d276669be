"""Octavia (load-balancer v2): versions and ``lbaas/loadbalancers``."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, request

from simcloud import model
from simcloud.api import common
from simcloud.model import Resource, to_datetime

bp = Blueprint("octavia", __name__, url_prefix="/load-balancer")
UNSIMULATED = frozenset({"sort", "sort_key", "sort_dir", "name", "provisioning_status",
                         "operating_status", "vip_address", "fields", "tags"})


def _bad(message: str, code: int = 400) -> Response:
    return common.json_response({"faultcode": "Client", "faultstring": message,
                                 "debuginfo": None}, code)


def _is_version_document() -> bool:
    return request.path.rstrip("/") == "/load-balancer"


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    return common.guard("load-balancer", public=_is_version_document)


@bp.get("/")
def versions() -> Response:
    base = common.base_url()
    return common.json_response({"versions": [
        {"id": "v2.0", "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z",
         "links": [{"rel": "self", "href": f"{base}/load-balancer/v2"}]},
        {"id": "v2.27", "status": "CURRENT", "updated": "2023-05-05T00:00:00Z",
         "links": [{"rel": "self", "href": f"{base}/load-balancer/v2"}]}]})


@bp.get("/v2/lbaas/loadbalancers")
@bp.get("/v2.0/lbaas/loadbalancers")
def loadbalancers() -> Response:
    tok = common.token()
    args = request.args
    for name in args:
        if name in UNSIMULATED:
            return _bad(f"simcloud does not simulate the loadbalancers parameter {name!r}")
    if common.bool_param(args.get("page_reverse", "false")):
        return _bad("simcloud does not simulate page_reverse=True")
    scope = args.get("project_id") if tok.is_admin else tok.project_id
    limit = common.int_param("limit", args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    max_limit = common.world().config.page_cap("load-balancer")  # pagination_max_limit
    assert max_limit is not None
    page_size = min(limit if limit else max_limit, max_limit)
    w = common.world()
    now = w.now

    def visible(res: Resource) -> bool:  # PENDING_DELETE is listed, DELETED is not
        return res.exists_at(now) and (scope is None or res.phase_at(now).project == scope)

    marker = args.get("marker")
    page = w.indexes[model.LOADBALANCER].page(visible, marker, page_size)
    if page is None:
        return _bad(f"Invalid marker {marker}", 400)
    items, _ = page
    common.page_latency("load-balancer", len(items))
    body: dict[str, Any] = {"loadbalancers": [_lb_view(r, now) for r in items]}
    links = []
    # octavia's links keep only limit (and the sort) and drop every filter.
    base = f"{common.base_url()}{request.path}"
    if items and len(items) == page_size:
        links.append({"rel": "next",
                      "href": f"{base}?{urlencode({'limit': page_size, 'marker': items[-1].id})}"})
    if marker is not None and items:
        links.append({"rel": "previous", "href": f"{base}?" + urlencode(
            {"limit": page_size, "marker": items[0].id, "page_reverse": "True"})})
    body["loadbalancers_links"] = links
    return common.json_response(body)


def _plain(t: float | None) -> str | None:
    return None if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S")


def _lb_view(res: Resource, now: float) -> dict[str, Any]:
    phase = res.phase_at(now)
    listeners, pools = phase.size
    status = phase.status
    updated = res.updated_at(now)
    return {
        "id": res.id,
        "name": res.name,
        "description": "",
        "project_id": phase.project,
        "provisioning_status": status,
        "operating_status": "OFFLINE" if status in ("PENDING_CREATE", "PENDING_DELETE")
        else "ONLINE",
        "admin_state_up": True,
        "listeners": [{"id": f"{res.id[:30]}{i:06d}"} for i in range(listeners)],
        "pools": [{"id": f"{res.id[:30]}{i + 100:06d}"} for i in range(pools)],
        "vip_address": res.address,
        "vip_network_id": "849b08a9-4397-4d6e-929d-90efc055ab8e",
        "vip_port_id": res.id[:24] + "000000000000",
        "vip_subnet_id": "d59311ee-ed3a-42c0-ac97-cebf7945facc",
        "vip_qos_policy_id": None,
        "vip_vnic_type": "normal",
        "additional_vips": [],
        "provider": "amphora",
        "flavor_id": None,
        "availability_zone": None,
        "tags": [],
        "created_at": _plain(res.created_at),
        "updated_at": None if updated == res.created_at else _plain(updated),
    }
