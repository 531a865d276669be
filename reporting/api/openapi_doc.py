"""Building blocks of the OpenAPI 3.1 document: shared components and the read side.

The document is data; ``reporting.api.openapi`` assembles it.  Tests keep it true:
every Flask route appears here and vice versa, responses are validated against
these schemas, and schemathesis fuzzes a running server with it.
"""

from __future__ import annotations

import copy
from typing import Any

from mapping.event import EVENT_SCHEMA

JSON = "application/json"


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def json_body(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def error(description: str) -> dict[str, Any]:
    return json_body(ref("Error"), description)


def errors(*statuses: int) -> dict[str, Any]:
    """Standard error responses by status."""
    texts = {
        400: "Bad request: a parameter or the body is invalid.",
        401: "Missing or invalid credentials.",
        403: "The credentials do not grant the role this request needs, or a filter "
             "names a project outside the token's project scope.",
        404: "Not found.",
        409: "Conflict.",
        413: "The request body is too large.",
        500: "Internal error.",
        503: "Not ready.",
    }
    return {str(status): error(texts[status]) for status in statuses}


# The answer of a read decorated with reporting.api.read_limits.expensive_read.
EXPENSIVE_READ: dict[str, Any] = {"503": error(
    "The read was refused or cancelled: `read_capacity_exhausted` (every read thread "
    "is busy; retry after Retry-After seconds) or `query_too_expensive` (a statement "
    "ran past [api] read_statement_timeout_s; narrow the request); "
    "`database_unavailable` when the database cannot be reached.")}


def list_of(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["items", "next_marker"],
        "properties": {
            "items": {"type": "array", "items": item},
            "next_marker": {
                "type": ["string", "null"],
                "description": "Pass as `marker` to get the next page; null on the last page.",
            },
        },
    }


NULLABLE_INSTANT = {"type": ["string", "null"], "format": "date-time"}
INSTANT = {"type": "string", "format": "date-time"}
NULLABLE_OBJECT = {"type": ["object", "null"]}


def _canonical_event() -> dict[str, Any]:
    schema = copy.deepcopy(EVENT_SCHEMA)
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    return schema


def _history_event() -> dict[str, Any]:
    schema = _canonical_event()
    schema["title"] = "A stored event with its receipt instant"
    schema["required"] = [*schema["required"], "received_at"]
    schema["properties"]["received_at"] = INSTANT
    return schema


_RESOURCE_ROW: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "platform", "cloud", "resource_type", "resource_id", "project_id", "state", "size",
        "live", "created_at", "deleted_at", "last_event_at", "last_event_id",
    ],
    "properties": {
        "platform": {"type": "string"},
        "cloud": {"type": "string"},
        "resource_type": {"type": "string"},
        "resource_id": {"type": "string"},
        "project_id": {"type": "string"},
        "state": {"type": ["string", "null"]},
        "size": NULLABLE_OBJECT,
        "live": {"type": "boolean"},
        "created_at": NULLABLE_INSTANT,
        "deleted_at": NULLABLE_INSTANT,
        "last_event_at": NULLABLE_INSTANT,
        "last_event_id": {"type": ["string", "null"]},
    },
}

_INTERVAL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["start", "end", "project_id", "state", "size", "event_id"],
    "properties": {
        "start": INSTANT,
        "end": {**NULLABLE_INSTANT, "description": "null while the interval is open"},
        "project_id": {"type": "string"},
        "state": {"type": ["string", "null"]},
        "size": NULLABLE_OBJECT,
        "event_id": {"type": "string", "description": "The event that opened the interval."},
    },
}

_USAGE_ITEM: dict[str, Any] = {
    "type": "object",
    "description": "One group. Its key members depend on group_by: resource: platform, "
    "cloud, resource_type, resource_id, project_id; project: platform, cloud, project_id, "
    "resource_type; resource_type: platform, cloud, resource_type.",
    "required": ["platform", "cloud", "resource_type", "seconds", "resources", "breakdown"],
    "additionalProperties": False,
    "properties": {
        "platform": {"type": "string"},
        "cloud": {"type": "string"},
        "resource_type": {"type": "string"},
        "resource_id": {"type": "string"},
        "project_id": {"type": "string"},
        "seconds": {"type": "number", "minimum": 0},
        "resources": {"type": "integer", "minimum": 1},
        "breakdown": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["state", "size", "seconds"],
                "properties": {
                    "state": {"type": ["string", "null"]},
                    "size": NULLABLE_OBJECT,
                    "seconds": {"type": "number", "exclusiveMinimum": 0},
                },
            },
        },
    },
}

_USAGE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["from", "to", "group_by", "items", "next_marker"],
    "properties": {
        "from": INSTANT,
        "to": INSTANT,
        "group_by": {"enum": ["resource", "project", "resource_type"]},
        **list_of(ref("UsageItem"))["properties"],
    },
}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "additionalProperties": False,
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "additionalProperties": False,
                "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            }
        },
    },
    "CanonicalEvent": _canonical_event(),
    "HistoryEvent": _history_event(),
    "Resource": _RESOURCE_ROW,
    "ResourceList": list_of(ref("Resource")),
    "EventList": list_of(ref("HistoryEvent")),
    "Interval": _INTERVAL,
    "Lifecycle": {
        "type": "object",
        "additionalProperties": False,
        "required": ["intervals"],
        "properties": {"intervals": {"type": "array", "items": ref("Interval")}},
    },
    "UsageItem": _USAGE_ITEM,
    "Usage": _USAGE,
    "Status": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string"}},
    },
}


def query(name: str, schema: dict[str, Any], description: str, *, required: bool = False
          ) -> dict[str, Any]:
    return {
        "name": name, "in": "query", "required": required,
        "schema": schema, "description": description,
    }


def path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


PARAMETERS: dict[str, Any] = {
    "limit": query("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                   "Page size."),
    "marker": query("marker", {"type": "string"},
                    "Opaque: the next_marker of the previous page of the same list."),
    "cloud": query("cloud", {"type": "string"}, "Only this cloud."),
    "project_id": query("project_id", {"type": "string"},
                        "Only this project (a project-scoped reader: only its own)."),
    "resource_type": query("resource_type", {"type": "string"}, "Only this resource type."),
}


def param_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{name}"}


_RESOURCE_PARAMS = [path("platform"), path("cloud"), path("resource_type"), path("resource_id")]
_READ = {"tags": ["queries"]}


_CLOUDS = {
    "type": "object", "additionalProperties": False, "required": ["clouds_file", "items"],
    "properties": {
        "clouds_file": {"type": "boolean", "description": "Whether the API has a clouds file."},
        "items": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["cloud", "in_history", "in_clouds_file", "resources"],
            "properties": {
                "cloud": {"type": "string"},
                "in_history": {"type": "boolean"},
                "in_clouds_file": {"type": ["boolean", "null"],
                                   "description": "null without a clouds file."},
                "resources": {"type": "integer", "description": "Resources of that cloud "
                              "in the history, live or ended."},
            }}},
    },
}


def read_paths() -> dict[str, Any]:
    """The queries, health and metrics (docs/reporting-queries.md)."""
    resource = "/v1/resources/{platform}/{cloud}/{resource_type}/{resource_id}"
    return {
        "/v1/resources": {"get": {
            **_READ,
            "operationId": "listResources",
            "summary": "The inventory, current or as of an instant.",
            "parameters": [
                param_ref("cloud"), param_ref("resource_type"), param_ref("project_id"),
                query("live", {"enum": ["true", "false"]},
                      "Only live (true) or ended (false) resources; absent: both."),
                query("as_of", INSTANT,
                      "What was live at this instant, from the lifecycle; rows carry the "
                      "project, state and size of that instant. Not with live=false."),
                param_ref("limit"), param_ref("marker"),
            ],
            "responses": {"200": json_body(ref("ResourceList"), "A page of resources."),
                          **errors(400, 401, 403), **EXPENSIVE_READ},
        }},
        resource: {"get": {
            **_READ,
            "operationId": "getResource",
            "summary": "The current row of one resource.",
            "parameters": _RESOURCE_PARAMS,
            "responses": {"200": json_body(ref("Resource"), "The row."),
                          **errors(400, 401, 403, 404)},
        }},
        resource + "/events": {"get": {
            **_READ,
            "operationId": "listResourceEvents",
            "summary": "The resource's whole history in fold order (timestamp, receipt order).",
            "parameters": [*_RESOURCE_PARAMS, param_ref("limit"), param_ref("marker")],
            "responses": {"200": json_body(ref("EventList"), "A page of events."),
                          **errors(400, 401, 403, 404), **EXPENSIVE_READ},
        }},
        resource + "/lifecycle": {"get": {
            **_READ,
            "operationId": "getResourceLifecycle",
            "summary": "The intervals [start, end) the resource was live, with what it carried.",
            "parameters": _RESOURCE_PARAMS,
            "responses": {"200": json_body(ref("Lifecycle"), "The lifecycle."),
                          **errors(400, 401, 403, 404)},
        }},
        "/v1/usage": {"get": {
            **_READ,
            "operationId": "getUsage",
            "summary": "Resource-seconds over [from, to), split by state and size.",
            "description": "Every lifecycle interval overlapping the period counts for the "
            "length of the overlap; an open interval counts up to the earlier of `to` and now.",
            "parameters": [
                query("from", INSTANT, "Start of the period (inclusive).", required=True),
                query("to", INSTANT, "End of the period (exclusive), after from.",
                      required=True),
                param_ref("cloud"), param_ref("project_id"),
                query("group_by", {"enum": ["resource", "project", "resource_type"],
                                   "default": "resource"}, "How items are grouped."),
                param_ref("limit"), param_ref("marker"),
            ],
            "responses": {"200": json_body(ref("Usage"), "A page of usage groups."),
                          **errors(400, 401, 403), **EXPENSIVE_READ},
        }},
        "/v1/clouds": {"get": {
            **_READ,
            "operationId": "listClouds",
            "summary": "Every cloud name the history holds, beside the clouds file's.",
            "description": "Roles ingest (the collector checks its cloud here at start), "
            "read and admin; a project reader is 403 (names and counts are cloud-wide). "
            "With a clouds file, ingest refuses events of a cloud it does not name.",
            "responses": {"200": json_body(_CLOUDS, "Every cloud, by name."),
                          **errors(400, 401, 403)},
        }},
        "/healthz": {"get": {
            "tags": ["operations"], "operationId": "healthz", "security": [],
            "summary": "The process answers.",
            "responses": {"200": json_body(ref("Status"), "Up.")},
        }},
        "/readyz": {"get": {
            "tags": ["operations"], "operationId": "readyz", "security": [],
            "summary": "The database answers and its migrations are at head.",
            "responses": {"200": json_body(ref("Status"), "Ready."), **errors(503)},
        }},
        "/metrics": {"get": {
            "tags": ["operations"], "operationId": "metrics", "security": [],
            "summary": "Prometheus metrics of every worker.",
            "responses": {"200": {"description": "Prometheus text exposition.",
                                  "content": {"text/plain": {"schema": {"type": "string"}}}}},
        }},
        "/v1/openapi.json": {"get": {
            "tags": ["operations"], "operationId": "openapi", "security": [],
            "summary": "This document.",
            "responses": {"200": json_body({"type": "object"}, "OpenAPI 3.1.")},
        }},
    }
