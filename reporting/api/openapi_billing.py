"""OpenAPI paths and schemas of billing: price lists, statements, periods
(``reporting/api/price_lists.py``, ``statements.py``, ``periods.py``)."""

from __future__ import annotations

from typing import Any

from reporting.api.openapi_doc import (
    EXPENSIVE_READ,
    INSTANT,
    NULLABLE_INSTANT,
    errors,
    json_body,
    list_of,
    param_ref,
    path,
    query,
    ref,
)

_DECIMAL = {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$",
            "description": "An exact decimal as a string."}
_NULLABLE_DECIMAL = {"type": ["string", "null"], "pattern": r"^-?[0-9]+(\.[0-9]+)?$"}
_PERIOD = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}
_TAGS = {"tags": ["billing"]}


def _object(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": properties}


def _all(properties: dict[str, Any]) -> dict[str, Any]:
    return _object(list(properties), properties)


_RATES_DOC = {
    "type": "object",
    "description": "Per resource type: instance {per: hour, by_flavor, by_resources}, "
    "volume {per: gb_hour, rate, type_modifiers, by_volume_type}, floating_ip {per: hour, rate}, "
    "image {per: gb_hour, rate}, loadbalancer {per: hour, rate, listener, pool}; any other "
    "registered resource type {per: hour | <size>_hour, size, rate} (a sized type). "
    "Volume, floating_ip, image and sized entries may give mode (graduated | volume) and "
    "tiers [{up_to, rate}] (ascending up_to, the last null) instead of rate, and an "
    "instance flavor {mode, tiers} instead of its rate. A volume's by_volume_type gives a "
    "volume type its own rate or {mode, tiers} (each such type its own tier group; not "
    "with a type_modifiers entry for the same type), rate and tiers then optional.",
}

# A tier line's members; ``volume_type`` (after ``flavor``) only on a volume type's.
_TIER_LINE: dict[str, Any] = {
    "resource_type": {"type": "string"}, "price_list_version": {"type": "string"},
    "flavor": {"type": ["string", "null"]}, "mode": {"enum": ["graduated", "volume"]},
    "quantity": _DECIMAL,
    "unit": {"type": ["string", "null"]}, "modified_quantity": _DECIMAL, "rate": _DECIMAL,
    "tiers": {"type": "array", "items": _all({
        "up_to": _NULLABLE_DECIMAL, "rate": _DECIMAL, "quantity": _DECIMAL})},
    "amount_at_rate_unrounded": _DECIMAL, "amount_tiered_unrounded": _DECIMAL,
    "amount_unrounded": _DECIMAL, "amount": _DECIMAL,
}
_TIER_LINE_REQUIRED = list(_TIER_LINE)

SCHEMAS: dict[str, Any] = {
    "PriceListDocument": {
        "type": "object",
        "required": ["effective_from", "currency", "rates"],
        "properties": {
            "effective_from": INSTANT,
            "currency": {"type": "string", "pattern": "^[A-Z]{3}$",
                         "description": "An ISO 4217 code with a minor unit (EUR, JPY, KWD); "
                         "amounts are rounded to its minor unit."},
            "zero_rated_projects": {"type": "array", "items": {
                "type": "string", "pattern": "^[^\\u0000]*$",
                "description": "A project id (no NUL, no unpaired surrogate)."}},
            "rates": _RATES_DOC,
            "state_modifiers": {"type": "object"},
            "project_terms": {
                "type": "object",
                "description": "Per project, its dated terms (no overlap): "
                "[{from, until, discount_percent, rates}]; carried forward from the version "
                "before when omitted, {} clears them.",
                "additionalProperties": {"type": "array", "items": {"type": "object"}}},
            "account_terms": {
                "type": "object",
                "description": "Per billing account, its dated rates (no overlap): "
                "[{from, until, rates}], pricing each project for the time a membership "
                "puts it in the account (a project's own override of a type beats its "
                "account's); carried forward from the version before when omitted, {} "
                "clears them.",
                "additionalProperties": {"type": "array", "items": {"type": "object"}}},
        },
    },
    "PriceListVersion": _all({
        "version": {"type": "string"}, "number": {"type": "integer", "minimum": 1},
        "effective_from": INSTANT, "currency": {"type": "string"},
        "created_at": INSTANT,
        "created_by": {"type": ["string", "null"],
                       "description": "who added the version; null for a project reader"},
        "document": {"type": "object"},
    }),
    "StatementLine": _all({
        "resource_type": {"type": "string"}, "resource_id": {"type": "string"},
        "state": {"type": ["string", "null"]}, "size": {"type": ["object", "null"]},
        "start": INSTANT, "end": INSTANT, "event_id": {"type": "string"},
        "price_list_version": {"type": ["string", "null"]},
        "quantity": _DECIMAL, "unit": {"type": ["string", "null"]},
        "rate": _NULLABLE_DECIMAL, "modifier": _NULLABLE_DECIMAL,
        "zero_rated": {"type": "boolean"},
        "amount_unrounded": _NULLABLE_DECIMAL, "amount": _NULLABLE_DECIMAL,
        "unrated": {"type": ["string", "null"]},
    }),
    "Adjustment": _all({
        "period": _PERIOD, "resource_type": {"type": "string"},
        "resource_id": {"type": "string"}, "amount": _DECIMAL,
        "event_ids": {"type": "array", "items": {"type": "string"}},
    }),
    "TierLine": _object(_TIER_LINE_REQUIRED, {
        **{name: _TIER_LINE[name] for name in ("resource_type", "price_list_version",
                                               "flavor")},
        # only on a volume type's tier line (rates.volume.by_volume_type)
        "volume_type": {"type": "string", "description": (
            "the volume type whose own tiers this line prices (rates.volume.by_volume_type); "
            "absent on every other tier line")},
        **{name: _TIER_LINE[name] for name in _TIER_LINE_REQUIRED[3:]},
    }),
    "Statement": _object([
        "cloud", "project_id", "period", "currency", "status", "provisional", "computed_at",
        "lines", "adjustments", "subtotal", "adjustments_total", "total", "unrated_lines"], {
        "cloud": {"type": "string"}, "project_id": {"type": "string"}, "period": _PERIOD,
        "currency": {"type": ["string", "null"]}, "status": {"enum": ["open", "closed"]},
        "provisional": {"type": "boolean"}, "computed_at": INSTANT,
        "lines": {"type": "array", "items": ref("StatementLine")},
        # only when a price list version priced some of the lines with tiers
        "tiers": {"type": "array", "items": ref("TierLine"), "description": (
            "one tier line per (version, type, and flavor or volume type with tiers of "
            "its own) priced with tiers (docs/statements.md, "
            "Tiers); absent when there is none")},
        "adjustments": {"type": "array", "items": ref("Adjustment")},
        "subtotal": _DECIMAL, "adjustments_total": _DECIMAL, "total": _DECIMAL,
        "unrated_lines": {"type": "integer", "minimum": 0},
    }),
    "StatementSummary": _all({
        "project_id": {"type": "string"}, "subtotal": _DECIMAL,
        "adjustments_total": _DECIMAL, "total": _DECIMAL,
        "unrated_lines": {"type": "integer", "minimum": 0},
        "number": {"type": ["integer", "null"], "minimum": 1, "description": (
            "the closed statement's number in its cloud (gapless, never reused); "
            "null while the period is open")},
    }),
    "Period": _all({
        "cloud": {"type": "string"}, "period": _PERIOD,
        "status": {"enum": ["open", "closed"]}, "ended": {"type": "boolean"},
        "closed_at": NULLABLE_INSTANT,
        "closed_by": {"type": ["string", "null"],
                      "description": "who closed it; null while open, and for a project reader"},
        "cutoff_seq": {"type": ["integer", "null"]},
        "cutoff_received_at": NULLABLE_INSTANT,
        "accepted_unrated_lines": {
            "type": ["integer", "null"], "minimum": 1,
            "description": "the unrated lines closed_by accepted freezing unbilled; null: none"},
        "accepted_partial_history_from": {
            **NULLABLE_INSTANT,
            "description": "the cloud's first observation, inside the period, closed_by "
            "accepted billing from; null: the history began before the period"},
    }),
    "CloseAcceptance": {
        "type": "object", "additionalProperties": False,
        "description": "What the close accepts explicitly (no body: nothing).",
        "properties": {
            "accept_unrated_lines": {"type": "boolean", "description": (
                "close although lines are unrated (they are then never billed)")},
            "accept_partial_history": {"type": "boolean", "description": (
                "close although the cloud's history began inside the period")},
        },
    },
}

_SUMMARIES = {**list_of(ref("StatementSummary"))}
_SUMMARIES["required"] = ["cloud", "period", "items", "next_marker"]
_SUMMARIES["properties"] = {"cloud": {"type": "string"}, "period": _PERIOD,
                            **_SUMMARIES["properties"]}
_VERSIONS = {**list_of(ref("PriceListVersion"))}
_VERSIONS["required"] = ["name", "items", "next_marker"]
_VERSIONS["properties"] = {"name": {"type": "string"}, **_VERSIONS["properties"]}
SCHEMAS["StatementSummaries"] = _SUMMARIES
SCHEMAS["PriceListVersions"] = _VERSIONS
_CSV = {"text/csv": {"schema": {"type": "string"}}}


def billing_paths() -> dict[str, Any]:
    return {
        "/v1/price-lists/{cloud}": {
            "get": {
                **_TAGS, "operationId": "listPriceListVersions",
                "summary": "The versions of a price list (role read or project_reader: prices are "
                "cloud-wide); `default` prices "
                "every cloud without a list of its own.",
                "parameters": [path("cloud"), param_ref("limit"), param_ref("marker")],
                "responses": {"200": json_body(ref("PriceListVersions"), "The versions."),
                              **errors(400, 401, 403)},
            },
            "put": {
                **_TAGS, "operationId": "putPriceListVersion",
                "summary": "Add a version (role admin); versions are never edited.",
                "parameters": [path("cloud")],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": ref("PriceListDocument")}}},
                "responses": {"201": json_body(ref("PriceListVersion"), "Added."),
                              **errors(400, 401, 403, 409, 413)},
            },
        },
        "/v1/statements": {"get": {
            **_TAGS, "operationId": "getStatements",
            "summary": "A project's statement of a period, or the per-project summaries "
            "(role read; a project_reader reads its own project's only); Accept: text/csv "
            "answers CSV; a period that has not started, or an open one wholly before "
            "the cloud's first observation (`before_history`), is 409.",
            "parameters": [
                query("cloud", {"type": "string"}, "The cloud.", required=True),
                query("period", _PERIOD, "The month, YYYY-MM (UTC).", required=True),
                query("project_id", {"type": "string"},
                      "The project; without it, the summaries of every project (of the "
                      "caller's project for a project_reader; another project is 403)."),
                param_ref("limit"), param_ref("marker"),
            ],
            "responses": {
                "200": {"description": "A statement, or a page of summaries.", "content": {
                    "application/json": {"schema": {"oneOf": [
                        ref("Statement"), ref("StatementSummaries")]}},
                    **_CSV}},
                **errors(400, 401, 403, 409), **EXPENSIVE_READ,
            },
        }},
        "/v1/periods/{cloud}": {"get": {
            **_TAGS, "operationId": "listPeriods",
            "summary": "The cloud's periods with status, closing instant, who closed it "
            "and the ingestion cutoff (role read or project_reader: periods are "
            "cloud-wide), newest first.",
            "parameters": [path("cloud"), param_ref("limit"), param_ref("marker")],
            "responses": {"200": json_body(list_of(ref("Period")), "A page of periods."),
                          **errors(400, 401, 403)},
        }},
        "/v1/periods/{cloud}/{period}/close": {"post": {
            **_TAGS, "operationId": "closePeriod",
            "summary": "Freeze every project's statement of the period (role admin); "
            "closing again changes nothing; a cloud Tally knows nothing of is 404; 409 "
            "`unrated_lines` or `partial_history` unless the body accepts it, "
            "`before_history` for a period wholly before the cloud's first observation.",
            "parameters": [path("cloud"), path("period")],
            "requestBody": {"required": False, "content": {"application/json": {
                "schema": ref("CloseAcceptance")}}},
            "responses": {"200": json_body(ref("Period"), "Closed."),
                          **errors(400, 401, 403, 404, 409)},
        }},
    }
