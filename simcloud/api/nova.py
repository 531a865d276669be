"""Nova (compute v2.1): versions, microversions, ``servers/detail``, ``flavors/detail``."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, g, request

from simcloud import model
from simcloud.api import common
from simcloud.api.nova_views import flavor_view, server_view
from simcloud.model import FLAVORS, Resource

bp = Blueprint("nova", __name__, url_prefix="/compute")
MIN_VERSION = (2, 1)

# Query parameters nova's servers schema knows (2.75+ refuses any other) ...
NOVA_SERVER_PARAMS = frozenset({
    "user_id", "project_id", "tenant_id", "launch_index", "image_ref", "image", "kernel_id",
    "ramdisk_id", "hostname", "key_name", "power_state", "vm_state", "task_state", "host",
    "node", "flavor", "reservation_id", "launched_at", "terminated_at", "availability_zone",
    "name", "display_name", "description", "display_description", "locked_by", "uuid",
    "root_device_name", "config_drive", "access_ip_v4", "access_ip_v6", "auto_disk_config",
    "progress", "sort_key", "sort_dir", "all_tenants", "soft_deleted", "deleted", "status",
    "changes-since", "changes-before", "ip", "ip6", "created_at", "block_device_mapping",
    "services", "metadata", "system_metadata", "info_cache", "security_groups", "pci_devices",
    "limit", "marker", "tags", "tags-any", "not-tags", "not-tags-any", "locked",
    "pinned_availability_zone",
})
# ... and the ones this simulation answers; a known filter it does not simulate is
# refused rather than ignored, so a listing is never silently wrong.
SIMULATED_PARAMS = frozenset({"all_tenants", "deleted", "changes-since", "changes-before",
                              "limit", "marker", "project_id", "tenant_id"})


_bad = common.fault


def _is_version_document() -> bool:
    return request.path.rstrip("/") in ("/compute", "/compute/v2.1", "/compute/v2")


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    denied = common.guard("compute", public=lambda: request.path.rstrip("/") == "/compute")
    if denied is not None:
        return denied
    if _is_version_document():
        unreadable = common.world().faults.nova_version_document
        if unreadable == 401 and request.path.rstrip("/") != "/compute":
            return common.unauthorized()
        if unreadable == 503:
            return common.service_unavailable()
        return None
    header = request.headers.get("OpenStack-API-Version")
    requested: str | None = None
    if header:
        parts = header.strip().split()
        if len(parts) == 2 and parts[0].lower() == "compute":
            requested = parts[1]
    if requested is None:
        requested = request.headers.get("X-OpenStack-Nova-API-Version")
    highest = _max_version()
    return common.negotiate_microversion(
        requested, MIN_VERSION, highest,
        malformed="API Version String {v} is of invalid format. Must be of "
        "format MajorNum.MinorNum.",
        unsupported="Version {v} is not supported by the API. Minimum is 2.1 and "
        f"maximum is {highest[0]}.{highest[1]}.")


def _max_version() -> tuple[int, int]:
    return common.world().config.nova_max_version


def _max_limit() -> int:
    cap = common.world().config.page_cap("compute")
    assert cap is not None
    return cap


@bp.after_request
def _echo_version(response: Response) -> Response:
    if response.mimetype == "application/json" and response.status_code >= 400:
        # nova's faults are webob responses naming their charset; its answers are not
        response.headers["Content-Type"] = "application/json; charset=UTF-8"
    version = getattr(g, "microversion", None)
    if version is not None:
        text = f"{version[0]}.{version[1]}"
        response.headers["OpenStack-API-Version"] = f"compute {text}"
        response.headers["X-OpenStack-Nova-API-Version"] = text
        response.headers["Vary"] = "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
    return response


def _version_entry(base: str) -> dict[str, Any]:
    highest = _max_version()
    return {"id": "v2.1", "status": "CURRENT", "version": f"{highest[0]}.{highest[1]}",
            "min_version": "2.1",
            "updated": "2013-07-23T11:33:21Z",
            "links": [{"href": f"{base}/compute/v2.1/", "rel": "self"},
                      {"href": "http://docs.openstack.org/", "rel": "describedby",
                       "type": "text/html"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


@bp.get("/")
def versions() -> Response:
    # nova's list of versions: each entry without media types or describedby
    base = common.base_url()
    v20 = {"id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "",
           "updated": "2025-07-04T12:00:00Z",
           "links": [{"href": f"{base}/compute/v2/", "rel": "self"}]}
    v21 = {key: value for key, value in _version_entry(base).items() if key != "media-types"}
    v21["links"] = v21["links"][:1]
    return common.json_response({"versions": [v20, v21]})


@bp.get("/v2.1")
def version() -> Response:
    if not request.path.endswith("/"):
        # nova's router redirects '' to '/' (after keystonemiddleware has let it in)
        return Response(status=302, headers={"Location": f"{common.base_url()}/compute/v2.1/"})
    return common.json_response({"version": _version_entry(common.base_url())})


def _params_error(version: tuple[int, int]) -> Response | None:
    for name in request.args:
        if name not in NOVA_SERVER_PARAMS:
            if version >= (2, 75):
                return _bad("Invalid input for query parameters "
                            f"Additional properties are not allowed ('{name}' was unexpected)")
            continue
        if name not in SIMULATED_PARAMS:
            return _bad(f"simcloud does not simulate the servers filter {name!r}")
    if "changes-before" in request.args and version < (2, 66):
        return _bad("changes-before needs microversion 2.66")
    return None


@bp.get("/v2.1/servers/detail")
@bp.get("/v2.1/<project_id>/servers/detail")
def servers_detail(project_id: str | None = None) -> Response:
    tok = common.token()
    version: tuple[int, int] = g.microversion
    error = _params_error(version)
    if error is not None:
        return error
    args = request.args
    all_tenants = False
    if "all_tenants" in args:
        raw = args["all_tenants"]
        parsed = common.bool_param(raw) if raw else True
        if parsed is None:
            return _bad(f"Invalid input for field/attribute all_tenants. Value: {raw}")
        all_tenants = parsed
    if all_tenants and not tok.is_admin:
        return _bad("Policy doesn't allow os_compute_api:servers:detail:get_all_tenants to "
                    "be performed.", 403)
    deleted: bool | None = None
    if "deleted" in args and tok.is_admin:  # silently dropped for others (allow_all_filters)
        deleted = common.bool_param(args["deleted"])
        if deleted is None:
            return _bad(f"Invalid value {args['deleted']!r} for deleted")
    since = _instant_param("changes-since")
    before = _instant_param("changes-before")
    if isinstance(since, Response):
        return since
    if isinstance(before, Response):
        return before
    limit = common.int_param("limit", args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    page_size = min(limit if limit is not None else _max_limit(), _max_limit())
    project_filter = args.get("project_id") or args.get("tenant_id")
    scope = None if all_tenants and tok.is_admin else tok.project_id
    if project_filter and tok.is_admin and (all_tenants or "all_tenants" not in args):
        # an admin's project filter implies all_tenants unless it is explicitly off
        scope = project_filter
    w = common.world()
    now = w.now
    faults = w.faults
    hide_down_cells = version < (2, 69)

    def visible(res: Resource) -> bool:
        if res.created_at > now:
            return False
        gone = res.deleted_at is not None and res.deleted_at <= now
        if deleted is True and not gone:
            return False
        if gone and deleted is not True and since is None:
            return False
        if gone and deleted is False:
            return False
        if scope is not None and res.phase_at(now).project != scope:
            return False
        if since is not None or before is not None:
            updated = res.updated_at(now)
            if since is not None and updated < since:
                return False
            if before is not None and updated > before:
                return False
        return not (hide_down_cells and faults.in_down_cell(res.id))

    page = w.indexes[model.INSTANCE].page(visible, args.get("marker"), page_size)
    if page is None:
        return _bad(f"marker [{args.get('marker')}] not found")
    items, full = page
    common.page_latency("compute", len(items))
    base = common.base_url()
    cache = w.view_cache.setdefault("nova-servers", {})
    servers = [server_view(res, now, version, tok.is_admin, base, faults.in_down_cell(res.id),
                           cache) for res in items]
    body: dict[str, Any] = {"servers": servers}
    if items and len(items) == page_size:
        body["servers_links"] = [{"rel": "next", "href": common.page_link(
            request.path, dict(args.items()), items[-1].id)}]
    return common.json_response(body)


@bp.get("/v2.1/servers/<server_id>")
@bp.get("/v2.1/<project_id>/servers/<server_id>")
def server_show(server_id: str, project_id: str | None = None) -> Response:
    tok = common.token()
    w = common.world()
    now = w.now
    res = w.by_id.get(server_id)
    # nova finds another project's server for an admin only; a deleted one for nobody
    if res is None or res.kind != model.INSTANCE or res.created_at > now or (
            res.deleted_at is not None and res.deleted_at <= now) or (
            not tok.is_admin and res.phase_at(now).project != tok.project_id):
        return _bad(f"Instance {server_id} could not be found.", 404)
    cache = w.view_cache.setdefault("nova-servers", {})
    return common.json_response({"server": server_view(
        res, now, g.microversion, tok.is_admin, common.base_url(),
        w.faults.in_down_cell(res.id), cache)})


def _instant_param(name: str) -> float | Response | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    from simcloud.api.timeparse import parse_iso8601

    parsed = parse_iso8601(raw)
    if parsed is None:
        return _bad(f"Invalid input for query parameters {name}. Value: {raw}. "
                    f"'{raw}' is not a 'date-time'")
    return parsed


@bp.get("/v2.1/flavors/detail")
@bp.get("/v2.1/<project_id>/flavors/detail")
def flavors_detail(project_id: str | None = None) -> Response:
    tok = common.token()
    version: tuple[int, int] = g.microversion
    raw = request.args.get("is_public")
    if raw is None:
        wanted: bool | None = True
    elif raw.lower() == "none":
        wanted = None if tok.is_admin else True
    else:
        wanted = common.bool_param(raw)
        if wanted is None:
            return _bad(f"Invalid is_public filter [{raw}]")
        if not tok.is_admin:
            wanted = True
    flavors = [f for f in FLAVORS if wanted is None or f.is_public == wanted]
    limit = common.int_param("limit", request.args.get("limit"), _bad)
    if isinstance(limit, Response):
        return limit
    page_size = min(limit if limit is not None else _max_limit(), _max_limit())
    marker = request.args.get("marker")
    if marker is not None:
        ids = [f.id for f in flavors]
        if marker not in ids:
            return _bad(f"marker [{marker}] not found")
        flavors = flavors[ids.index(marker) + 1:]
    page = flavors[:page_size]
    base = common.base_url()
    body: dict[str, Any] = {"flavors": [flavor_view(f, version, base) for f in page]}
    if page and len(page) == page_size:
        body["flavors_links"] = [{"rel": "next", "href": common.page_link(
            request.path, dict(request.args.items()), page[-1].id)}]
    return common.json_response(body)
