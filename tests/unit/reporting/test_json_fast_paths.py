"""orjson on the ingest hot path answers exactly what the standard library answers.

``validation.unstorable`` (through ``tally_common.jsontext``) and ``pg_batch.dumps``
encode with orjson and hand what orjson cannot decide (or write) to the standard
library; the request body is parsed by orjson, and what orjson refuses (or could
read inexactly: integers beyond 64 bits) by the standard library with a
finite-number check.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporting.api.errors import ApiError
from reporting.api.jsonbody import MAX_DEPTH, _parse_stdlib, parse, too_deep
from reporting.db.writes import pg_batch, pg_lookup
from reporting.validation import _ESCAPED_NUL, unstorable

text = st.text(alphabet=st.characters(codec=None)) | st.sampled_from(
    ["\x00", "a\x00", "\\u0000", "\\\x00", "\ud800", "null", "x\\"])
scalars = (
    st.none() | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities included
    | text
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


def unstorable_by_stdlib(value: Any) -> bool:
    """The standard-library-only answer unstorable() gave before orjson."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return True
    return "\\u0000" in text and _ESCAPED_NUL.search(text) is not None


def exact(value: Any) -> str:
    """A text telling 1 from 1.0 and -0.0 from 0.0 (== does not)."""
    return json.dumps(value, sort_keys=True)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.none() | st.datetimes(), max_size=20), st.sampled_from(["-infinity", "infinity"]))
def test_an_instants_array_is_each_instants_iso_form(
        instants: list[dt.datetime | None], unbounded: str) -> None:
    texts = [unbounded if i is None else i.isoformat() for i in instants]
    assert pg_lookup._instants(instants, unbounded) == (
        "{" + ",".join(f'"{t}"' for t in texts) + "}")


@given(documents)
def test_unstorable_answers_as_the_standard_library(document: Any) -> None:
    assert unstorable(document) is unstorable_by_stdlib(document)


@pytest.mark.parametrize(("value", "expected"), [
    ({"a": float("nan")}, True), ([float("-inf")], True), ({"a": None}, False),
    ({"a": 2**70}, False), ({1: "x"}, False), ({"k": dt.datetime(2026, 1, 1)}, True),
    ({"a": "\\u0000"}, False), ({"a": "\x00"}, True), ({"a\x00": 1}, True),
])
def test_unstorable_cases_orjson_cannot_decide(value: Any, expected: bool) -> None:
    assert unstorable(value) is expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(text, documents, max_size=4), max_size=4))
def test_a_pg_batch_reads_back_as_the_rows(rows: list[dict[str, Any]]) -> None:
    if unstorable(rows):
        return  # refused before it gets here
    assert exact(json.loads(pg_batch.dumps(rows))) == exact(rows)


def test_a_pg_batch_writes_datetimes_in_iso_form_and_big_integers_exactly() -> None:
    at = dt.datetime(2026, 11, 30, 8, 51, 42, 123456)
    assert json.loads(pg_batch.dumps([{"at": at, "big": 2**70}])) == [
        {"at": "2026-11-30T08:51:42.123456", "big": 2**70}]
    assert json.loads(pg_batch.dumps([{"at": at.replace(microsecond=0)}])) == [
        {"at": "2026-11-30T08:51:42"}]


@pytest.mark.parametrize("body", [
    b'{"n": NaN}', b'{"n": Infinity}', b'{"n": 1e999}', b'{"n": -1E400}', b"{", b"\xff",
])
def test_a_body_without_a_json_value_for_every_number_is_refused(body: bytes) -> None:
    with pytest.raises(ApiError):
        parse(body)


def test_a_body_keeps_its_numbers_exact() -> None:
    document = parse(b'{"big": 123456789012345678901234567890, "f": 1.5e300, "z": -0.0}')
    assert exact(document) == exact({"big": 123456789012345678901234567890, "f": 1.5e300,
                                     "z": -0.0})


def parsed_or_refused(parser: Any, body: bytes) -> tuple[str, str]:
    try:
        return ("ok", exact(parser(body)))
    except ApiError as exc:
        return ("refused", exc.message)


@settings(max_examples=1000, deadline=None)
@given(documents, st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 1},
                                   {"separators": (",", ":")}]))
def test_a_body_reads_as_the_standard_library_reads_it(document: Any, style: dict[str, Any]
                                                       ) -> None:
    try:
        body = json.dumps({"d": document}, **style).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return  # not a body a client can send as UTF-8 JSON
    assert parsed_or_refused(parse, body) == parsed_or_refused(_parse_stdlib, body)


@pytest.mark.parametrize("body", [
    b'{"n": 1e999}', b'{"n": NaN}', b'{"n": 12345678901234567890123}', b'{"n": -9999999999999999999}',
    b'{"n": 18446744073709551615}', b'{"n": 9223372036854775807}', b'{"n": 0.12345678901234567891}',
    b'{"s": "\\ud800"}', b'{"s": "\\ud83d\\ude00"}', b'\xef\xbb\xbf{}', b'\xff{}', b'{"a": 1, "a": 2}',
    b'{"a": [01]}', b'{"a": 1,}', b' {"a": -0} ', b'{"a": 1E2, "b": 1e-400, "c": -0.0}',
    b'{"s": "\x1f"}', b"[" * 2000 + b"]" * 2000,
])
def test_bodies_orjson_reads_differently_or_refuses_read_as_the_standard_library(
        body: bytes) -> None:
    assert parsed_or_refused(parse, body) == parsed_or_refused(_parse_stdlib, body)


def test_a_body_with_an_integer_beyond_64_bits_keeps_it_an_integer() -> None:
    assert parse(b'{"n": 123456789012345678901234567890}') == {
        "n": 123456789012345678901234567890}
    assert type(parse(b'{"n": 18446744073709551616}')["n"]) is int


def nested(depth: int, kind: str) -> Any:
    value: Any = 1
    for level in range(depth):
        value = [value] if kind == "list" or (kind == "mixed" and level % 2) else {"k": value}
    return value


@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
def test_nesting_is_allowed_up_to_max_depth(kind: str) -> None:
    assert not too_deep(nested(MAX_DEPTH, kind))
    assert too_deep(nested(MAX_DEPTH + 1, kind))
    assert too_deep({"wide": [1, "x", nested(MAX_DEPTH, kind)]})
    assert not too_deep({"wide": [1, "x", nested(MAX_DEPTH - 2, kind)]})
    assert not too_deep("scalar")
