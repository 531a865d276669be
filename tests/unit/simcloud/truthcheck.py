"""Check received notifications against a world's truth, through Tally's own mapping."""

from __future__ import annotations

import collections
from typing import Any

from mapping.event import parse_timestamp
from mapping.openstack import map_notification
from simcloud import model
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


def assert_notifications_match_truth(world: World, messages: list[dict[str, Any]]) -> int:
    """Map and fold ``messages`` (listener arguments) and compare with the truth at the end.

    Returns how many resources were compared.  What the real services never notify is
    left out: volume attachment and transfer states, managed volumes, load balancer
    listener/pool counts, and resources still being created.
    """
    events = []
    for m in messages:
        event = map_notification("sim", m["ctxt"], m["publisher_id"], m["event_type"],
                                 m["payload"], m["metadata"])
        if event is not None:
            events.append(event)
    skipped = collections.Counter(m["event_type"] for m in messages) - collections.Counter(
        e["payload"]["provider"]["oslo_event_type"] for e in events)
    for must_skip in ("compute.instance.resize.end", "compute.instance.exists", "image.create"):
        assert skipped[must_skip] > 0, must_skip

    rows = _fold(events)
    names = world.volume_types()
    managed = {r.id for r in world.resources if r.phases[0].status == "managing"}
    compared = 0
    for truth in world.truth():  # as of the clock: what was published
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
    return compared
