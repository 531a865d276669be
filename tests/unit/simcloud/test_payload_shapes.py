"""Published payloads carry the members of the real captures in tests/fixtures."""

from __future__ import annotations

import re

import pytest

from simcloud.config import WorldConfig
from simcloud.world import World
from tests.conftest import FIXTURES_DIR, load_fixture

# Members a capture has that the simulation leaves out on purpose, per capture.
LEFT_OUT = {
    # designate's capture comes from a deployment adding image_name
    "compute.instance.create.end_designate.json": {"image_name"},
    # 2012 nova sent image_ref; nova 34 sends only image_ref_url (its capture here)
    "compute.instance.create.end_ceilometer.json": {"image_ref"},
    # glance v1 era
    "image.upload_ceilometer.json": {"location"},
    # the octavia doc shows the API dict; current octavia sends the provider-driver dict
    # (loadbalancer_id, no status or timestamps), which is what the simulation sends
    "octavia.loadbalancer.create.end_octavia-doc.json": {
        "created_at", "enabled", "flavor_id", "id", "operating_status", "provider",
        "provisioning_status", "tags", "updated_at", "vip"},
    # glance_metadata of bootable volumes
    "volume.create.end_watcher-bootable.json": {"glance_metadata"},
}
CAPTURES = sorted(p.name for p in (FIXTURES_DIR / "notifications").glob("*.json"))


@pytest.fixture(scope="module")
def first_payloads() -> dict[str, dict]:
    world = World(WorldConfig(seed=5, scale=3000, days=10, empty_start=True))
    out: dict[str, dict] = {}
    for publication in world.publications():
        out.setdefault(publication.event_type, publication.payload)
    return out


def _members(payload: dict) -> set[str]:
    members = set(payload)
    if isinstance(payload.get("floatingip"), dict):
        members |= {f"floatingip.{k}" for k in payload["floatingip"]}
    return members


@pytest.mark.parametrize("capture", CAPTURES)
def test_payload_has_the_capture_members(first_payloads, capture: str) -> None:
    sample = load_fixture(f"notifications/{capture}")
    mine = first_payloads[sample["event_type"]]
    missing = _members(sample["payload"]) - _members(mine)
    assert missing == LEFT_OUT.get(capture, set())


# nova 34's own notifications (captured by tests/real): the simulated ones hold the same
# members, no more, with values of the same JSON types and instants written alike.
NOVA34 = [name for name in CAPTURES if name.endswith("_nova34.json")]


def _shape(value: object) -> object:
    """A value's JSON type; a string's digits as 'd' (so instants compare by format)."""
    if isinstance(value, str):
        return re.sub(r"[0-9]", "d", value) if re.search(r"[0-9]{4}-[0-9]{2}-", value) \
            else "str"
    return type(value).__name__


def test_the_nova34_captures_are_there() -> None:
    assert len(NOVA34) >= 7


@pytest.mark.parametrize("capture", NOVA34)
def test_payload_is_shaped_as_nova34_sends_it(first_payloads, capture: str) -> None:
    sample = load_fixture(f"notifications/{capture}")["payload"]
    mine = first_payloads[load_fixture(f"notifications/{capture}")["event_type"]]
    assert set(mine) == set(sample)
    assert {k: _shape(v) for k, v in mine.items()} == {k: _shape(v) for k, v in sample.items()}


# glance 33's own notifications (captured by tests/real), held to the same rule.
GLANCE33 = [name for name in CAPTURES if name.endswith("_glance33.json")]


def test_the_glance33_captures_are_there() -> None:
    assert len(GLANCE33) == 5


@pytest.mark.parametrize("capture", GLANCE33)
def test_payload_is_shaped_as_glance33_sends_it(first_payloads, capture: str) -> None:
    sample = load_fixture(f"notifications/{capture}")
    mine = first_payloads[sample["event_type"]]
    assert set(mine) == set(sample["payload"])
    assert {k: _shape(v) for k, v in mine.items()} == \
        {k: _shape(v) for k, v in sample["payload"].items()}


# cinder 29's own notifications (captured by tests/real), held to the same rule.
CINDER29 = [name for name in CAPTURES if name.endswith("_cinder29.json")]


def test_the_cinder29_captures_are_there() -> None:
    assert len(CINDER29) == 4


# cinder 29 writes resize.end's and retype's instants in whole seconds (the volume as
# its API reloaded it); the simulated cloud keeps the microseconds (docs/simcloud.md).
WHOLE_SECONDS = {"volume.resize.end", "volume.retype"}


def _cinder_shape(payload: dict, event_type: str) -> dict:
    shapes = {k: _shape(v) for k, v in payload.items()}
    if event_type in WHOLE_SECONDS:
        for key in ("created_at", "launched_at"):
            shapes[key] = str(shapes[key]).replace(".dddddd", "")
    return shapes


@pytest.mark.parametrize("capture", CINDER29)
def test_payload_is_shaped_as_cinder29_sends_it(first_payloads, capture: str) -> None:
    sample = load_fixture(f"notifications/{capture}")
    event_type = sample["event_type"]
    mine = first_payloads[event_type]
    assert set(mine) == set(sample["payload"])
    assert _cinder_shape(mine, event_type) == _cinder_shape(sample["payload"], event_type)
    assert mine["status"] == sample["payload"]["status"]
