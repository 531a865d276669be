"""OpenAPI paths and schemas of billing accounts (``reporting/api/accounts.py``,
``reporting/api/account_summaries.py``)."""

from __future__ import annotations

from typing import Any

from reporting.api.openapi_doc import (
    EXPENSIVE_READ,
    INSTANT,
    errors,
    json_body,
    list_of,
    param_ref,
    path,
    query,
    ref,
)
from reporting.billing.manual_lines import LINE_MAX

_DECIMAL = {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"}
_PERIOD = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}
_TAGS = {"tags": ["billing"]}
_CSV = {"text/csv": {"schema": {"type": "string"}}}


def _all(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


_ACCOUNT = {"account_id": {"type": "string"}, "description": {"type": "string"},
            "created_at": INSTANT, "created_by": {"type": "string"}}
_MEMBERSHIP = {"account_id": {"type": "string"}, "cloud": {"type": "string"},
               "project_id": {"type": "string"}, "number": {"type": "integer", "minimum": 1},
               "effective_from": INSTANT, "created_at": INSTANT,
               "created_by": {"type": "string"}}
_TOTALS = {"subtotal": _DECIMAL, "adjustments_total": _DECIMAL, "total": _DECIMAL,
           "unrated_lines": {"type": "integer", "minimum": 0}}
_OPTIONAL_TEXT = {"type": ["string", "null"]}
_NUMBER = {"type": "integer", "minimum": 1, "maximum": LINE_MAX}
# A credit or charge as a statement shows it: ``amount`` signed (a credit negative).
_LINE = {"line": _NUMBER, "cloud": {"type": "string"}, "period": _PERIOD,
         "project_id": _OPTIONAL_TEXT, "kind": {"enum": ["credit", "charge"]},
         "amount": _DECIMAL, "currency": {"type": "string"}, "reason": {"type": "string"},
         "effective_at": INSTANT, "reverses": {**_NUMBER, "type": ["integer", "null"]},
         "created_at": INSTANT, "created_by": {"type": "string"}}
_AMOUNT = {"type": "string", "pattern": r"^[0-9]{1,18}(\.[0-9]{1,18})?$"}
# A percent as answered: 0 to 100, at most two decimals, no trailing zeros.
_PERCENT = {"type": "string", "pattern": r"^(100|[0-9]{1,2}(\.[0-9]{1,2})?)$"}

_SECTION: dict[str, Any] = {
    "cloud": {"type": "string"}, "project_id": {"type": "string"},
    "membership": {"type": "integer", "minimum": 1}, "from": INSTANT, "to": INSTANT,
    "status": {"enum": ["open", "closed"]}, "currency": {"type": ["string", "null"]},
    "lines": {"type": "array", "items": ref("StatementLine")},
    "adjustments": {"type": "array", "items": ref("Adjustment")}, **_TOTALS}

_STATEMENT: dict[str, Any] = {
    "account_id": {"type": "string"}, "period": _PERIOD,
    "status": {"enum": ["open", "closed"]}, "provisional": {"type": "boolean"},
    "computed_at": INSTANT,
    "projects": {"type": "array", "items": ref("AccountSection")},
    "manual_lines": {"type": "array", "items": ref("AccountStatementLine")},
    "totals": {"type": "array", "items": ref("AccountTotal")}}

_NOT_BILLABLE = {"type": "array", "minItems": 1,
                 "items": _all({"cloud": {"type": "string"}, "reason": {"type": "string"}})}
# A section of an account summary: the statement's section without its lines.
_SUMMARY_SECTION = {name: value for name, value in _SECTION.items()
                    if name not in ("lines", "adjustments")}
_SUMMARY: dict[str, Any] = {
    **{name: _STATEMENT[name] for name in (
        "account_id", "period", "status", "provisional", "computed_at")},
    "sections": {"type": "array", "items": ref("AccountSummarySection")},
    "totals": _STATEMENT["totals"]}

SCHEMAS: dict[str, Any] = {
    "Account": _all(_ACCOUNT),
    "AccountWithMemberships": _all({**_ACCOUNT, "memberships": {
        "type": "array", "items": ref("AccountMembership")}}),
    "AccountMembership": _all(_MEMBERSHIP),
    "AccountDocument": {
        "type": "object", "additionalProperties": False, "required": ["account_id"],
        "properties": {"account_id": {"type": "string",
                                      "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"},
                       "description": {"type": "string"}}},
    "MembershipDocument": {
        "type": "object", "additionalProperties": False,
        "required": ["cloud", "project_id", "effective_from"],
        "properties": {"cloud": {"type": "string"}, "project_id": {"type": "string"},
                       "effective_from": INSTANT}},
    # the project's tier lines ("tiers") on the section starting at the period's start
    # only; "number", its closed statement's, on a section of a closed period only
    "AccountSection": {**_all(_SECTION), "properties": {
        **_SECTION, "tiers": {"type": "array", "items": ref("TierLine")},
        "number": _NUMBER}},
    # not_billable: only when the period of some cloud of its members is not billable
    "AccountStatement": {**_all(_STATEMENT), "properties": {
        **_STATEMENT, "not_billable": _NOT_BILLABLE}},
    "AccountTotal": {
        **_all({"currency": {"type": ["string", "null"]}, **_TOTALS,
                "manual_total": _DECIMAL}),
        # discount: on every total while a discount is in force; commitment: only
        # on the total of the currency of the commitment in force.
        "properties": {"currency": {"type": ["string", "null"]}, **_TOTALS,
                       "discount": ref("AppliedDiscount"),
                       "manual_total": _DECIMAL,
                       "commitment": ref("AppliedCommitment")}},
    # a section's number: only on a section of a closed period
    "AccountSummarySection": {**_all(_SUMMARY_SECTION), "properties": {
        **_SUMMARY_SECTION, "number": _NUMBER}},
    "AccountSummary": {**_all(_SUMMARY), "properties": {
        **_SUMMARY, "not_billable": _NOT_BILLABLE}},
    "AppliedDiscount": _all({"effective_from": INSTANT, "percent": _PERCENT,
                             "amount": _DECIMAL}),
    "AccountDiscount": _all({"account_id": {"type": "string"}, "effective_from": INSTANT,
                             "percent": _PERCENT, "reason": {"type": "string"},
                             "created_at": INSTANT, "created_by": {"type": "string"}}),
    "DiscountDocument": {
        "type": "object", "additionalProperties": False,
        "required": ["effective_from", "percent", "reason"],
        "properties": {"effective_from": INSTANT, "percent": _AMOUNT,
                       "reason": {"type": "string", "minLength": 1, "maxLength": 1000}}},
    "AppliedCommitment": _all({"effective_from": INSTANT, "minimum": _DECIMAL,
                               "shortfall": _DECIMAL}),
    "AccountCommitment": _all({"account_id": {"type": "string"}, "effective_from": INSTANT,
                               "currency": {"type": "string"}, "minimum": _DECIMAL,
                               "created_at": INSTANT, "created_by": {"type": "string"}}),
    "CommitmentDocument": {
        "type": "object", "additionalProperties": False,
        "required": ["effective_from", "currency", "minimum"],
        "properties": {"effective_from": INSTANT,
                       "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                       "minimum": _AMOUNT}},
    "AccountStatementLine": _all(_LINE),
    "AccountLine": _all({"account_id": {"type": "string"}, **_LINE,
                         "reversed_by": {"type": ["integer", "null"], "minimum": 1}}),
    "AccountLineDocument": {"oneOf": [
        {"type": "object", "additionalProperties": False,
         "required": ["kind", "cloud", "period", "amount", "reason", "effective_at"],
         "properties": {"kind": {"enum": ["credit", "charge"]}, "cloud": {"type": "string"},
                        "period": _PERIOD, "project_id": {"type": "string"},
                        "amount": _AMOUNT, "reason": {"type": "string"},
                        "effective_at": INSTANT}},
        {"type": "object", "additionalProperties": False, "required": ["reverses", "reason"],
         "properties": {"reverses": _NUMBER, "reason": {"type": "string"},
                        "period": _PERIOD, "effective_at": INSTANT}}]},
}
SCHEMAS["Accounts"] = list_of(ref("Account"))
SCHEMAS["AccountSummaries"] = list_of(ref("AccountSummary"))
SCHEMAS["AccountLines"] = list_of(ref("AccountLine"))
SCHEMAS["AccountCommitments"] = list_of(ref("AccountCommitment"))
SCHEMAS["AccountDiscounts"] = list_of(ref("AccountDiscount"))


def account_paths() -> dict[str, Any]:
    return {
        "/v1/accounts": {
            "get": {**_TAGS, "operationId": "listAccounts",
                    "summary": "The billing accounts, by id (role read; an account_reader "
                               "gets its own).",
                    "parameters": [param_ref("limit"), param_ref("marker")],
                    "responses": {"200": json_body(ref("Accounts"), "A page of accounts."),
                                  **errors(400, 401, 403)}},
            "post": {**_TAGS, "operationId": "addAccount",
                     "summary": "Add an account (role admin); accounts are never edited.",
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": ref("AccountDocument")}}},
                     "responses": {"201": json_body(ref("Account"), "Added."),
                                   **errors(400, 401, 403, 409, 413)}},
        },
        "/v1/account-summaries": {"get": {
            **_TAGS, "operationId": "listAccountSummaries",
            "summary": "Every account's summary of a period, by account id: its "
            "statement's totals per currency and its sections without their lines (role "
            "read; an account_reader gets its own); Accept: text/csv answers CSV, the "
            "next marker in X-Next-Marker; a period that has not started is 409.",
            "parameters": [query("period", _PERIOD, "The month, YYYY-MM (UTC).",
                                 required=True),
                           param_ref("limit"), param_ref("marker")],
            "responses": {"200": {"description": "A page of summaries.", "content": {
                "application/json": {"schema": ref("AccountSummaries")}, **_CSV}},
                **errors(400, 401, 403, 409), **EXPENSIVE_READ}}},
        "/v1/accounts/{account_id}": {"get": {
            **_TAGS, "operationId": "getAccount",
            "summary": "An account and every membership naming it (role read, or "
                       "account_reader of it).",
            "parameters": [path("account_id")],
            "responses": {"200": json_body(ref("AccountWithMemberships"), "The account."),
                          **errors(400, 401, 403, 404)}}},
        "/v1/accounts/{account_id}/memberships": {"post": {
            **_TAGS, "operationId": "addAccountMembership",
            "summary": "Put a cloud's project in the account from an instant on (role "
            "admin); 409 for an instant already taken by the project's memberships or "
            "one that would change a closed period.",
            "parameters": [path("account_id")],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": ref("MembershipDocument")}}},
            "responses": {"201": json_body(ref("AccountMembership"), "Added."),
                          **errors(400, 401, 403, 404, 409, 413)}}},
        "/v1/accounts/{account_id}/statement": {"get": {
            **_TAGS, "operationId": "getAccountStatement",
            "summary": "The account's statement of a period: a section per stretch of "
            "the period a project belonged to it (role read, or account_reader of it); "
            "Accept: text/csv answers "
            "CSV; a period that has not started is 409.",
            "parameters": [path("account_id"),
                           query("period", _PERIOD, "The month, YYYY-MM (UTC).",
                                 required=True)],
            "responses": {"200": {"description": "The statement.", "content": {
                "application/json": {"schema": ref("AccountStatement")}, **_CSV}},
                **errors(400, 401, 403, 404, 409)}}},
        "/v1/accounts/{account_id}/lines": {
            "get": {**_TAGS, "operationId": "listAccountLines",
                    "summary": "The credits and charges booked on the account by hand, by "
                    "number, each with the line reversing it (role read, or "
                    "account_reader of it).",
                    "parameters": [path("account_id"),
                                   query("cloud", {"type": "string"}, "Only this cloud's."),
                                   query("period", _PERIOD, "Only this period's."),
                                   param_ref("limit"), param_ref("marker")],
                    "responses": {"200": json_body(ref("AccountLines"), "A page of lines."),
                                  **errors(400, 401, 403, 404)}},
            "post": {**_TAGS, "operationId": "addAccountLine",
                     "summary": "Book a credit or charge on the account's open period of a "
                     "cloud, or reverse a line (role admin); lines are never edited or "
                     "removed. 409 for a closed or unbillable period, a line reversed "
                     "already or a reversal's reversal.",
                     "parameters": [path("account_id")],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": ref("AccountLineDocument")}}},
                     "responses": {"201": json_body(ref("AccountLine"), "Booked."),
                                   **errors(400, 401, 403, 404, 409, 413)}},
        },
        "/v1/accounts/{account_id}/commitments": {
            "get": {**_TAGS, "operationId": "listAccountCommitments",
                    "summary": "The account's minimum commitments, by effective_from (role "
                    "read, or account_reader of it).",
                    "parameters": [path("account_id"), param_ref("limit"),
                                   param_ref("marker")],
                    "responses": {"200": json_body(ref("AccountCommitments"),
                                                   "A page of commitments."),
                                  **errors(400, 401, 403, 404)}},
            "post": {**_TAGS, "operationId": "addAccountCommitment",
                     "summary": "Add a minimum commitment from a month's start on (role "
                     "admin); it replaces the one before from its instant on, a minimum of "
                     "0 ends it; commitments are never edited or removed. 409 for an "
                     "instant taken or one that would change a closed account statement.",
                     "parameters": [path("account_id")],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": ref("CommitmentDocument")}}},
                     "responses": {"201": json_body(ref("AccountCommitment"), "Added."),
                                   **errors(400, 401, 403, 404, 409, 413)}},
        },
        "/v1/accounts/{account_id}/discounts": {
            "get": {**_TAGS, "operationId": "listAccountDiscounts",
                    "summary": "The account's percentage discounts, by effective_from (role "
                    "read, or account_reader of it).",
                    "parameters": [path("account_id"), param_ref("limit"),
                                   param_ref("marker")],
                    "responses": {"200": json_body(ref("AccountDiscounts"),
                                                   "A page of discounts."),
                                  **errors(400, 401, 403, 404)}},
            "post": {**_TAGS, "operationId": "addAccountDiscount",
                     "summary": "Add a percentage discount of the account's usage from a "
                     "month's start on, with its reason (role admin); it replaces the one "
                     "before from its instant on, a percent of 0 ends it; discounts are "
                     "never edited or removed. 409 for an instant taken or one that would "
                     "change a closed account statement.",
                     "parameters": [path("account_id")],
                     "requestBody": {"required": True, "content": {"application/json": {
                         "schema": ref("DiscountDocument")}}},
                     "responses": {"201": json_body(ref("AccountDiscount"), "Added."),
                                   **errors(400, 401, 403, 404, 409, 413)}},
        },
    }
