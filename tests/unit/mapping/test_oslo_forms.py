"""mapping.oslo_forms against oslo.messaging's own wire (de)serialisation."""

from __future__ import annotations

import json

import pytest
from oslo_messaging._drivers import common as oslo_common

from mapping.oslo_forms import from_capture, from_envelope, from_wire, to_envelope
from tests.conftest import load_fixture

FLAT = load_fixture("notifications/octavia.loadbalancer.create.end_octavia-doc.json")


def test_envelope_matches_oslo_serialize_msg() -> None:
    message = {k: v for k, v in FLAT.items() if not k.startswith(("_source", "_notes"))}
    ours = to_envelope(message)
    theirs = oslo_common.serialize_msg(message)
    assert ours["oslo.version"] == theirs["oslo.version"] == "2.0"
    assert json.loads(ours["oslo.message"]) == json.loads(theirs["oslo.message"])
    # and oslo's decoder reads ours back
    assert oslo_common.deserialize_msg(json.loads(json.dumps(ours))) == message


def test_from_envelope_unpacks_context_and_metadata() -> None:
    message = {k: v for k, v in FLAT.items() if not k.startswith(("_source", "_notes"))}
    args = from_envelope(oslo_common.serialize_msg(message))
    assert args["ctxt"]["project"] == "qs59p6z696cp9cho8ze96edddvpfyvgz"
    assert args["ctxt"]["request_id"] == "req-072bab53-1b9b-46fa-92b0-7f04305c31bf"
    assert args["metadata"] == {"message_id": "d84a3800-06ca-410e-a1a3-b40a02306a97",
                                "timestamp": "2022-04-22 23:02:15.717375"}
    assert args["publisher_id"] is None
    assert args["event_type"] == "octavia.loadbalancer.create.end"
    assert args["payload"]["id"] == "8d4c8f66-7ac1-408e-82d5-59f6fcdea9ee"
    assert from_wire(message) == args


@pytest.mark.parametrize("body", [{"oslo.message": {"a": 1}}, {"oslo.message": "[1]"}, {}])
def test_not_an_envelope(body: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        from_envelope(body)


def test_bare_capture_has_no_context_or_metadata() -> None:
    args = from_capture(load_fixture("notifications/volume.resize.end_watcher.json"))
    assert args["ctxt"] == {} and args["metadata"] == {}
    assert args["event_type"] == "volume.resize.end"
