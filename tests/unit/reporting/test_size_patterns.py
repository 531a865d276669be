"""Size schema patterns run on a linear-time engine on every path (reporting.schema_patterns).

``^(a+)+$`` against 40 ``a`` and a ``b`` takes a backtracking engine about 2**40 steps:
Python's ``re`` (jsonschema's keywords) must never see a size schema's pattern.  The
tests forbid it outright instead of timing anything; one also runs the check in a
subprocess, with a generous timeout as a guard only.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import pytest

from reporting.schema_patterns import UNRUNNABLE
from reporting.validation import ItemValidator, ValidEvent, check_size_schema

EVIL = "^(a+)+$"
SLOW = "a" * 40 + "b"


class _NoPythonRegex:
    """Stands for the ``re`` module inside jsonschema's keyword code."""

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"Python's re ran a size schema pattern: {args[:1]!r}")

    match = fullmatch = search


@pytest.fixture
def no_python_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (jsonschema._keywords, jsonschema._utils, jsonschema._legacy_keywords):
        monkeypatch.setattr(module, "re", _NoPythonRegex())


def item(size: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": "e1", "event_type": "share.create.end", "platform": "openstack",
        "cloud": "c1", "resource_type": "share", "resource_id": "s1", "project_id": "p1",
        "timestamp": "2026-01-01T00:00:00Z", "source": "collector", "payload": {"size": size},
    }


def check(schema: dict[str, Any], size: dict[str, Any]) -> ValidEvent | str:
    validator = ItemValidator({("openstack", "share"): schema}, {}, require_size_schema=False)
    return validator.check(item(size))


PATTERN = {"type": "object", "properties": {"tier": {"type": "string", "pattern": EVIL}}}
PATTERN_PROPERTIES = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}},
                      "additionalProperties": False}
UNEVALUATED = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}},
               "unevaluatedProperties": False}


@pytest.mark.usefixtures("no_python_regex")
@pytest.mark.parametrize(("schema", "size", "where"), [
    (PATTERN, {"tier": SLOW}, "/tier"),
    (PATTERN_PROPERTIES, {SLOW: 1}, "(root)"),
    (UNEVALUATED, {SLOW: 1}, "(root)"),
    ({"type": "object", "propertyNames": {"pattern": EVIL}}, {SLOW: 1}, "(root)"),
])
def test_a_pathological_pattern_refuses_its_event_on_the_linear_engine(
        schema: dict[str, Any], size: dict[str, Any], where: str) -> None:
    reason = check(schema, size)
    assert isinstance(reason, str), reason
    assert reason.startswith(f"size_schema: openstack/share: {where}: "), reason
    assert isinstance(check(schema, {"tier": "aaaa"} if schema is PATTERN else {"aa": 1}),
                      ValidEvent)


@pytest.mark.usefixtures("no_python_regex")
def test_a_schema_with_patterns_is_explained_by_the_linear_engine_with_other_errors() -> None:
    schema = {**PATTERN, "properties": {**PATTERN["properties"], "n": {"minimum": 0}}}
    reason = check(schema, {"tier": "aa", "n": -1})
    assert reason == "size_schema: openstack/share: /n: -1 is less than the minimum of 0"


@pytest.mark.parametrize("pattern", ["(?=a)b", "(?<!x)y", "(a)\\1", "^(?!.*b).*$"])
def test_put_refuses_a_pattern_the_linear_engine_cannot_run(pattern: str) -> None:
    for schema in ({"properties": {"tier": {"pattern": pattern}}},
                   {"patternProperties": {pattern: {}}}):
        problem = check_size_schema(schema)
        assert problem is not None and problem.startswith(f"pattern {pattern!r} is not supported")
        assert "linear time" in problem


def test_put_accepts_a_pathological_pattern_the_linear_engine_runs() -> None:
    assert check_size_schema(PATTERN) is None
    assert check_size_schema(PATTERN_PROPERTIES) is None


@pytest.mark.usefixtures("no_python_regex")
def test_a_stored_schema_the_linear_engine_cannot_run_refuses_its_events() -> None:
    # Stored before PUT refused it (by an older release, or by hand).
    schema = {"properties": {"tier": {"pattern": "^(?=(a+)+$)"}}}
    assert check(schema, {"tier": SLOW}) == f"size_schema: openstack/share: (root): {UNRUNNABLE}"


def test_the_pathological_event_is_answered_in_a_subprocess() -> None:
    code = (
        "from reporting.validation import ItemValidator\n"
        "from tests.unit.reporting.test_size_patterns import PATTERN, SLOW, item\n"
        "v = ItemValidator({('openstack', 'share'): PATTERN}, {}, require_size_schema=False)\n"
        "print(v.check(item({'tier': SLOW})))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.startswith("size_schema: openstack/share: /tier: "), done.stdout
    assert "does not match" in done.stdout
