"""Strict JSON request bodies: one clear 400 for anything that is not a JSON object."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from reporting.api.errors import ApiError


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object() -> dict[str, Any]:
    """The request body as a JSON object (UTF-8, no NaN/Infinity), else ApiError 400.

    Reading the body enforces ``MAX_CONTENT_LENGTH`` (413).
    """
    data = request.get_data(cache=False)
    if not data:
        raise ApiError(400, "bad_request", "the request body is empty; a JSON object is expected")
    try:
        text = data.decode("utf-8")
        document = json.loads(text, parse_constant=_refuse_constant)
        # A literal like 1e999 parses as infinity, which no JSON column can hold; one
        # C-speed pass finds it (cheaper than a Python callback per number).
        json.dumps(document, allow_nan=False)
    except UnicodeDecodeError:
        raise ApiError(400, "bad_request", "the request body is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "bad_request", f"the request body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ApiError(400, "bad_request", "the request body must be a JSON object")
    return document
