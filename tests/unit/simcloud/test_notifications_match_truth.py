"""Published notifications, mapped by Tally's own table, reproduce the truth at loss 0."""

from __future__ import annotations

import collections

from simcloud.config import WorldConfig
from simcloud.world import World
from tests.unit.simcloud.truthcheck import assert_notifications_match_truth


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

    assert assert_notifications_match_truth(world, messages) > 100


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

