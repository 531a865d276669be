"""The generated world: reproducible, at the asked scale, with a forward-only clock."""

from __future__ import annotations

import collections
import datetime as dt

import pytest

from simcloud import model
from simcloud.config import ConfigError, WorldConfig
from simcloud.world import ClockError, World


def _fingerprint(world: World) -> list[tuple]:
    return [(r.kind, r.id, r.created_at, r.deleted_at, tuple(r.phases)) for r in world.resources]


def test_same_seed_same_world() -> None:
    first = World(WorldConfig(seed=11, scale=80))
    second = World(WorldConfig(seed=11, scale=80))
    assert _fingerprint(first) == _fingerprint(second)
    pubs_a = [(p.event_type, p.message_id, p.timestamp, p.payload) for p in first.publications()]
    pubs_b = [(p.event_type, p.message_id, p.timestamp, p.payload) for p in second.publications()]
    assert pubs_a == pubs_b
    assert len({m for _, m, _, _ in pubs_a}) == len(pubs_a)  # one message_id per notification


def test_another_seed_another_world() -> None:
    assert _fingerprint(World(WorldConfig(seed=1, scale=40))) != \
        _fingerprint(World(WorldConfig(seed=2, scale=40)))


@pytest.mark.parametrize("scale", [5, 200, 2000])
def test_live_population_tracks_the_scale(scale: int) -> None:
    world = World(WorldConfig(seed=3, scale=scale))
    for day in (0, 15, 29):
        at = world.config.start + dt.timedelta(days=day)
        live = [r for r in world.truth(at) if r["live"]]
        assert 0.8 * scale <= len(live) <= 1.25 * scale + 2, (day, len(live))
        if scale >= 200:  # a handful of resources may miss a type for a while
            kinds = collections.Counter(r["resource_type"] for r in live)
            assert set(kinds) == set(model.RESOURCE_TYPES)


def test_a_handful_of_resources() -> None:
    world = World(WorldConfig(seed=3, scale=2, daily_turnover=0.0))
    assert collections.Counter(r.kind for r in world.resources) == {"instance": 1, "volume": 1}


def test_month_shows_every_transition_and_operation() -> None:
    world = World(WorldConfig(seed=5, scale=3000, days=10))
    statuses = {(r.kind, p.status) for r in world.resources for p in r.phases}
    tasks = {p.task for r in world.resources for p in r.phases if p.task}
    for status in model.VOLUME_TRANSITIONS:
        assert ("volume", status) in statuses, status
    for status in ("PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"):
        assert ("loadbalancer", status) in statuses
    assert {"spawning", "deleting", "powering-off", "powering-on", "resize_prep",
            "resize_finish", "resize_confirming", "resize_reverting", "shelving",
            "unshelving"} <= tasks
    types = {p.event_type for p in world.publications()}
    assert {"compute.instance.resize.end", "compute.instance.finish_resize.end",
            "compute.instance.resize.confirm.end", "compute.instance.resize.revert.end",
            "volume.retype", "volume.transfer.accept.end", "image.create", "image.upload",
            "octavia.loadbalancer.update.end", "floatingip.delete.end"} <= types


def test_clock_moves_forward_only() -> None:
    world = World(WorldConfig(seed=1, scale=20))
    report = world.advance_to("2026-11-03T00:00:00Z")
    assert report["generated"] > 0 and report["sent"] == 0  # no transport configured
    assert world.clock == dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
    assert world.advance_to("2026-11-03T00:00:00Z")["generated"] == 0
    with pytest.raises(ClockError, match="only moves forward"):
        world.advance_to("2026-11-02T00:00:00Z")
    with pytest.raises(ClockError):
        world.advance_to("yesterday")


def test_truth_as_of_an_instant() -> None:
    world = World(WorldConfig(seed=4, scale=60))
    deleted = next(r for r in world.resources if r.deleted_at and r.ready_at < r.deleted_at
                   and r.created_at >= world.config.start.timestamp())
    before = model.to_datetime(deleted.deleted_at - 1)
    after = model.to_datetime(deleted.deleted_at)
    rec_before = next(r for r in world.truth(before) if r["resource_id"] == deleted.id)
    rec_after = next(r for r in world.truth(after) if r["resource_id"] == deleted.id)
    assert rec_before["live"] and rec_before["deleted_at"] is None
    assert not rec_after["live"] and rec_after["status"] == "deleted"
    assert rec_after["deleted_at"] == model.rfc3339(deleted.deleted_at)
    created = model.to_datetime(deleted.created_at - 1)
    assert deleted.id not in {r["resource_id"] for r in world.truth(created)}


def test_truth_normalises_states_like_tally() -> None:
    world = World(WorldConfig(seed=6, scale=1500, days=5))
    end = world.config.end
    by_status = {(r["status"], r["state"]) for r in world.truth(end, "instance")}
    assert ("stopped", "shutoff") in by_status
    assert ("shelved_offloaded", "shelved") in by_status
    for record in world.truth(end, "volume", live=True):
        assert record["size"]["type"] == world.volume_types()[record["volume_type_id"]]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="loss"):
        WorldConfig(loss=1.5)
    with pytest.raises(ConfigError, match="aware"):
        WorldConfig(start=dt.datetime(2026, 11, 1))
    with pytest.raises(ConfigError, match="exchanges"):
        WorldConfig(exchanges={"swift": "x"})
    with pytest.raises(ValueError, match="resource_type"):
        World(WorldConfig(scale=5)).truth(resource_type="server")
