"""Bill the simulated month from the simulated cloud's ground truth, independently of
Tally, to check Tally's statements against.

The truth's lifecycle of a resource runs from the instant its creation finished (when
the platform's create notification is dated) to its deletion, cut wherever the record
Tally books (project, state, size) changes; a resource live at the end of what the
world has played runs on, as a statement bills it, to the end of the period.  The
amounts are computed here with exact fractions and a deliberately separate, minimal
reading of ``DEMO_PRICES`` (per line half-even to the cent), not with Tally's code.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction
from typing import Any

from simcloud import model

DEMO_PRICES: dict[str, Any] = {
    "effective_from": "2026-01-01T00:00:00Z",
    "currency": "EUR",
    "rates": {
        "instance": {"per": "hour",
                     "by_flavor": {"m1.tiny": "0.005", "m1.small": "0.020", "m1.medium": "0.040",
                                   "m1.large": "0.080", "m1.xlarge": "0.160",
                                   "c1.scratch": "0.090"},
                     "by_resources": {"vcpus": "0.010", "ram_gb": "0.005", "disk_gb": "0.0001"}},
        "volume": {"per": "gb_hour", "rate": "0.00010",
                   "type_modifiers": {"ssd": "1.5", "gold-private": "2"}},
        "floating_ip": {"per": "hour", "rate": "0.005"},
        "image": {"per": "gb_hour", "rate": "0.00005"},
        "loadbalancer": {"per": "hour", "rate": "0.030", "listener": "0.005", "pool": "0.005"},
    },
    "state_modifiers": {"instance": {"shutoff": "0.5", "shelved": "0", "suspended": "0.5"}},
}


def _q(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _num(value: Any) -> Fraction:
    return Fraction(Decimal(repr(value))) if isinstance(value, float) else Fraction(value)


def _hourly(kind: str, size: dict[str, Any] | None, state: str) -> Fraction | None:
    """Price per hour of one interval under DEMO_PRICES (None: no price)."""
    rates = DEMO_PRICES["rates"]
    size = size or {}
    if kind == "instance":
        instance = rates["instance"]
        if size.get("flavor") in instance["by_flavor"]:
            rate = _q(instance["by_flavor"][size["flavor"]])
        else:
            rate = sum((_num(size[k]) * _q(r) for k, r in instance["by_resources"].items()),
                       Fraction(0))
        return rate * _q(DEMO_PRICES["state_modifiers"]["instance"].get(state, "1"))
    if kind == "volume":
        modifier = _q(rates["volume"]["type_modifiers"].get(size.get("type"), "1"))
        return _num(size["size_gb"]) * _q(rates["volume"]["rate"]) * modifier
    if kind == "image":
        return None if "size_gb" not in size else _num(size["size_gb"]) * _q(
            rates["image"]["rate"])
    if kind == "floating_ip":
        return _q(rates["floating_ip"]["rate"])
    if kind == "loadbalancer":
        lb = rates["loadbalancer"]
        return (_q(lb["rate"]) + _num(size.get("listeners", 0)) * _q(lb["listener"])
                + _num(size.get("pools", 0)) * _q(lb["pool"]))
    return None


def _cents(value: Fraction) -> Decimal:
    whole, rest = divmod(value * 100, 1)
    whole = int(whole)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    return Decimal(whole) / 100


def _seconds(moment: dt.datetime) -> Fraction:
    return Fraction(int(moment.replace(tzinfo=dt.UTC).timestamp() * 1_000_000), 1_000_000)


Piece = tuple[Fraction, Fraction, str, str, Any]  # start, end (seconds), project, state, size


def truth_lifecycles(world: Any, period_start: dt.datetime, period_end: dt.datetime,
                     played_until: dt.datetime) -> dict[tuple[str, str], list[Piece]]:
    """Per (resource type, id): its truth intervals clipped to the period."""
    lo, hi = _seconds(period_start), _seconds(period_end)
    until = played_until.replace(tzinfo=dt.UTC).timestamp()
    found: dict[tuple[str, str], list[Piece]] = {}
    for res in world.resources:
        if res.ready_at > until:
            continue
        deleted = res.deleted_at if res.deleted_at is not None and res.deleted_at <= until \
            else None
        instants = [res.ready_at] + [t for t in res.phase_times
                                     if res.ready_at < t <= until and (deleted is None or
                                                                       t < deleted)]
        changes: list[tuple[float, tuple[str, str, Any]]] = []
        for t in instants:
            record = model.truth_record(res, t)
            booked = (record["project_id"], record["state"], record["size"])
            if not changes or changes[-1][1] != booked:
                changes.append((t, booked))
        pieces: list[Piece] = []
        for index, (start, booked) in enumerate(changes):
            stop = (_micro(changes[index + 1][0]) if index + 1 < len(changes)
                    else (_micro(deleted) if deleted is not None else hi))
            begin, end = max(_micro(start), lo), min(stop, hi)
            if end > begin:
                pieces.append((begin, end, *booked))
        if pieces:
            found[(res.kind, res.id)] = pieces
    return found


def tally_lifecycle(intervals: list[dict[str, Any]], period_start: dt.datetime,
                    period_end: dt.datetime) -> list[Piece]:
    """Tally's lifecycle (``GET …/lifecycle``) in the same form, clipped to the period."""
    lo, hi = _seconds(period_start), _seconds(period_end)
    pieces: list[Piece] = []
    for interval in intervals:
        start = _seconds(_parse(interval["start"]))
        stop = hi if interval["end"] is None else _seconds(_parse(interval["end"]))
        begin, end = max(start, lo), min(stop, hi)
        if end > begin:
            pieces.append((begin, end, interval["project_id"], interval["state"],
                           interval["size"]))
    return pieces


def bill(kind: str, pieces: list[Piece]) -> dict[str, Decimal]:
    """Per project: the rounded lines of one resource's pieces under DEMO_PRICES."""
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for begin, end, project, state, size in pieces:
        hourly = _hourly(kind, size, state)
        if hourly is not None:
            totals[project] += _cents(hourly * (end - begin) / 3600)
    return dict(totals)


def _parse(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def _micro(t: float) -> Fraction:
    """A platform instant as Tally stores it: microseconds (what RFC 3339 carries)."""
    text = model.rfc3339(t)
    moment = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return _seconds(moment)
