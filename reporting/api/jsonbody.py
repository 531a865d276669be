"""Strict JSON request bodies: one clear 400 for anything that is not a JSON object."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from flask import request

from reporting.api.errors import ApiError


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Far deeper than any event (payload.size is at depth 4), shallow enough that no
# recursive walk behind the API (validation, the dead letter's copy) runs out of stack.
MAX_DEPTH = 64


def _too_deep(document: Any) -> bool:
    """True when arrays/objects nest deeper than MAX_DEPTH (iterative, no recursion)."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


# orjson reads an integer beyond 64 bits as a float; a run of 19 digits anywhere
# (inside strings too) sends the body to the standard library, which keeps it exact.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _fast_loads(data: bytes) -> Any:
    """The document, parsed by orjson, or None to let the standard library decide.

    orjson accepts a subset of what the standard-library path accepts, with equal
    values (no NaN/Infinity, no out-of-range number, no lone surrogate, no BOM), so
    anything it refuses is parsed again the slow way for the exact answer and
    message.  A JSON ``null`` document is left to that path as well."""
    if _LONG_NUMBER.search(data) is not None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def json_object() -> dict[str, Any]:
    """The request body as a JSON object (UTF-8, no NaN/Infinity), else ApiError 400.

    Reading the body enforces ``MAX_CONTENT_LENGTH`` (413).
    """
    data = request.get_data(cache=False)
    if not data:
        raise ApiError(400, "bad_request", "the request body is empty; a JSON object is expected")
    document = _fast_loads(data)
    if document is None:
        document = _slow_loads(data)
    if not isinstance(document, dict):
        raise ApiError(400, "bad_request", "the request body must be a JSON object")
    if _too_deep(document):
        raise ApiError(
            400, "bad_request", f"the request body nests deeper than {MAX_DEPTH} levels"
        )
    return document


def _slow_loads(data: bytes) -> Any:
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
    return document
