"""Keystone v3: version documents and the token API with the catalog.

- ``POST /v3/auth/tokens``: issue a token (password or application credential);
- ``GET``/``HEAD /v3/auth/tokens``: validate the ``X-Subject-Token`` for the caller's
  ``X-Auth-Token``, as keystonemiddleware asks: 200 with the token body, 404 for a
  token unknown, expired or revoked, 401 for an invalid caller token, 403 for a
  caller that holds neither the admin nor the service role (nor is the subject);
- ``DELETE /v3/auth/tokens``: revoke the ``X-Subject-Token`` (204, 404 if not valid);
- ``GET /v3/projects``: every project (the world's, the admin and service projects)
  with its ``domain_id``, in keystone's shape (no paging, ``links`` an object); an
  admin's only (``identity:list_projects``), else 403 in keystone's words.

The catalog lists Tally's Reporting API (service type ``usage-history``) when the
server was given its URL (``tally-simcloud serve --tally-url``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, Response, current_app, request

from simcloud.api import common
from simcloud.identity import DOMAIN_ID, DOMAIN_NAME, AuthError, Token, access_allowed

bp = Blueprint("keystone", __name__, url_prefix="/identity")
REGION = "RegionOne"
# The catalog service type under which Tally's Reporting API is registered.
TALLY_SERVICE_TYPE = "usage-history"
TALLY_URL_KEY = "SIMCLOUD_TALLY_URL"


def guard() -> Response | None:
    """Run before every request under this prefix, matched route or not."""
    # Version documents and the token request itself need no token.
    return common.guard("identity", public=lambda: True)


def _version(base: str) -> dict[str, Any]:
    return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{base}/identity/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


@bp.get("/")
def versions() -> Response:
    return common.json_response({"versions": {"values": [_version(common.base_url())]}}, 300)


@bp.get("/v3")
def version() -> Response:
    return common.json_response({"version": _version(common.base_url())})


@bp.post("/v3/auth/tokens")
def issue_token() -> Response:
    body = request.get_json(silent=True)
    if body is None:
        return common.json_response(
            {"error": {"code": 400, "title": "Bad Request",
                       "message": "The request body must be JSON."}}, 400)
    try:
        token = common.identity().authenticate(body)
    except AuthError as exc:
        return common.json_response(
            {"error": {"code": 401, "title": "Unauthorized", "message": str(exc)}}, 401)
    return common.json_response({"token": token_body(token, common.base_url())}, 201,
                                {"X-Subject-Token": token.value})


def _error(code: int, title: str, message: str) -> Response:
    return common.json_response({"error": {"code": code, "title": title, "message": message}},
                                code)


def _subject() -> tuple[Token | None, Response | None]:
    """The token to validate or revoke, after checking the caller's own token."""
    caller = common.identity().validate(request.headers.get("X-Auth-Token"))
    if caller is None:
        return None, common.unauthorized()
    subject_value = request.headers.get("X-Subject-Token", "")
    subject = common.identity().validate(subject_value)
    if not caller.can_validate and caller.value != subject_value:
        return None, _error(403, "Forbidden",
                            "You are not authorized to perform the requested action: "
                            "identity:validate_token.")
    if subject is None:
        return None, _error(404, "Not Found", "Could not find token.")
    return subject, None


@bp.route("/v3/auth/tokens", methods=["GET", "HEAD"])
def validate_token() -> Response:
    subject, refusal = _subject()
    if refusal is not None:
        return refusal
    assert subject is not None
    # keystonemiddleware asks ?nocatalog when include_service_catalog = false.
    with_catalog = "nocatalog" not in request.args
    body = token_body(subject, common.base_url(), with_catalog=with_catalog)
    return common.json_response({"token": body}, 200, {"X-Subject-Token": subject.value})


@bp.delete("/v3/auth/tokens")
def revoke_token() -> Response:
    subject, refusal = _subject()
    if refusal is not None:
        return refusal
    assert subject is not None
    common.identity().revoke(subject.value)
    return Response(status=204)


@bp.get("/v3/projects")
def list_projects() -> Response:
    caller = common.identity().validate(request.headers.get("X-Auth-Token"))
    if caller is None:
        return common.unauthorized()
    if not access_allowed(caller, "identity", common.CATALOG_TYPES, request.method,
                          request.path):
        return common.unauthorized()
    if not caller.is_admin:
        return _error(403, "Forbidden", "You are not authorized to perform the requested "
                                        "action: identity:list_projects.")
    base = common.base_url()
    world = common.world()
    service = {user.project_id: user.project_name
               for user in common.identity().users.values()}
    listed = [(p.id, p.name, p.domain_id) for p in (*world.projects, world.admin_project)]
    known = {row[0] for row in listed}
    listed += [(project_id, name, DOMAIN_ID) for project_id, name in service.items()
               if project_id not in known]
    projects = [{"id": project_id, "name": name, "domain_id": domain, "description": "",
                 "enabled": True, "is_domain": False, "parent_id": domain, "tags": [],
                 "options": {},
                 "links": {"self": f"{base}/identity/v3/projects/{project_id}"}}
                for project_id, name, domain in sorted(listed)]
    return common.json_response({"links": {"self": f"{base}/identity/v3/projects",
                                           "previous": None, "next": None},
                                 "projects": projects})


def _instant(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def token_body(token: Token, base: str, *, with_catalog: bool = True) -> dict[str, Any]:
    domain = {"id": DOMAIN_ID, "name": DOMAIN_NAME}
    body: dict[str, Any] = {
        "methods": ["application_credential" if token.app_credential else "password"],
        "user": {"domain": domain, "id": token.user.id, "name": token.user.name,
                 "password_expires_at": None},
        "audit_ids": [token.audit_id],
        "issued_at": _instant(token.issued_at),
        "expires_at": _instant(token.expires_at),
        "project": {"domain": domain, "id": token.user.project_id,
                    "name": token.user.project_name},
        "is_domain": False,
        "roles": [{"id": f"role-{name}", "name": name} for name in token.roles],
    }
    if with_catalog:
        body["catalog"] = catalog(base, token.user.project_id)
    cred = token.app_credential
    if cred is not None:
        body["application_credential"] = {
            "id": cred.id, "name": cred.name, "restricted": True,
            **({"access_rules": [dict(r, id=f"rule-{i}") for i, r in
                                 enumerate(cred.access_rules)]}
               if cred.access_rules is not None else {}),
        }
    return body


def catalog(base: str, project_id: str) -> list[dict[str, Any]]:
    services = [
        ("identity", "keystone", f"{base}/identity"),
        ("compute", "nova", f"{base}/compute/v2.1"),
        ("volumev3", "cinderv3", f"{base}/volume/v3/{project_id}"),
        ("block-storage", "cinder", f"{base}/volume/v3/{project_id}"),
        ("network", "neutron", f"{base}/networking"),
        ("image", "glance", f"{base}/image"),
        ("load-balancer", "octavia", f"{base}/load-balancer"),
    ]
    absent = common.world().config.absent_services
    # cinder's two catalog types are one service.
    services = [entry for entry in services if entry[0] not in absent
                and not (entry[0] == "volumev3" and "block-storage" in absent)]
    tally_url = current_app.config.get(TALLY_URL_KEY)
    if tally_url:
        services.append((TALLY_SERVICE_TYPE, "tally", tally_url.rstrip("/")))
    return [
        {"id": f"svc-{name}", "type": stype, "name": name,
         "endpoints": [{"id": f"ep-{name}-{iface}", "interface": iface, "region": REGION,
                        "region_id": REGION, "url": url}
                       for iface in ("public", "internal", "admin")]}
        for stype, name, url in services
    ]
