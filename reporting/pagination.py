"""Keyset pagination of the Reporting API (docs/reporting-queries.md).

A list answers ``{"items": [...], "next_marker": "…" | null}``.  The marker is
opaque to clients: URL-safe base64 (no padding) of a small JSON document holding
the sort key of the last item served and a tag naming the list it belongs to.  A
marker that does not decode to exactly that shape (tampered, truncated, from
another list) is a 400, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.api.errors import ApiError

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_MARKER_LEN = 4096
_DECIMAL = re.compile(r"^[0-9]{1,7}\Z")

# What one position of a sort key holds.
KeyPart = Literal["str", "int", "datetime"]
KeyValue = str | int | dt.datetime
T = TypeVar("T")


def bad_request(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def parse_limit(args: Mapping[str, str]) -> int:
    """``limit`` from the query string: 1..1000, default 100."""
    raw = args.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    # int() would also take " 5", "+5", "1_0" and non-ASCII digits.
    if not _DECIMAL.match(raw) or not 1 <= int(raw) <= MAX_LIMIT:
        raise bad_request(f"limit must be an integer between 1 and {MAX_LIMIT}")
    return int(raw)


def encode_marker(tag: str, key: Sequence[KeyValue]) -> str:
    """The opaque marker for the item whose sort key is ``key``."""
    parts: list[str | int] = [
        format_timestamp(value) if isinstance(value, dt.datetime) else value for value in key
    ]
    text = json.dumps([tag, parts], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_marker(tag: str, shape: Sequence[KeyPart], marker: str) -> tuple[KeyValue, ...]:
    """The sort key inside ``marker``; 400 unless it is a marker of list ``tag``.

    Datetimes come back naive UTC, as the database stores them.
    """
    invalid = bad_request("marker is not valid for this list")
    if not marker or len(marker) > MAX_MARKER_LEN:
        raise invalid
    try:
        padded = marker + "=" * (-len(marker) % 4)
        document = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise invalid from None
    if (
        not isinstance(document, list)
        or len(document) != 2
        or document[0] != tag
        or not isinstance(document[1], list)
        or len(document[1]) != len(shape)
    ):
        raise invalid
    values: list[KeyValue] = []
    for kind, value in zip(shape, document[1], strict=True):
        values.append(_decode_part(kind, value, invalid))
    return tuple(values)


# Sort keys the database can hold: BIGINT integers, text without NUL or lone surrogates.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def storable_text(value: str) -> bool:
    """False for text no database row can hold (NUL, unpaired surrogates): such a
    filter, path or marker can match nothing, and PostgreSQL would refuse the query."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _decode_part(kind: KeyPart, value: Any, invalid: ApiError) -> KeyValue:
    # A marker the API wrote holds only values a row holds; anything else was forged
    # and must be a 400 before it reaches a query (PostgreSQL and SQLite refuse it).
    if kind == "str":
        if not isinstance(value, str) or not storable_text(value):
            raise invalid
        return value
    if kind == "int":
        # bool is an int subclass; a marker never holds one.
        if not isinstance(value, int) or isinstance(value, bool):
            raise invalid
        if not _INT_MIN <= value <= _INT_MAX:
            raise invalid
        return value
    if not isinstance(value, str):
        raise invalid
    try:
        return parse_timestamp(value).replace(tzinfo=None)
    except TimestampError:
        raise invalid from None


def page(
    items: list[T], limit: int, tag: str, key_of: Callable[[T], Sequence[KeyValue]]
) -> tuple[list[T], str | None]:
    """Split a query result fetched with ``limit + 1`` rows into a page and its marker."""
    if len(items) <= limit:
        return items, None
    kept = items[:limit]
    return kept, encode_marker(tag, key_of(kept[-1]))


def list_body(items: list[dict[str, Any]], next_marker: str | None, **extra: Any) -> dict[str, Any]:
    return {**extra, "items": items, "next_marker": next_marker}
