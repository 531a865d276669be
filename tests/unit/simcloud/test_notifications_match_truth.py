"""Published notifications, mapped by Tally's own table, reproduce the truth at loss 0."""

from __future__ import annotations

import collections
from typing import Any

from mapping.event import parse_timestamp
from mapping.openstack import map_notification
from simcloud import model
from simcloud.config import WorldConfig
from simcloud.world import World


def _fold(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The projection Tally would build: per resource, ordered by timestamp then arrival."""
    rows: dict[str, dict[str, Any]] = {}
    ordered = sorted(enumerate(events), key=lambda p: (parse_timestamp(p[1]["timestamp"]), p[0]))
    for _, event in ordered:
        verb = event["event_type"].split(".")
        row = rows.setdefault(event["resource_id"], {"type": event["resource_type"]})
        last = verb[-2] if verb[-1] in ("start", "end") else verb[-1]
        payload = event["payload"]
        if event["project_id"]:
            row["project_id"] = event["project_id"]
        if "state" in payload:
            row["state"] = payload["state"]
        if "size" in payload:
            row["size"] = payload["size"]
        if last == "create":
            row["live"] = True
            row["created_at"] = parse_timestamp(event["timestamp"])
        elif last == "delete":
            row["live"] = False
            row["deleted_at"] = parse_timestamp(event["timestamp"])
    return rows


def test_published_notifications_match_the_truth(fake_bus) -> None:
    transport, exchanges, received = fake_bus
    world = World(WorldConfig(seed=21, scale=120, days=6, empty_start=True,
                              transport=transport, exchanges=exchanges))
    total = 0
    for day in range(1, 7):  # a few clock moves, as a driver loop makes them
        total += world.advance_to(world.config.start.replace(day=1 + day))["sent"]
    assert total == sum(1 for _ in world.publications(world.config.end))
    messages = received.wait_for(total)
    assert len(messages) == total

    events = []
    for m in messages:
        event = map_notification("sim", m["ctxt"], m["publisher_id"], m["event_type"],
                                 m["payload"], m["metadata"])
        if event is not None:
            events.append(event)
    skipped = collections.Counter(m["event_type"] for m in messages) - collections.Counter(
        e["payload"]["provider"]["oslo_event_type"] for e in events)
    assert skipped["compute.instance.resize.end"] > 0 and skipped["image.create"] > 0

    rows = _fold(events)
    names = world.volume_types()
    managed = {r.id for r in world.resources if r.phases[0].status == "managing"}
    compared = 0
    for truth in world.truth(world.config.end):
        rid = truth["resource_id"]
        if truth["ready_at"] is None or rid in managed:
            assert rid not in rows or not rows[rid].get("live")  # nothing announced it yet
            continue
        row = rows[rid]
        compared += 1
        assert row["live"] == truth["live"], truth
        assert row["created_at"] == parse_timestamp(truth["ready_at"]), truth
        if not truth["live"]:
            assert row["deleted_at"] == parse_timestamp(truth["deleted_at"]), truth
        assert row["project_id"] == truth["project_id"], truth
        size = dict(row["size"])
        if truth["resource_type"] == model.VOLUME:
            size["type"] = names[size["type"]]  # what ingest does with size_names
        if truth["resource_type"] == model.LOADBALANCER:
            assert size == {"listeners": 0, "pools": 0}  # counts only reach Tally by sync
        else:
            assert size == truth["size"], truth
        silent_states = {"in-use", "awaiting-transfer"}  # cinder notifies no mapped event
        if not truth["in_transition"] and truth["state"] not in silent_states:
            assert row["state"] == truth["state"], truth
    assert compared > 100


def test_wire_shape_of_each_service(fake_bus) -> None:
    transport, exchanges, received = fake_bus
    world = World(WorldConfig(seed=8, scale=60, days=3, empty_start=True, transport=transport,
                              exchanges=exchanges))
    sent = world.advance_to(world.config.end)["sent"]
    messages = received.wait_for(sent)
    by_service = {m["exchange"]: m for m in messages}
    assert set(by_service) == set(exchanges)
    nova = by_service["nova"]
    assert nova["publisher_id"].startswith("compute.")
    assert nova["ctxt"]["project_id"] == nova["payload"]["tenant_id"]
    assert by_service["cinder"]["publisher_id"].startswith("volume.")
    assert by_service["neutron"]["publisher_id"].startswith("network.")
    assert by_service["glance"]["ctxt"] == {} and by_service["glance"]["publisher_id"] == \
        "image.localhost"
    octavia = by_service["octavia"]
    assert octavia["publisher_id"] is None
    assert octavia["ctxt"]["project_id"] == octavia["payload"]["project_id"]
    for m in messages:
        assert set(m["metadata"]) == {"message_id", "timestamp"}
        # oslo's rendering of the (virtual) instant: naive UTC with a space
        assert len(m["metadata"]["timestamp"]) == 26 and m["metadata"]["timestamp"][10] == " "


def test_loss_duplication_and_reordering(fake_bus) -> None:
    transport, exchanges, received = fake_bus
    config = WorldConfig(seed=9, scale=150, days=4, empty_start=True, transport=transport,
                         exchanges=exchanges, loss=0.2, duplicate=0.1, reorder=True)
    world = World(config)
    report = world.advance_to(config.end)
    messages = received.wait_for(report["sent"])
    assert len(messages) == report["sent"] == \
        report["generated"] - report["lost"] + report["duplicated"]
    assert 0.1 < report["lost"] / report["generated"] < 0.3
    counts = collections.Counter(m["metadata"]["message_id"] for m in messages)
    assert sum(c - 1 for c in counts.values()) == report["duplicated"] > 0
    stamps = [m["metadata"]["timestamp"] for m in messages]
    assert stamps != sorted(stamps)  # reordered
    # Same seed, same faults: a second identical world sends the identical sequence.
    assert World(config).advance_to(config.end) == report
    both = received.wait_for(2 * report["sent"])
    first_ids = [m["metadata"]["message_id"] for m in both[:report["sent"]]]
    second_ids = [m["metadata"]["message_id"] for m in both[report["sent"]:]]
    assert sorted(first_ids) == sorted(second_ids)
