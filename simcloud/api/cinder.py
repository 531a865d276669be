"""Cinder (block-storage v3): versions, ``volumes/detail`` and ``types``."""

from __future__ import annotations

import functools
from typing import Any

from flask import Blueprint, Response, g, request

from simcloud import model
from simcloud.api import common
from simcloud.api.timeparse import compares, time_comparison
from simcloud.model import VOLUME_TYPES, Resource, to_datetime

bp = Blueprint("cinder", __name__, url_prefix="/volume")
MIN_VERSION = (3, 0)
MAX_VERSION = (3, 71)
# Filters cinder answers that this simulation does not: refused, never ignored.
UNSIMULATED = frozenset({"name", "status", "metadata", "bootable", "migration_status",
                         "availability_zone", "group_id", "sort", "sort_key", "sort_dir",
                         "offset", "with_count", "volume_type"})
# Filters with time comparison operators from this microversion on (cinder 3.60).
TIME_FILTERS = ("created_at", "updated_at")
TIME_FILTERS_FROM = (3, 60)


_bad = common.fault


def _is_version_document() -> bool:
    return request.path.rstrip("/") in ("/volume", "/volume/v3")


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    denied = common.guard("block-storage", public=_is_version_document)
    if denied is not None or _is_version_document():
        return denied
    parts = request.headers.get("OpenStack-API-Version", "").strip().split()
    requested = parts[1] if len(parts) == 2 and parts[0].lower() == "volume" else None
    return common.negotiate_microversion(
        requested, MIN_VERSION, MAX_VERSION,
        malformed="Invalid API version {v}",
        unsupported="Version {v} is not supported by the API. Minimum is 3.0 and "
        f"maximum is {MAX_VERSION[0]}.{MAX_VERSION[1]}.")


@bp.after_request
def _echo_version(response: Response) -> Response:
    version = getattr(g, "microversion", None)
    if version is not None:
        response.headers["OpenStack-API-Version"] = f"volume {version[0]}.{version[1]}"
        response.headers["Vary"] = "OpenStack-API-Version"
    return response


def _v3(base: str) -> dict[str, Any]:
    return {"id": "v3.0", "status": "CURRENT", "version": f"{MAX_VERSION[0]}.{MAX_VERSION[1]}",
            "min_version": "3.0",
            "updated": "2023-08-31T00:00:00Z",
            # cinder 29's order: describedby (its docs), then self.
            "links": [{"rel": "describedby", "type": "text/html",
                       "href": "https://docs.openstack.org/"},
                      {"rel": "self", "href": f"{base}/volume/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.volume+json;version=3"}]}


@bp.get("/")
def versions() -> Response:
    return common.json_response({"versions": [_v3(common.base_url())]}, 300)


@bp.get("/v3")
def version() -> Response:
    return common.json_response({"versions": [_v3(common.base_url())]})


def _scope(project_id: str | None) -> Response | None:
    if project_id is not None and project_id != common.token().project_id:
        return _bad("Malformed request url")
    return None


@functools.lru_cache(maxsize=1 << 17)  # listings render the same instants over and over
def _micro(t: float | None) -> str | None:
    return None if t is None else to_datetime(t).strftime("%Y-%m-%dT%H:%M:%S.%f")


@bp.get("/v3/volumes/detail")
@bp.get("/v3/<project_id>/volumes/detail")
def volumes_detail(project_id: str | None = None) -> Response:
    tok = common.token()
    error = _scope(project_id)
    if error is not None:
        return error
    version: tuple[int, int] = g.microversion
    args = request.args
    for name in args:
        if name in UNSIMULATED:
            return _bad(f"simcloud does not simulate the volumes filter {name!r}")
    comparisons = {}
    for field in TIME_FILTERS:
        if field not in args:
            continue
        if version < TIME_FILTERS_FROM:
            return _bad(f"Invalid filter keys: {field}")
        comparison = time_comparison(args[field])
        if comparison is None:
            return _bad(f"Invalid filter {field}={args[field]}: expected OP:ISO8601 with OP "
                        "one of gt, gte, eq, neq, lt, lte")
        comparisons[field] = comparison
    all_tenants = tok.is_admin and common.bool_param(args.get("all_tenants", "0") or "1")
    scope = None if all_tenants else tok.project_id
    if all_tenants and args.get("project_id"):
        scope = args["project_id"]
    limit = common.int_param("limit", args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    max_limit = common.world().config.page_cap("block-storage")  # osapi_max_limit
    assert max_limit is not None
    page_size = min(limit if limit is not None else max_limit, max_limit)
    w = common.world()
    now = w.now

    def visible(res: Resource) -> bool:
        if not res.exists_at(now) or (scope is not None and res.phase_at(now).project != scope):
            return False
        if "created_at" in comparisons and not compares(res.created_at,
                                                        comparisons["created_at"]):
            return False
        if "updated_at" in comparisons:
            updated = res.updated_at(now)  # null until the volume first changes
            return compares(None if updated == res.created_at else updated,
                            comparisons["updated_at"])
        return True

    page = w.indexes[model.VOLUME].page(visible, args.get("marker"), page_size)
    if page is None:
        return _bad(f"marker [{args.get('marker')}] not found", 404)
    items, _ = page
    common.page_latency("block-storage", len(items))
    base = common.base_url()
    body: dict[str, Any] = {"volumes": [_volume_view(r, now, version, base) for r in items]}
    if items and len(items) == page_size:
        body["volumes_links"] = [{"rel": "next", "href": common.page_link(
            request.path, dict(args.items()), items[-1].id)}]
    return common.json_response(body)


def _volume_view(res: Resource, now: float, version: tuple[int, int], base: str
                 ) -> dict[str, Any]:
    phase = res.phase_at(now)
    size_gb, type_index = phase.size
    vtype = VOLUME_TYPES[type_index]
    updated = res.updated_at(now)
    attachments = []
    if phase.attached and phase.status in ("in-use", "detaching"):
        attachments = [{"server_id": phase.attached, "attachment_id": res.id[:8] + "-att",
                        "volume_id": res.id, "id": res.id, "host_name": None,
                        "device": "/dev/vdb", "attached_at": _micro(phase.at)}]
    view: dict[str, Any] = {
        "id": res.id,
        "name": res.name,
        "description": None,
        "status": phase.status,
        "size": size_gb,
        "availability_zone": "nova",
        "bootable": "false",
        "encrypted": False,
        "multiattach": False,
        "attachments": attachments,
        "metadata": {},
        "links": [{"rel": "self", "href": f"{base}/volume/v3/{phase.project}/volumes/{res.id}"},
                  {"rel": "bookmark", "href": f"{base}/volume/{phase.project}/volumes/{res.id}"}],
        "user_id": res.user_id,
        "os-vol-tenant-attr:tenant_id": phase.project,
        "os-vol-host-attr:host": res.host,
        "os-vol-mig-status-attr:migstat": None,
        "os-vol-mig-status-attr:name_id": None,
        "migration_status": None,
        "replication_status": None,
        "consistencygroup_id": None,
        "snapshot_id": None,
        "source_volid": None,
        "volume_type": vtype.name,
        "created_at": _micro(res.created_at),
        # cinder reports updated_at null until a volume is first updated
        "updated_at": None if updated == res.created_at else _micro(updated),
    }
    if version >= (3, 13):
        view["group_id"] = None
    if version >= (3, 21):
        view["provider_id"] = None
    if version >= (3, 48):
        view["shared_targets"] = False
        view["service_uuid"] = "b2a1d4c1-0000-4000-8000-000000000001"
    if version >= (3, 61):
        view["cluster_name"] = None
    if version >= (3, 63):
        view["volume_type_id"] = vtype.id
    if version >= (3, 65):
        view["consumes_quota"] = True
    return view


@bp.get("/v3/types")
@bp.get("/v3/<project_id>/types")
def types(project_id: str | None = None) -> Response:
    tok = common.token()
    error = _scope(project_id)
    if error is not None:
        return error
    raw = request.args.get("is_public")
    if raw is None:
        wanted: bool | None = True
    elif raw.lower() == "none":
        wanted = None
    else:
        wanted = common.bool_param(raw)
        if wanted is None:
            return _bad(f"Invalid is_public filter [{raw}]")
    if not tok.is_admin:
        wanted = True
    listed = [t for t in VOLUME_TYPES if wanted is None or t.is_public == wanted]
    limit = common.int_param("limit", request.args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    max_limit = common.world().config.page_cap("block-storage")  # osapi_max_limit
    assert max_limit is not None
    page_size = min(limit if limit is not None else max_limit, max_limit)
    marker = request.args.get("marker")
    if marker is not None:
        ids = [t.id for t in listed]
        if marker not in ids:
            return _bad(f"marker [{marker}] not found", 404)
        listed = listed[ids.index(marker) + 1:]
    page = listed[:page_size]
    body: dict[str, Any] = {"volume_types": [
        {"id": t.id, "name": t.name, "description": t.description, "is_public": t.is_public,
         "os-volume-type-access:is_public": t.is_public, "extra_specs": {},
         "qos_specs_id": None} for t in page]}
    if page and len(page) == page_size:  # cinder's views/types.py: volume_type_links
        body["volume_type_links"] = [{"rel": "next", "href": common.page_link(
            request.path, dict(request.args.items()), page[-1].id)}]
    return common.json_response(body)
