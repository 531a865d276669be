"""OpenAPI paths and schemas of the write side and of reconciliation.

Ingest (``reporting/api/events.py``), the dead letter (``rejected.py``), resource
types (``resource_types.py``) and the sync endpoints (``reporting/sync/api.py``),
described from their code.  The shared components live in ``openapi_doc``.
"""

from __future__ import annotations

from typing import Any

from mapping.event import MAX_BATCH
from reporting.api.openapi_doc import (
    INSTANT,
    NULLABLE_INSTANT,
    error,
    errors,
    json_body,
    list_of,
    param_ref,
    path,
    query,
    ref,
)
from reporting.validation import MAX_REASON_LEN

# Row ids are BIGINT.
INT64 = {"type": "integer", "format": "int64", "minimum": -(2**63), "maximum": 2**63 - 1}


def _result(statuses: list[str], id_member: str, id_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [id_member, "status"],
        "properties": {
            id_member: id_schema,
            "event_id": {"type": ["string", "null"]},
            "status": {"enum": statuses},
            "reason": {"type": "string"},
        },
    }


_INGEST_RESULT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["results", "stored", "duplicates", "rejected"],
    "properties": {
        "results": {"type": "array", "items": {
            **_result(["stored", "duplicate", "rejected"], "index",
                      {"type": "integer", "minimum": 0}),
            "required": ["index", "event_id", "status"],
        }},
        "stored": {"type": "integer", "minimum": 0},
        "duplicates": {"type": "integer", "minimum": 0},
        "rejected": {"type": "integer", "minimum": 0},
    },
}

_REJECTED_EVENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "received_at", "cloud", "event_id", "reason", "raw", "replayed_at"],
    "properties": {
        "id": INT64,
        "received_at": INSTANT,
        "cloud": {"type": ["string", "null"]},
        "event_id": {"type": ["string", "null"]},
        "reason": {"type": "string"},
        "raw": {"description": "The item as it was received (any JSON value)."},
        "replayed_at": NULLABLE_INSTANT,
    },
}

_FILE_REQUEST = {
    "type": "object",
    "additionalProperties": False,
    "required": ["items"],
    "properties": {"items": {
        "type": "array", "minItems": 1, "maxItems": MAX_BATCH,
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["key", "raw", "reason"],
            "properties": {
                "key": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,255}$",
                        "description": "The client's key of the item: the same key on "
                        "every retry; a key filed before files nothing."},
                "raw": {"type": "string", "minLength": 1,
                        "description": "The item's text as it was parked."},
                "reason": {"type": "string", "minLength": 1, "maxLength": MAX_REASON_LEN,
                           "pattern": "^[^\\u0000]*$",
                           "description": "Why it was parked (no NUL, no unpaired "
                           "surrogate); stored as 'parked: <reason>'."},
            },
        },
    }},
}

_FILE_RESULT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["results", "filed", "duplicates"],
    "properties": {
        "results": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["index", "key", "id", "status"],
            "properties": {
                "index": {"type": "integer", "minimum": 0},
                "key": {"type": "string"},
                "id": INT64,
                "status": {"enum": ["filed", "duplicate"]},
            },
        }},
        "filed": {"type": "integer", "minimum": 0},
        "duplicates": {"type": "integer", "minimum": 0},
    },
}

_REPLAY_STATUSES = ["stored", "duplicate", "rejected", "not_found", "already_replayed"]
_REPLAY_RESULT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["results", *_REPLAY_STATUSES],
    "properties": {
        "results": {"type": "array",
                    "items": _result(_REPLAY_STATUSES, "id", INT64)},
        **{status: {"type": "integer", "minimum": 0} for status in _REPLAY_STATUSES},
    },
}

_RESOURCE_TYPE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["platform", "resource_type", "size_schema", "updated_at"],
    "properties": {
        "platform": {"type": "string"},
        "resource_type": {"type": "string"},
        "size_schema": {"type": "object",
                        "description": "A JSON Schema; a migration seed carries its marker."},
        "updated_at": INSTANT,
    },
}

_SYNC_RUN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "cloud", "status", "started_at", "completed_at", "stats"],
    "properties": {
        "id": {"type": "string"},
        "cloud": {"type": "string"},
        "status": {"enum": ["running", "completed", "failed"]},
        "kind": {"enum": ["full", "incremental"],
                 "description": "full: every resource listed, the absence pass run; "
                 "incremental: only what changed since the last completed run "
                 "([sync] full_listing_interval_s)."},
        "started_at": INSTANT,
        "completed_at": NULLABLE_INSTANT,
        "stats": {
            "type": "object",
            "description": "created (restated: those of them also restated at the "
            "poll), updated, deleted, deferred (by reason), errors, error_count, "
            "enumerated_types, deletion_window ({since, clamped, deleted_at_poll}: the "
            "instance deletes dated at the poll because the window was clamped), kind, "
            "changed_since and changed_types (an incremental run's lower bound and the "
            "types it listed by change), and in an incremental run unchanged (the "
            "resources of the types it listed whole counted present without a diff).",
        },
    },
}

SCHEMAS: dict[str, Any] = {
    "IngestRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["events"],
        "properties": {"events": {
            "type": "array", "maxItems": MAX_BATCH,
            "items": {"description": "A canonical event; an item that fails the event or "
                      "size schema is rejected and dead-lettered, not refused.",
                      "anyOf": [ref("CanonicalEvent"), {}]},
        }},
    },
    "IngestResult": _INGEST_RESULT,
    "RejectedEvent": _REJECTED_EVENT,
    "RejectedEventList": list_of(ref("RejectedEvent")),
    "ReplayRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["ids"],
        "properties": {"ids": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH,
                               "items": INT64}},
    },
    "ReplayResult": _REPLAY_RESULT,
    "FileRejectedRequest": _FILE_REQUEST,
    "FileRejectedResult": _FILE_RESULT,
    "ResourceType": _RESOURCE_TYPE,
    "ResourceTypeList": list_of(ref("ResourceType")),
    "ResourceTypeRequest": {
        "type": "object",
        "additionalProperties": False,
        "required": ["size_schema"],
        "properties": {"size_schema": {"type": "object"}},
    },
    "SyncRun": _SYNC_RUN,
    "SyncRunList": list_of(ref("SyncRun")),
    "SyncFailed": {
        "type": "object",
        "additionalProperties": False,
        "required": ["error", "run_id"],
        "properties": {"error": {"$ref": "#/components/schemas/Error/properties/error"},
                       "run_id": {"type": "string"}},
    },
}


def _request(schema: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": ref(schema)}}}


_TYPE_PARAMS = [path("platform"), path("resource_type")]


def write_paths() -> dict[str, Any]:
    """Ingest, dead letter and resource types (docs/reporting-api.md)."""
    return {
        "/v1/events": {"post": {
            "tags": ["ingest"], "operationId": "postEvents",
            "summary": "Store a batch of canonical events (role ingest).",
            "description": f"At most {MAX_BATCH} events; one result per item, in order. Dedupe on "
            "event_id; an invalid item is rejected and kept in the dead letter.",
            "requestBody": _request("IngestRequest"),
            "responses": {"200": json_body(ref("IngestResult"), "One result per item."),
                          **errors(400, 401, 403, 413)},
        }},
        "/v1/rejected-events": {"get": {
            "tags": ["dead letter"], "operationId": "listRejectedEvents",
            "summary": "Items ingest refused, oldest first (role read).",
            "parameters": [
                param_ref("cloud"),
                query("since", INSTANT, "Only rows received at or after this instant."),
                query("reason", {"type": "string"}, "Only reasons starting with this."),
                query("replayed", {"enum": ["true", "false"]},
                      "Only rows replayed (true) or not (false)."),
                param_ref("limit"), param_ref("marker"),
            ],
            "responses": {"200": json_body(ref("RejectedEventList"), "A page of rows."),
                          **errors(400, 401, 403)},
        }, "post": {
            "tags": ["dead letter"], "operationId": "fileRejectedEvents",
            "summary": "File items a collector parked into the dead letter (role ingest).",
            "description": f"At most {MAX_BATCH} items, each under the client's key: a key "
            "filed before answers duplicate and files nothing. Answered once committed.",
            "requestBody": _request("FileRejectedRequest"),
            "responses": {"200": json_body(ref("FileRejectedResult"), "One result per item."),
                          **errors(400, 401, 403, 413)},
        }},
        "/v1/rejected-events/replay": {"post": {
            "tags": ["dead letter"], "operationId": "replayRejectedEvents",
            "summary": "Re-validate rows under the current schemas, ingest those that pass "
            "(role admin).",
            "requestBody": _request("ReplayRequest"),
            "responses": {"200": json_body(ref("ReplayResult"), "One result per id."),
                          **errors(400, 401, 403, 413)},
        }},
        "/v1/resource-types": {"get": {
            "tags": ["resource types"], "operationId": "listResourceTypes",
            "summary": "Registered size schemas (role read).",
            "parameters": [param_ref("limit"), param_ref("marker")],
            "responses": {"200": json_body(ref("ResourceTypeList"), "A page of types."),
                          **errors(400, 401, 403)},
        }},
        "/v1/resource-types/{platform}/{resource_type}": {
            "get": {
                "tags": ["resource types"], "operationId": "getResourceType",
                "summary": "One registered size schema (role read).",
                "parameters": _TYPE_PARAMS,
                "responses": {"200": json_body(ref("ResourceType"), "The type."),
                              **errors(400, 401, 403, 404)},
            },
            "put": {
                "tags": ["resource types"], "operationId": "putResourceType",
                "summary": "Register or replace a size schema (role admin).",
                "parameters": _TYPE_PARAMS,
                "requestBody": _request("ResourceTypeRequest"),
                "responses": {"200": json_body(ref("ResourceType"), "Replaced."),
                              "201": json_body(ref("ResourceType"), "Registered."),
                              **errors(400, 401, 403, 413)},
            },
        },
    }


def sync_paths() -> dict[str, Any]:
    """Reconciliation (docs/reconciliation.md)."""
    return {
        "/internal/sync/{cloud}": {"post": {
            "tags": ["reconciliation"], "operationId": "syncCloud",
            "summary": "Run one reconciliation of a cloud, synchronously (role admin).",
            "parameters": [
                path("cloud"),
                query("at", INSTANT, "The told instant (simulated clouds, replays)."),
                query("full", {"type": "boolean"},
                      "A full run whatever [sync] full_listing_interval_s says."),
            ],
            "responses": {
                "200": json_body(ref("SyncRun"), "The completed run."),
                "500": json_body(ref("SyncFailed"),
                                 "The run recorded errors; read them from /v1/sync-runs."),
                "503": error("A simulated cloud's clock (clock_url) did not answer "
                             "(clock_unavailable); no run was booked."),
                "409": error("Another run of the cloud holds its lease (conflict), or the "
                             "cloud is collected but not reconciled: its clouds-file entry "
                             "has no os_cloud (not_reconciled); no run was booked."),
                **errors(400, 401, 403, 404),
            },
        }},
        "/v1/sync-runs": {"get": {
            "tags": ["reconciliation"], "operationId": "listSyncRuns",
            "summary": "Reconciliation runs, newest first (role read).",
            "parameters": [param_ref("cloud"), param_ref("limit"), param_ref("marker")],
            "responses": {"200": json_body(ref("SyncRunList"), "A page of runs."),
                          **errors(400, 401, 403)},
        }},
    }
