"""What every simulated API shares: the keystonemiddleware stand-in, faults, links.

Each service blueprint calls :func:`guard` before its views: the fault switches
first (a load balancer in front of the API answers 503, or the API refuses every
token), then token validation and application-credential access rules, as
keystonemiddleware does.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from flask import Flask, Response, current_app, g, request

from simcloud.identity import Identity, Token, access_allowed
from simcloud.world import World

# The service types keystone's catalog lists (see keystone.catalog).
CATALOG_TYPES = frozenset({"identity", "compute", "volumev3", "block-storage", "network",
                           "image", "load-balancer"})

# URL prefix of each service on the one port, and its catalog service type.
PREFIXES = {
    "identity": "/identity",
    "compute": "/compute",
    "block-storage": "/volume",
    "network": "/networking",
    "image": "/image",
    "load-balancer": "/load-balancer",
}


def world() -> World:
    return current_app.config["SIMCLOUD_WORLD"]


def identity() -> Identity:
    return current_app.config["SIMCLOUD_IDENTITY"]


def token() -> Token:
    return g.token


def page_latency(service: str, items: int) -> None:
    """Spend what a page of ``items`` costs the real ``service`` (the world's latency
    model, ``WorldConfig.page_latencies``); nothing without one."""
    delay = world().config.page_latency(service, items)
    if delay > 0:
        time.sleep(delay)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status=status,
                    headers=headers, mimetype="application/json")


def unauthorized() -> Response:
    return json_response(
        {"error": {"code": 401, "title": "Unauthorized",
                   "message": "The request you have made requires authentication."}},
        401, {"WWW-Authenticate": f'Keystone uri="{base_url()}/identity"'})


def service_unavailable() -> Response:
    return Response("<html><body><h1>503 Service Unavailable</h1>\nNo server is available "
                    "to handle this request.\n</body></html>\n", status=503,
                    mimetype="text/html")


def fault(message: str, code: int = 400) -> Response:
    """The fault body nova and cinder answer with (``{"badRequest": {...}}``)."""
    name = {400: "badRequest", 403: "forbidden", 404: "itemNotFound"}.get(code, "computeFault")
    return json_response({name: {"code": code, "message": message}}, code)


_MICROVERSION_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")


def negotiate_microversion(requested: str | None, minimum: tuple[int, int],
                           maximum: tuple[int, int], *, malformed: str,
                           unsupported: str) -> Response | None:
    """Set ``g.microversion`` from the requested text, as nova and cinder negotiate.

    None asks for the minimum, ``latest`` for the maximum; a malformed version is 400
    and one out of range 406, with the service's own message (``{v}`` is the text).
    """
    if requested is None:
        g.microversion = minimum
        return None
    text = requested.strip()
    if text.lower() == "latest":
        g.microversion = maximum
        return None
    match = _MICROVERSION_RE.match(text)
    if not match:
        return fault(malformed.format(v=requested))
    version = (int(match.group(1)), int(match.group(2)))
    if not minimum <= version <= maximum:
        return fault(unsupported.format(v=requested), 406)
    g.microversion = version
    return None


def base_url() -> str:
    return request.host_url.rstrip("/")


def guard(service: str, public: Callable[[], bool] = lambda: False) -> Response | None:
    """Faults, then keystonemiddleware: a Response to answer instead, or None to go on."""
    if service in world().config.absent_services:
        return Response("Not Found\n", status=404, mimetype="text/plain")  # not deployed
    fault = world().faults.get(service)
    if fault is not None:
        if fault.delay_s:
            time.sleep(fault.delay_s)
        if fault.status == 503:
            return service_unavailable()
        if fault.status == 401:
            return unauthorized()
    if public():
        return None
    found = identity().validate(request.headers.get("X-Auth-Token"))
    if found is None:
        return unauthorized()
    authtoken_type = world().config.authtoken_service_type(service)
    if not access_allowed(found, authtoken_type, CATALOG_TYPES, request.method,
                          request.path):
        return unauthorized()
    g.token = found
    return None


def page_link(path: str, params: dict[str, str], marker: str) -> str:
    query = dict(params)
    query["marker"] = marker
    return f"{base_url()}{path}?{urlencode(query)}"


def int_param(name: str, value: str | None, error: Callable[[str], Response],
              minimum: int = 0) -> int | Response | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        return error(f"{name} param must be an integer")
    if number < minimum:
        return error(f"{name} param must be >= {minimum}")
    return number


def bool_param(value: str) -> bool | None:
    """oslo strutils.bool_from_string, strict: None for an unrecognised value."""
    lowered = value.strip().lower()
    if lowered in ("1", "t", "true", "on", "y", "yes"):
        return True
    if lowered in ("0", "f", "false", "off", "n", "no"):
        return False
    return None


def register_common(app: Flask) -> None:
    app.url_map.strict_slashes = False
