"""Strict JSON request bodies: one clear 400 for anything that is not a JSON object."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
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
    recursion; only containers are carried to the next level).  A parsed body holds
    plain dicts and lists, so an exact type test is enough."""
    level = [document] if type(document) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        level = [child for value in level
                 for child in (value.values() if type(value) is dict else value)
                 if type(child) in _CONTAINERS]
    return False


_CONTAINERS = frozenset((dict, list))


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


# An integer of 19 digits or more may lie beyond 64 bits, which orjson reads as a
# float: a body holding such a run of digits is read by the standard library.  The
# body with every digit made "0" and every other byte a space, searched for 19
# zeros: two passes at C speed (a regular expression takes twenty times longer).
_DIGITS = bytes(ord("0") if chr(byte).isdigit() and byte < 128 else ord(" ")
                for byte in range(256))
_LONG_DIGITS = b"0" * 19


def parse(data: bytes) -> Any:
    """The JSON document in ``data``, else ApiError 400.

    orjson reads what it can read exactly as the standard library would (a test
    compares the two); whatever it refuses (NaN, a number out of range, a lone
    surrogate, bad UTF-8, deep nesting) is decided, and its error worded, by the
    standard library with the finite-number check."""
    if _LONG_DIGITS not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return _parse_stdlib(data)


def _parse_stdlib(data: bytes) -> Any:
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
