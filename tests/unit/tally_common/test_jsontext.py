"""tally_common.jsontext: the collector's event text and the API's storability check."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tally_common.jsontext import dumps_finite


@pytest.mark.parametrize("event", [
    {"event_id": "e", "payload": {"size": {"vcpus": 2, "ram_gb": 0.5}}, "n": None},
    {"event_id": "é✓", "payload": {"big": 2**70, "neg": -(2**63) - 1}},
    {"event_id": "\ud800 lone surrogate", "project_id": ""},
    {"event_id": "x\x00y", "text": "null"},
])
def test_event_json_reads_back_as_the_event(event: dict[str, Any]) -> None:
    text = dumps_finite(event)
    assert "\n" not in text  # one event per line in the collector's buffer
    assert json.dumps(json.loads(text), sort_keys=True) == json.dumps(event, sort_keys=True)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_event_json_refuses_what_json_cannot_hold(number: float) -> None:
    with pytest.raises(ValueError):
        dumps_finite({"event_id": "e", "payload": {"size": {"vcpus": number}}})


def test_without_ascii_escapes_a_lone_surrogate_is_left_for_utf8_to_refuse() -> None:
    with pytest.raises(UnicodeEncodeError):
        dumps_finite({"s": "\ud800"}, ensure_ascii=False).encode("utf-8")
