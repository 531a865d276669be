"""A service's refusal in the service's own words.

keystoneauth reads only keystone's ``{"error": {"message"}}`` (and the API-SIG
``{"errors": [...]}``); every other service's body becomes ``Unrecognized schema in
response body.`` or, for a text body, the status name alone.  An operator needs what
the cloud said: nova and cinder answer ``{"<kind>": {"message": ...}}``, neutron
``{"NeutronError": {"message", "type", "detail"}}``, glance webob's
``{"message", "code", "title"}`` (or its text), octavia wsme's ``{"faultstring"}``,
pecan ``{"description"}``, a proxy an HTML page.
"""

from __future__ import annotations

import html
import re
from typing import Any

from keystoneauth1 import exceptions as ks_exceptions

# The catalog's service types by the name operators know them by.
SERVICE_NAMES = {
    "identity": "keystone",
    "compute": "nova",
    "block-storage": "cinder",
    "volumev3": "cinder",
    "network": "neutron",
    "image": "glance",
    "load-balancer": "octavia",
}
# A body quoted whole would flood stats.errors (a proxy's page, a traceback).
MAX_WORDS = 300
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


class ServiceAnswered(ks_exceptions.ClientException):
    """A request a service answered with an error status; says what it answered."""

    def __init__(self, service: str, path: str, status: int, words: str,
                 request_id: str | None = None) -> None:
        self.service = service
        self.path = path
        self.http_status = status
        self.words = words
        text = f"{service} answered GET {path} with HTTP {status}: {words}"
        if request_id:
            text += f" (request id {request_id})"
        super().__init__(text)


class ServiceNotInCatalog(ks_exceptions.EndpointNotFound):
    """The catalog names no endpoint of a service type for the entry's region and
    interface: worded as such, never as a refused request."""

    def __init__(self, service_type: str, interface: Any, region: Any) -> None:
        self.service_type = service_type
        where = []
        if interface:
            where.append(f"interface {interface}")
        if region:
            where.append(f"region {region}")
        suffix = f" ({', '.join(where)})" if where else ""
        super().__init__(f"the catalog lists no {service_type} endpoint{suffix}")


def service_name(service_type: str) -> str:
    return SERVICE_NAMES.get(service_type, service_type)


def _plain(text: str) -> str:
    """Markup out, entities resolved, whitespace collapsed."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def _json_words(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    for key in ("faultstring", "description"):  # octavia (wsme), pecan
        if isinstance(body.get(key), str) and body[key].strip():
            return body[key]
    if isinstance(body.get("message"), str):  # glance (webob's JSON error)
        return body["message"]
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        return str(first.get("detail") or first.get("title") or "") or None
    # nova/cinder {"forbidden": {...}}, neutron {"NeutronError": {...}}, keystone {"error": ...}
    for value in body.values():
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return value["message"]
    return None


def cloud_words(response: Any) -> str:
    """What an error answer says, as plain text of at most MAX_WORDS characters."""
    if response is None:
        return "no answer"
    words: str | None = None
    try:
        body = response.json()
    except ValueError:
        body = None
    words = _json_words(body)
    if words is None:
        words = response.text or ""
    words = _plain(words)
    if not words:
        return f"an empty {response.headers.get('Content-Type') or 'body'}"
    if len(words) > MAX_WORDS:
        words = words[:MAX_WORDS - 1].rstrip() + "…"
    return words


def from_http_error(exc: ks_exceptions.HttpError, service_type: str,
                    path: str) -> ServiceAnswered:
    return ServiceAnswered(service_name(service_type), path, int(exc.http_status),
                           cloud_words(exc.response), exc.request_id)
