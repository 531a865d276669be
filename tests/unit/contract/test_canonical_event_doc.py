"""docs/canonical-event.md cannot drift from mapping.event and the seeded size schemas.

Every field of the event schema (and of its payload) has a row in the field table with
its JSON type, every member of every seeded size schema has a row in its type's table,
and nothing is documented that the schemas do not have.  The verb examples and the id
namespace the page states are the code's.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from mapping import event
from mapping.size_schemas import SEEDED_SIZE_SCHEMAS
from tests.conftest import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "canonical-event.md"
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|")


def _section(heading: str) -> str:
    """The text below ``heading`` up to the next heading of the same or a higher level."""
    text = PAGE.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    stop = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start)
    return text[start:stop.start() if stop else len(text)]


def _rows(section: str) -> dict[str, str]:
    """First column (a code span) -> second column, of the section's table rows."""
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def _json_type(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    values = schema["enum"]
    if all(isinstance(v, int) for v in values):
        return "integer"
    assert all(isinstance(v, str) for v in values), schema
    return "string"


def _documented_type(cell: str) -> str:
    return re.split(r"[ ,]", cell, maxsplit=1)[0]


def test_field_table_matches_the_event_schema() -> None:
    properties = event.EVENT_SCHEMA["properties"]
    expected = {name: _json_type(schema) for name, schema in properties.items()}
    payload = properties["payload"]["properties"]
    expected |= {f"payload.{name}": _json_type(schema) for name, schema in payload.items()}
    rows = _rows(_section("## Fields"))
    assert set(rows) == set(expected)
    for name, json_type in expected.items():
        assert _documented_type(rows[name]) == json_type, name


def test_required_and_optional_fields_are_stated() -> None:
    section = _section("## Fields")
    schema = event.EVENT_SCHEMA
    assert set(schema["required"]) == set(schema["properties"])
    assert len(schema["required"]) == 10 and schema["additionalProperties"] is False
    assert "All ten top-level fields are required and no other field is accepted" in section
    payload = schema["properties"]["payload"]
    assert "required" not in payload and payload["additionalProperties"] is False
    assert "only the three members below are accepted, each optional" in section
    assert len(payload["properties"]) == 3


@pytest.mark.parametrize("resource_type", sorted(SEEDED_SIZE_SCHEMAS))
def test_size_table_matches_the_seeded_schema(resource_type: str) -> None:
    schema = SEEDED_SIZE_SCHEMAS[resource_type]
    rows = _rows(_section(f"### `openstack/{resource_type}`"))
    expected = {name: _json_type(member) for name, member in schema["properties"].items()}
    assert set(rows) == set(expected)
    for name, json_type in expected.items():
        assert _documented_type(rows[name]) == json_type, (resource_type, name)


def test_no_size_table_for_a_type_without_a_seeded_schema() -> None:
    documented = re.findall(r"^### `openstack/([a-z_]+)`$", PAGE.read_text(), re.M)
    assert sorted(documented) == sorted(SEEDED_SIZE_SCHEMAS)


def test_verb_examples_are_the_code_s() -> None:
    rows = _rows(_section("## The verb rule"))
    assert rows, "the verb table has rows"
    for line in _section("## The verb rule").splitlines():
        if not line.startswith("| `"):
            continue
        types_cell, verbs_cell = line.strip("|").split("|")[:2]
        types = re.findall(r"`([^`]+)`", types_cell)
        verbs = re.findall(r"\b(create|update|delete)\b", verbs_cell)
        if len(verbs) == 1:
            verbs *= len(types)
        assert [event.verb(t) for t in types] == verbs, line


def test_id_namespace_is_the_code_s() -> None:
    assert f"`{event.EVENT_ID_NAMESPACE}`" in _section("## Deterministic ids")
