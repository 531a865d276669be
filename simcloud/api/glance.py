"""Glance (image v2): versions and ``images`` with glance's relative next link."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, request

from simcloud import model
from simcloud.api import common
from simcloud.api.timeparse import compares, time_comparison
from simcloud.model import Resource, to_datetime

bp = Blueprint("glance", __name__, url_prefix="/image")
DEFAULT_LIMIT = 25
UNSIMULATED = frozenset({"sort", "sort_key", "sort_dir", "name", "status", "tag",
                         "protected", "size_min", "size_max", "container_format",
                         "disk_format", "id"})
TIME_FILTERS = ("created_at", "updated_at")


def _bad(message: str, code: int = 400) -> Response:
    title = {400: "Bad Request", 404: "Not Found"}.get(code, "Error")
    return common.json_response({"code": code, "title": title, "message": message}, code)


def _is_version_document() -> bool:
    return request.path.rstrip("/") in ("/image", "/image/versions", "/image/v2")


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    return common.guard("image", public=_is_version_document)


def _versions() -> list[dict[str, Any]]:
    base = common.base_url()
    return [{"id": f"v2.{minor}", "status": "CURRENT" if minor == 16 else "SUPPORTED",
             "links": [{"rel": "self", "href": f"{base}/image/v2/"}]}
            for minor in (16, 15, 9, 0)]


@bp.get("/")
def versions() -> Response:
    return common.json_response({"versions": _versions()}, 300)


@bp.get("/versions")
def versions_again() -> Response:
    return common.json_response({"versions": _versions()})


@bp.get("/v2/images")
def images() -> Response:
    tok = common.token()
    args = request.args
    for name in args:
        if name in UNSIMULATED:
            return _bad(f"simcloud does not simulate the images parameter {name!r}")
    comparisons = {}
    for field in TIME_FILTERS:
        if field in args:
            comparison = time_comparison(args[field])
            if comparison is None:
                return _bad(f"Invalid {field} filter: {args[field]}")
            comparisons[field] = comparison
    hidden_raw = args.get("os_hidden", "false")
    hidden = common.bool_param(hidden_raw)
    if hidden is None:
        return _bad(f"Invalid value '{hidden_raw}' for parameter 'os_hidden'")
    visibility = args.get("visibility")
    if visibility not in (None, "public", "private", "shared", "community", "all"):
        return _bad(f"Invalid visibility value: {visibility}")
    owner = args.get("owner")
    limit = common.int_param("limit", args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    max_limit = common.world().config.page_cap("image")  # api_limit_max
    assert max_limit is not None
    page_size = min(limit if limit is not None else DEFAULT_LIMIT, max_limit)
    w = common.world()
    now = w.now
    admin = tok.is_admin
    project = tok.project_id

    def visible(res: Resource) -> bool:
        if not res.exists_at(now) or res.hidden != hidden:
            return False
        res_owner = None if res.ownerless else res.phase_at(now).project
        if not admin and res_owner != project and res.visibility != "public":
            return False
        if visibility not in (None, "all") and res.visibility != visibility:
            return False
        if "created_at" in comparisons and not compares(res.created_at,
                                                        comparisons["created_at"]):
            return False
        if "updated_at" in comparisons and not compares(res.updated_at(now),
                                                        comparisons["updated_at"]):
            return False
        return owner is None or res_owner == owner

    page = w.indexes[model.IMAGE].page(visible, args.get("marker"), page_size)
    if page is None:
        return _bad(f"marker {args.get('marker')} could not be found.")
    items, _ = page
    common.page_latency("image", len(items))
    body: dict[str, Any] = {"images": [_image_view(r, now) for r in items],
                            "schema": "/v2/schemas/images", "first": "/v2/images"}
    if items and len(items) == page_size:
        # glance keeps the query as asked (the limit too, even when it capped it)
        params = dict(args.items())
        params["marker"] = items[-1].id
        body["next"] = "/v2/images?" + urlencode(params)
    return common.json_response(body)


def _z(t: float) -> str:
    return to_datetime(t).strftime("%Y-%m-%dT%H:%M:%SZ")


def _image_view(res: Resource, now: float) -> dict[str, Any]:
    phase = res.phase_at(now)
    return {
        "id": res.id,
        "name": res.name,
        "status": phase.status,
        "visibility": res.visibility,
        "owner": None if res.ownerless else phase.project,
        "size": phase.size,
        "virtual_size": phase.size,  # a raw image's, as glance 33 answers
        "checksum": res.id.replace("-", "")[:32] if phase.size else None,
        "os_hash_algo": "sha512" if phase.size else None,
        "os_hash_value": (res.id.replace("-", "") * 4)[:128] if phase.size else None,
        "os_hidden": res.hidden,
        "protected": False,
        "container_format": "bare",
        "disk_format": "raw",
        "min_disk": 0,
        "min_ram": 0,
        "tags": [],
        "created_at": _z(res.created_at),
        "updated_at": _z(res.updated_at(now)),
        "self": f"/v2/images/{res.id}",
        "file": f"/v2/images/{res.id}/file",
        "schema": "/v2/schemas/image",
    }
