"""``GET /v1/openapi.json``: the OpenAPI 3.1 document of the whole API (no auth).

Assembled from ``reporting.api.openapi_doc`` (shared components, queries, health)
and the write side's and reconciliation's paths.  Kept true by the tests.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from flask import Blueprint

from reporting.api import (
    openapi_accounts,
    openapi_billing,
    openapi_doc,
    openapi_handoff,
    openapi_write,
)

bp = Blueprint("openapi", __name__)

SECURITY_SCHEMES: dict[str, Any] = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "auth_strategy=token: a token of [api] tokens_file.",
    },
    "keystone": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Auth-Token",
        "description": "auth_strategy=keystone: a keystone token; roles mapped by "
        "[api] keystone_role_map within the token's scope: admin, read and ingest need "
        "a system-scoped token (or one of [api] keystone_admin_project_ids); scoped to "
        "another project a token reads that project at most; a domain scope grants "
        "nothing.",
    },
}


@functools.cache
def _document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    paths.update(openapi_doc.read_paths())
    paths.update(openapi_write.write_paths())
    paths.update(openapi_write.sync_paths())
    paths.update(openapi_billing.billing_paths())
    paths.update(openapi_accounts.account_paths())
    paths.update(openapi_handoff.handoff_paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Tally Reporting API",
            "version": "1.0.0",
            "description": "The usage history of OpenStack clouds: ingest, inventory, "
            "history, lifecycle, usage, reconciliation. Errors are "
            '{"error": {"code", "message"}}; times are RFC 3339 UTC.',
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}, {"keystone": []}],
        "paths": paths,
        "components": {
            "schemas": {**openapi_doc.SCHEMAS, **openapi_write.SCHEMAS,
                        **openapi_billing.SCHEMAS, **openapi_accounts.SCHEMAS,
                        **openapi_handoff.SCHEMAS},
            "parameters": openapi_doc.PARAMETERS,
            "securitySchemes": SECURITY_SCHEMES,
        },
    }


def document() -> dict[str, Any]:
    """A copy of the document (callers may modify it)."""
    return copy.deepcopy(_document())


@bp.get("/v1/openapi.json")
def openapi_json() -> dict[str, Any]:
    return _document()
