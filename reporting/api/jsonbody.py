"""Strict JSON request bodies: one clear 400 for anything that is not a JSON object."""

from __future__ import annotations

import json
import math
from typing import Any

from flask import request

from reporting.api.errors import ApiError


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(literal: str) -> float:
    # A literal like 1e999 reads as infinity, which no JSON column can hold.  Events
    # carry few fractional numbers, so this call costs less than a second pass.
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"{literal} is out of range")
    return value


# Far deeper than any event (payload.size is at depth 4), shallow enough that no
# recursive walk behind the API (validation, the dead letter's copy) runs out of stack.
MAX_DEPTH = 64


def too_deep(document: Any) -> bool:
    """True when arrays/objects nest deeper than MAX_DEPTH (level by level, no
    recursion; only containers are carried to the next level)."""
    level = [document] if isinstance(document, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        below = []
        for value in level:
            for child in value.values() if isinstance(value, dict) else value:
                if isinstance(child, (dict, list)):
                    below.append(child)
        level = below
    return False


def json_object() -> dict[str, Any]:
    """The request body as a JSON object (UTF-8, no NaN/Infinity), else ApiError 400.

    Reading the body enforces ``MAX_CONTENT_LENGTH`` (413).
    """
    data = request.get_data(cache=False)
    if not data:
        raise ApiError(400, "bad_request", "the request body is empty; a JSON object is expected")
    document = parse(data)
    if not isinstance(document, dict):
        raise ApiError(400, "bad_request", "the request body must be a JSON object")
    if too_deep(document):
        raise ApiError(
            400, "bad_request", f"the request body nests deeper than {MAX_DEPTH} levels"
        )
    return document


def strict_loads(text: str) -> Any:
    """The JSON document in ``text``, by the body's rules (no NaN, no Infinity, no
    number out of range); ValueError or RecursionError otherwise."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def parse(data: bytes) -> Any:
    """The JSON document in ``data``, else ApiError 400."""
    try:
        text = data.decode("utf-8")
        document = strict_loads(text)
    except UnicodeDecodeError:
        raise ApiError(400, "bad_request", "the request body is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "bad_request", f"the request body is not valid JSON: {exc}") from None
    return document


def batch_of(body: dict[str, Any], member: str, *, limit: int, what: str = "") -> list[Any]:
    """The body's one member ``member``, a non-empty array of at most ``limit``
    entries: 400 otherwise (413 ``too_many_<member>`` past the limit)."""
    unknown = sorted(set(body) - {member})
    if unknown:
        raise ApiError(400, "bad_request", f"unknown member(s) in the body: {', '.join(unknown)}")
    entries = body.get(member)
    if not isinstance(entries, list) or not entries:
        raise ApiError(400, "bad_request", f"the body must hold a non-empty {member!r} array{what}")
    if len(entries) > limit:
        raise ApiError(413, f"too_many_{member}",
                       f"{len(entries)} {member} in one request; at most {limit}")
    return entries
