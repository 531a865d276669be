"""The canonical event contract of docs/canonical-event.md (mapping/event.py)."""

from __future__ import annotations

import datetime as dt

import jsonschema
import pytest

from mapping import event


@pytest.mark.parametrize(
    ("event_type", "expected"),
    [
        ("compute.instance.create.end", "create"),
        ("compute.instance.create.start", "create"),
        ("sync.create", "create"),
        ("image.create", "create"),
        ("octavia.loadbalancer.delete.end", "delete"),
        ("sync.delete", "delete"),
        ("image.delete", "delete"),
        ("volume.transfer.accept.end", "update"),
        ("compute.instance.resize.end", "update"),
        ("volume.retype", "update"),
        ("sync.update", "update"),
        ("create", "create"),
        ("end", "update"),
        ("compute.instance.create.end.extra", "update"),
    ],
)
def test_verb_rule(event_type: str, expected: str) -> None:
    assert event.verb(event_type) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-31T12:00:00Z", "2026-01-31T12:00:00.000000Z"),
        ("2026-01-31t12:00:00.5z", "2026-01-31T12:00:00.500000Z"),
        ("2026-01-31T13:00:00.123456+01:00", "2026-01-31T12:00:00.123456Z"),
        ("2026-01-01T00:30:00-02:30", "2026-01-01T03:00:00.000000Z"),
    ],
)
def test_timestamps_normalise_to_utc_microseconds(text: str, expected: str) -> None:
    assert event.normalize_timestamp(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-31T12:00:00",  # no offset
        "2026-01-31 12:00:00Z",  # space separator
        "2026-01-31T12:00:00.1234567Z",  # beyond microseconds
        "2026-02-30T12:00:00Z",  # impossible date
        "2026-01-31T25:00:00Z",
        "yesterday",
        "",
        "0001-01-01T00:00:00+01:00",  # leaves the range in UTC
    ],
)
def test_bad_timestamps_are_refused(text: str) -> None:
    with pytest.raises(event.TimestampError):
        event.parse_timestamp(text)


def test_format_timestamp_pads_early_years() -> None:
    assert event.normalize_timestamp("0421-12-10T01:21:58Z") == "0421-12-10T01:21:58.000000Z"


def test_format_timestamp_treats_naive_as_utc() -> None:
    naive = dt.datetime(2026, 11, 29, 23, 46, 12, 702142)
    assert event.format_timestamp(naive) == "2026-11-29T23:46:12.702142Z"


def _valid() -> dict:
    return {
        "event_id": "dae6f69c-00e0-41c0-b371-41ec3b7f4451",
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": "os-prod-eu1",
        "resource_type": "instance",
        "resource_id": "9f9d01b9-4a58-4271-9e27-398b21ab20d1",
        "project_id": "7c150a59fe714e6f9263774af9688f0e",
        "timestamp": "2012-05-08T20:23:48.028195Z",
        "source": "collector",
        "payload": {
            "state": "active",
            "size": {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 0, "flavor": "m1.tiny"},
            "provider": {"oslo_event_type": "compute.instance.create.end"},
        },
    }


def test_schema_accepts_a_valid_event() -> None:
    jsonschema.Draft202012Validator(event.EVENT_SCHEMA).validate(_valid())


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("event_id"),
        lambda e: e.update(event_id=""),
        lambda e: e.update(event_id="x" * 256),
        lambda e: e.update(source="someone"),
        lambda e: e.update(unknown=1),
        lambda e: e["payload"].update(extra=1),
        lambda e: e["payload"].update(state=3),
        lambda e: e["payload"].update(size=[1]),
        lambda e: e.update(timestamp="2012-05-08 20:23:48"),
        lambda e: e.update(resource_type="Instance"),
        lambda e: e.update(project_id=None),
    ],
)
def test_schema_refuses_malformed_events(mutate) -> None:
    item = _valid()
    mutate(item)
    assert list(jsonschema.Draft202012Validator(event.EVENT_SCHEMA).iter_errors(item))


def test_deterministic_ids_are_stable_and_distinct() -> None:
    a = event.notification_event_id("openstack", "c1", "r1", "image.create", "2026-01-01T00:00:00.000000Z")
    assert a == event.notification_event_id(
        "openstack", "c1", "r1", "image.create", "2026-01-01T00:00:00.000000Z"
    )
    assert a != event.notification_event_id(
        "openstack", "c1", "r1", "image.delete", "2026-01-01T00:00:00.000000Z"
    )
    # Field boundaries matter: ("ab", "c") and ("a", "bc") must not collide.
    assert event.notification_event_id("openstack", "ab", "c", "t", "x") != (
        event.notification_event_id("openstack", "a", "bc", "t", "x")
    )
    c = event.correction_event_id("run-1", "openstack", "c1", "volume", "v1", "delete")
    assert c == event.correction_event_id("run-1", "openstack", "c1", "volume", "v1", "delete")
    assert c != event.correction_event_id("run-2", "openstack", "c1", "volume", "v1", "delete")
    assert c != event.correction_event_id("run-1", "openstack", "c1", "volume", "v1", "update")


def test_trailing_newline_is_not_a_timestamp() -> None:
    with pytest.raises(event.TimestampError):
        event.parse_timestamp("2026-01-31T12:00:00Z\n")
