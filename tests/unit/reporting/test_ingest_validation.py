"""ItemValidator, without a database."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapping.event import TimestampError, parse_timestamp
from mapping.size_schemas import SEEDED_SIZE_SCHEMAS
from reporting.validation import (
    ItemValidator,
    ValidEvent,
    _naive_utc,
    check_size_schema,
    unstorable,
)

SCHEMAS = {("openstack", name): schema for name, schema in SEEDED_SIZE_SCHEMAS.items()}


def item(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "e1", "event_type": "volume.create.end", "platform": "openstack",
        "cloud": "c1", "resource_type": "volume", "resource_id": "v1", "project_id": "p1",
        "timestamp": "2026-01-01T01:00:00.25+01:00", "source": "collector",
        "payload": {"state": "available", "size": {"size_gb": 10, "type": "type-id"}},
    }
    base.update(overrides)
    return base


def validator(strict: bool = False, names: dict[tuple[str, str, str], str] | None = None) -> ItemValidator:
    return ItemValidator(SCHEMAS, names or {}, require_size_schema=strict)


def test_a_valid_item_becomes_its_stored_form() -> None:
    checked = validator(names={("openstack", "c1", "type-id"): "ssd"}).check(item())
    assert isinstance(checked, ValidEvent)
    assert checked.timestamp == dt.datetime(2026, 1, 1, 0, 0, 0, 250000)
    assert checked.payload == {"state": "available", "size": {"size_gb": 10, "type": "ssd"}}
    assert checked.resource_key == ("openstack", "c1", "volume", "v1")


def test_the_name_is_looked_up_before_the_size_schema() -> None:
    strict_volume = {**SCHEMAS, ("openstack", "volume"): {
        "type": "object", "properties": {"type": {"enum": ["ssd"]}}}}
    names = {("openstack", "c1", "type-id"): "ssd"}
    assert isinstance(ItemValidator(strict_volume, names, require_size_schema=False).check(item()),
                      ValidEvent)
    refused = ItemValidator(strict_volume, {}, require_size_schema=False).check(item())
    assert isinstance(refused, str) and refused.startswith("size_schema: openstack/volume: /type")


@pytest.mark.parametrize("strict", [False, True])
def test_a_registered_schema_is_enforced_in_both_modes(strict: bool) -> None:
    bad = item(payload={"size": {"size_gb": -1, "type": "t"}})
    assert validator(strict).check(bad) == (
        "size_schema: openstack/volume: /size_gb: -1 is less than the minimum of 0")


def test_huge_integers_fall_back_to_the_python_validator() -> None:
    size = {"vcpus": 10**40, "ram_gb": 1, "disk_gb": 1, "flavor": "f"}
    checked = validator().check(item(resource_type="instance", payload={"size": size}))
    assert isinstance(checked, ValidEvent)


def test_a_check_all_batch_finds_the_one_unstorable_item() -> None:
    items = [item(event_id="a"), item(event_id="b", resource_id="x\x00"), item(event_id="c")]
    checked = validator().check_all(items)
    assert isinstance(checked[0], ValidEvent) and isinstance(checked[2], ValidEvent)
    assert checked[1] == (
        "event_schema: a string holds NUL or an unpaired surrogate, or a number is not finite")


def test_the_storable_walk_is_the_callers_explicit_choice() -> None:
    """``check`` walks an item for what no column stores unless its caller says it
    already did (``check_all`` for its whole batch); no flag lives on the validator."""
    unstorable_item = item(resource_id="x\x00")
    checker = validator()
    state = dict(vars(checker))
    assert isinstance(checker.check(unstorable_item), str)
    assert isinstance(checker.check(unstorable_item, known_storable=True), ValidEvent)
    assert isinstance(checker.check_all([item(), unstorable_item])[1], str)
    assert isinstance(checker.check_all([item()])[0], ValidEvent)
    assert vars(checker).keys() == state.keys()
    assert isinstance(checker.check(unstorable_item), str)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("ok", False), ("a\x00b", True), ("\ud800", True), ("\\u0000 is text", False),
     ("😀", False), ({"k\x00": 1}, True), ([["\udfff"]], True), (1.5, False),
     (float("nan"), True), ({"size": float("inf")}, True), (10**40, False)],
)
def test_unstorable(value: Any, expected: bool) -> None:
    assert unstorable(value) is expected


@pytest.mark.parametrize(
    ("document", "ok"),
    [({"type": "object"}, True), ({}, True), ([], False), ({"type": "nope"}, False),
     ({"$schema": "http://json-schema.org/draft-07/schema#", "exclusiveMinimum": True}, False),
     ({"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": True,
       "minimum": 0}, True)],
)
def test_check_size_schema(document: Any, ok: bool) -> None:
    assert (check_size_schema(document) is None) is ok


@pytest.mark.parametrize("field", ["resource_type", "timestamp"])
def test_a_trailing_newline_is_refused(field: str) -> None:
    # Python's re lets "$" match before a trailing newline; ECMA-262 (JSON Schema's
    # regex dialect, and jsonschema-rs) does not.
    bad = item(**{field: item()[field] + "\n"})
    reason = validator().check(bad)
    assert isinstance(reason, str) and reason.startswith(f"event_schema: /{field}")


@st.composite
def rfc3339(draw: st.DrawFn) -> str:
    """Texts the event schema's timestamp pattern accepts, impossible dates included."""
    date = f"{draw(st.integers(0, 9999)):04d}-{draw(st.integers(0, 13)):02d}-{draw(st.integers(0, 32)):02d}"
    time = f"{draw(st.integers(0, 24)):02d}:{draw(st.integers(0, 60)):02d}:{draw(st.integers(0, 60)):02d}"
    fraction = draw(st.sampled_from(["", "."]))
    if fraction:
        fraction += draw(st.text("0123456789", min_size=1, max_size=6))
    offset = draw(st.sampled_from(["Z", "z", "+00:00", "-00:00", "+05:30", "-12:00", "+23:59"]))
    return date + draw(st.sampled_from("Tt")) + time + fraction + offset


@settings(max_examples=2000, deadline=None)
@given(rfc3339())
def test_the_timestamp_fast_path_answers_as_parse_timestamp(value: str) -> None:
    try:
        expected: dt.datetime | str = parse_timestamp(value).replace(tzinfo=None)
    except TimestampError as exc:
        expected = f"event_schema: /timestamp: {exc}"
    assert _naive_utc(value) == expected


def test_each_distinct_size_is_checked_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    checker = validator()
    calls: list[Any] = []
    items = [item(event_id=f"e{n}", resource_type="instance",
                  payload={"size": {"vcpus": n % 2 or 1.0, "ram_gb": 1, "disk_gb": 1,
                                    "flavor": "f"}}) for n in range(6)]
    items.append(item(event_id="bad", resource_type="instance",
                      payload={"size": {"vcpus": -1, "ram_gb": 1, "disk_gb": 1, "flavor": "f"}}))
    first = checker.check(items[0])  # builds the type's check
    assert isinstance(first, ValidEvent)
    check = checker._size_check(("openstack", "instance"))
    original = check.first_error
    monkeypatch.setattr(check, "first_error", lambda size: calls.append(size) or original(size))
    checked = [checker.check(i) for i in items] + [checker.check(items[-1])]
    # 1 (an int) and 1.0 (a float) are two sizes; the refused one is refused twice.
    assert [c for c in checked if isinstance(c, str)] == [
        "size_schema: openstack/instance: /vcpus: -1 is less than the minimum of 0"] * 2
    assert len(calls) == 2  # the int size was cached by the first check
