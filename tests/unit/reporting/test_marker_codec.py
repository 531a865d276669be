"""The compact marker codec (reporting.pagination): any key round-trips, the widest
key a row can hold stays far below gunicorn's 4094-byte request line, and a tampered
compact marker is a 400 like a tampered JSON one."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporting import pagination
from reporting.api.errors import ApiError

# Storable text: no NUL, no lone surrogate.
storable = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=255)


@settings(max_examples=300, deadline=None)
@given(st.lists(storable, min_size=1, max_size=5))
def test_any_storable_key_round_trips(key: list[str]) -> None:
    marker = pagination.encode_marker("usage-resource", key)
    assert pagination.decode_marker("usage-resource", ["str"] * len(key), marker) == tuple(key)


@pytest.mark.parametrize("char", ["\U0001f600", "\U0010ffff", "\x01", "\"", "\u0800", "é", "a"])
def test_the_widest_key_of_every_list_fits_the_request_line(char: str) -> None:
    widest = {
        "usage-resource": [char * 64, char * 255, "t" * 64, char * 255, char * 255],
        "usage-project": [char * 64, char * 255, char * 255, "t" * 64],
        "resources-as-of": [char * 64, char * 255, "t" * 64, char * 255],
        "statements": [char * 255],
    }
    for tag, key in widest.items():
        marker = pagination.encode_marker(tag, key)
        assert len(marker) <= 3027 < pagination.MAX_MARKER_LEN, (tag, len(marker))
        assert pagination.decode_marker(tag, ["str"] * len(key), marker) == tuple(key)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _good() -> bytes:
    marker = pagination.encode_marker("events", (dt.datetime(2026, 1, 1), 7))
    return base64.urlsafe_b64decode(marker + "=" * (-len(marker) % 4))


@pytest.mark.parametrize("data", [
    _good()[:-1],  # truncated
    _good() + b"x",  # trailing bytes
    b"\x02" + _good()[1:],  # unknown format
    b"\x01\x03" + _good()[2:],  # more parts announced than held
    b"\x01\x00\x80\x03\xff\xff\xff",  # a packed code point beyond U+10FFFF
    b"\x01\x00\x80\x02ab",  # a packed length no text has
    b"\x01\x00\x00\x02\xc3\x28",  # not UTF-8
    b"\x01",
])
def test_a_tampered_compact_marker_is_400(data: bytes) -> None:
    with pytest.raises(ApiError) as caught:
        pagination.decode_marker("events", ("datetime", "int"), _b64(data))
    assert caught.value.status == 400


def test_the_compact_int_is_checked_like_the_json_one() -> None:
    for value in ("1e3", " 1", "+1", "9" * 21):
        marker = pagination.encode_marker("events", (dt.datetime(2026, 1, 1), 0))
        forged = pagination.encode_marker("events", (dt.datetime(2026, 1, 1), value))
        assert pagination.decode_marker("events", ("datetime", "int"), marker)[1] == 0
        with pytest.raises(ApiError):
            pagination.decode_marker("events", ("datetime", "int"), forged)
