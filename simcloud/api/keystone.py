"""Keystone v3: version documents and ``POST /v3/auth/tokens`` with the catalog."""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from flask import Blueprint, Response, request

from simcloud.api import common
from simcloud.identity import DOMAIN_ID, DOMAIN_NAME, AuthError, Token

bp = Blueprint("keystone", __name__, url_prefix="/identity")
REGION = "RegionOne"


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


def token_body(token: Token, base: str) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    domain = {"id": DOMAIN_ID, "name": DOMAIN_NAME}
    body: dict[str, Any] = {
        "methods": ["application_credential" if token.app_credential else "password"],
        "user": {"domain": domain, "id": token.user.id, "name": token.user.name,
                 "password_expires_at": None},
        "audit_ids": [secrets.token_urlsafe(16)],
        "issued_at": now.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "expires_at": (now + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "project": {"domain": domain, "id": token.user.project_id,
                    "name": token.user.project_name},
        "is_domain": False,
        "roles": [{"id": f"role-{name}", "name": name} for name in token.roles],
        "catalog": catalog(base, token.user.project_id),
    }
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
    return [
        {"id": f"svc-{name}", "type": stype, "name": name,
         "endpoints": [{"id": f"ep-{name}-{iface}", "interface": iface, "region": REGION,
                        "region_id": REGION, "url": url}
                       for iface in ("public", "internal", "admin")]}
        for stype, name, url in services
    ]
