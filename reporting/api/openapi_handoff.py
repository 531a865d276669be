"""OpenAPI paths and schemas of the hand-off on close: a period's webhook deliveries
and its export (``reporting/api/handoff.py``)."""

from __future__ import annotations

from typing import Any

from reporting.api.openapi_doc import INSTANT, NULLABLE_INSTANT, errors, json_body, path, query, ref

_TAGS = {"tags": ["billing"]}
_PERIOD = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}


def _all(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


SCHEMAS: dict[str, Any] = {
    "WebhookAttempt": _all({
        "number": {"type": "integer", "minimum": 1}, "attempted_at": INSTANT,
        "status_code": {"type": ["integer", "null"],
                        "description": "The HTTP status answered; null when none came."},
        "error": {"type": ["string", "null"],
                  "description": "Why the attempt failed (null: a 2xx)."}}),
    "WebhookDelivery": _all({
        "id": {"type": "integer", "description": "Sent as X-Tally-Delivery."},
        "cloud": {"type": "string"}, "period": _PERIOD,
        "event": {"type": "string", "enum": ["period.closed"]},
        "status": {"type": "string", "enum": ["pending", "delivered", "failed"]},
        "created_at": INSTANT,
        "next_attempt_at": {**NULLABLE_INSTANT,
                            "description": "When it is attempted next (pending only)."},
        "delivered_at": NULLABLE_INSTANT,
        "attempts": {"type": "array", "items": ref("WebhookAttempt")}}),
    "WebhookDeliveries": _all({
        "cloud": {"type": "string"}, "period": _PERIOD,
        "items": {"type": "array", "items": ref("WebhookDelivery")},
        "next_marker": {"type": "null"}}),
    "PeriodExport": _all({
        "cloud": {"type": "string"}, "period": _PERIOD, "closed_at": INSTANT,
        "closed_by": {"type": "string"}, "cutoff_seq": {"type": "integer"},
        "currency": {"type": ["string", "null"]},
        "statements": {"type": "array", "items": _all({
            "number": {"type": ["integer", "null"]}, "statement": ref("Statement")})}}),
}


def handoff_paths() -> dict[str, Any]:
    return {
        "/v1/periods/{cloud}/{period}/deliveries": {"get": {
            **_TAGS, "operationId": "listWebhookDeliveries",
            "summary": "The period's webhook deliveries (period.closed), oldest first, each "
            "with every attempt (role admin); a cloud Tally knows nothing of is 404.",
            "parameters": [path("cloud"), path("period")],
            "responses": {"200": json_body(ref("WebhookDeliveries"), "The deliveries."),
                          **errors(400, 401, 403, 404)},
        }},
        "/v1/periods/{cloud}/{period}/deliveries/{delivery_id}/redeliver": {"post": {
            **_TAGS, "operationId": "redeliverWebhook",
            "summary": "Post a delivery again, whatever its status: due now, for a new round "
            "of [handoff] max_attempts (role admin); 404 for a delivery the period does not "
            "have, 409 while a worker is posting it.",
            "parameters": [path("cloud"), path("period"), path("delivery_id")],
            "responses": {"200": json_body(ref("WebhookDelivery"), "Due now."),
                          **errors(400, 401, 403, 404, 409)},
        }},
        "/v1/periods/{cloud}/{period}/export": {"get": {
            **_TAGS, "operationId": "exportPeriod",
            "summary": "Every closed statement of a closed period with its number and "
            "lines, from the frozen rows: the same bytes every time (role read); 409 "
            "`period_open` for an open period, 404 for a cloud Tally knows nothing of.",
            "parameters": [path("cloud"), path("period"),
                           query("format", {"type": "string", "enum": ["json", "csv"],
                                            "default": "json"},
                                 "json: the statements' texts; csv: one row per line, "
                                 "adjustment and statement, with its number.")],
            "responses": {
                "200": {"description": "The export.", "content": {
                    "application/json": {"schema": ref("PeriodExport")},
                    "text/csv": {"schema": {"type": "string"}}}},
                **errors(400, 401, 403, 404, 409)},
        }},
    }
