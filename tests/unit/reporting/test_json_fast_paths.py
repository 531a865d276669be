"""orjson on the ingest hot path answers exactly what the standard library answers.

``validation.unstorable`` (through ``mapping.jsontext``) and ``pg_batch.dumps``
encode with orjson and hand what orjson cannot decide (or write) to the standard
library; the request body is
parsed by the standard library with a finite-number check.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporting import pg_batch
from reporting.api.errors import ApiError
from reporting.api.jsonbody import MAX_DEPTH, parse, too_deep
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
