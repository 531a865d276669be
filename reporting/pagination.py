"""Keyset pagination of the Reporting API (docs/reporting-queries.md).

A list answers ``{"items": [...], "next_marker": "…" | null}``.  The marker is
opaque to clients: URL-safe base64 (no padding) of the tag naming the list it
belongs to and the sort key of the last item served, each part behind its length.
A marker that does not decode to exactly that shape (tampered,
truncated, from another list) is a 400, never a 500.

Every marker the API issues must be accepted back, through gunicorn's request line
(4094 bytes) too, whatever characters the key holds: a part is spelt in UTF-8, or in 21
bits per code point where that is shorter (U+1F600 takes 4 bytes in UTF-8, 12 as
JSON's ``\ud83d\ude00``), so the widest key, usage by resource's five texts (893
characters), comes to 3,027 characters at most, where the former JSON form reached
4,700 and more.  A marker of that former form is still read.
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
from reporting.db.base import BIGINT_MAX, BIGINT_MIN

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


# The first byte of a marker's bytes: its format (a JSON marker starts with "[").
_FORMAT = 1
_INT_TEXT = re.compile(r"^-?[0-9]{1,20}\Z")
# A part's length (two bytes, big-endian) carries in its top bit how the part is
# spelt: UTF-8, or every code point in 21 bits (``_packed``), whichever is shorter.
_PACKED = 0x8000
_CODE_POINT_BITS = 21


def _packed(text: str) -> bytes:
    """``text``'s code points, 21 bits each (2.6 bytes where UTF-8 takes 4)."""
    number = 0
    for char in reversed(text):
        number = (number << _CODE_POINT_BITS) | ord(char)
    return number.to_bytes(-(-len(text) * _CODE_POINT_BITS // 8), "little")


def _unpacked(data: bytes) -> str | None:
    count = len(data) * 8 // _CODE_POINT_BITS
    number = int.from_bytes(data, "little")
    if len(data) != -(-count * _CODE_POINT_BITS // 8) or number >> (count * _CODE_POINT_BITS):
        return None  # not a length or padding _packed writes
    mask = (1 << _CODE_POINT_BITS) - 1
    points = [(number >> (_CODE_POINT_BITS * i)) & mask for i in range(count)]
    if any(point > 0x10FFFF for point in points):
        return None
    return "".join(map(chr, points))


def _part(text: str) -> bytes:
    spelt = text.encode("utf-8", "surrogatepass")  # a forged key (tests) may hold one
    packed = _packed(text)
    if len(packed) < len(spelt):
        return (_PACKED | len(packed)).to_bytes(2, "big") + packed
    return len(spelt).to_bytes(2, "big") + spelt


def _text(value: KeyValue) -> str:
    if isinstance(value, dt.datetime):
        return format_timestamp(value)
    return str(value) if isinstance(value, int) else value


def encode_marker(tag: str, key: Sequence[KeyValue]) -> str:
    """The opaque marker for the item whose sort key is ``key``."""
    data = bytes([_FORMAT, len(key)]) + b"".join(
        _part(text) for text in [tag, *map(_text, key)])
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _split(data: bytes, count: int) -> list[str] | None:
    """The ``count`` parts filling ``data`` exactly, or None."""
    parts: list[str] = []
    at = 0
    for _ in range(count):
        if at + 2 > len(data):
            return None
        header = int.from_bytes(data[at:at + 2], "big")
        end = at + 2 + (header & ~_PACKED)
        if end > len(data):
            return None
        chunk = data[at + 2:end]
        if header & _PACKED:
            text = _unpacked(chunk)
        else:
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        if text is None:
            return None
        parts.append(text)
        at = end
    return parts if at == len(data) else None


def _document(data: bytes, invalid: ApiError) -> Any:
    """``[tag, [parts]]`` of a marker's bytes, parts as the JSON form holds them."""
    if data[:1] == b"[":  # the former JSON form
        try:
            return json.loads(data)
        except (ValueError, UnicodeError):
            raise invalid from None
    if len(data) < 2 or data[0] != _FORMAT:
        raise invalid
    texts = _split(data[2:], 1 + data[1])
    if texts is None:
        raise invalid
    return [texts[0], texts[1:]]


def decode_marker(tag: str, shape: Sequence[KeyPart], marker: str) -> tuple[KeyValue, ...]:
    """The sort key inside ``marker``; 400 unless it is a marker of list ``tag``.

    Datetimes come back naive UTC, as the database stores them.
    """
    invalid = bad_request("marker is not valid for this list")
    if not marker or len(marker) > MAX_MARKER_LEN:
        raise invalid
    try:
        padded = marker + "=" * (-len(marker) % 4)
        data = base64.urlsafe_b64decode(padded.encode("ascii"))
    except (ValueError, UnicodeError, binascii.Error):
        raise invalid from None
    legacy = data[:1] == b"["
    document = _document(data, invalid)
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
        if not legacy and kind == "int":
            # The compact form spells an integer in decimal.
            if not _INT_TEXT.match(value):
                raise invalid
            value = int(value)
        values.append(_decode_part(kind, value, invalid))
    return tuple(values)


def after_id(tag: str, args: Mapping[str, str]) -> str | None:
    """The id a page of a list keyed by one text id starts after (``marker``), or None
    for the first page."""
    if "marker" not in args:
        return None
    (decoded,) = decode_marker(tag, ["str"], args["marker"])
    return str(decoded)


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
        if not BIGINT_MIN <= value <= BIGINT_MAX:
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
