"""Hand-computed rating of a small month: every rate kind, a mid-month price change,
a flavor without a rate, a zero-rated project, modifiers, a move between projects
and intervals crossing the period's boundary and *now*."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from reporting.billing import currencies, money, pricelist, rating
from reporting.fold import Interval

OCT = (dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1))
AFTER = dt.datetime(2026, 11, 5)  # "now", after the period

V1: dict[str, Any] = {
    "effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
    "zero_rated_projects": ["p-free"],
    "rates": {
        "instance": {"per": "hour", "by_flavor": {"m1.small": "0.020"},
                     "by_resources": {"vcpus": "0.010", "ram_gb": "0.005", "disk_gb": "0.0001"}},
        "volume": {"per": "gb_hour", "rate": "0.00010", "type_modifiers": {"ssd": "1.5"}},
        "floating_ip": {"per": "hour", "rate": "0.005"},
        "image": {"per": "gb_hour", "rate": "0.00005"},
        "loadbalancer": {"per": "hour", "rate": "0.030", "listener": "0.005", "pool": "0.005"},
    },
    "state_modifiers": {"instance": {"shutoff": "0.5", "shelved": "0"}},
}
V2 = {**V1, "effective_from": "2026-10-16T00:00:00Z",
      "rates": {**V1["rates"], "instance": {"per": "hour", "by_flavor": {"m1.small": "0.030"}}}}
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}


def versions(*documents: dict[str, Any]) -> list[pricelist.PriceVersion]:
    return [pricelist.parse(d, f"default/{n}") for n, d in enumerate(documents, 1)]


def at(day: int, hour: int = 0, month: int = 10) -> dt.datetime:
    return dt.datetime(2026, month, day, hour)


def item(rtype: str, start: dt.datetime, end: dt.datetime | None, size: Any = None,
         state: str | None = "active", project: str = "p1", rid: str = "r1",
         event: str = "e1") -> rating.RatedInterval:
    return rating.RatedInterval(rtype, rid, Interval(start, end, project, state, size, event))


def lines(*items: rating.RatedInterval, docs: tuple[dict[str, Any], ...] = (V1,),
          now: dt.datetime = AFTER) -> list[dict[str, Any]]:
    return [line.as_dict() for line in rating.rate_intervals(items, versions(*docs), *OCT, now)]


def test_instance_by_flavor() -> None:
    (line,) = lines(item("instance", at(2), at(2, 10), SMALL))
    assert (line["quantity"], line["unit"], line["rate"], line["modifier"]) == (
        "10", "hour", "0.020", "1")
    assert (line["amount_unrounded"], line["amount"], line["unrated"]) == ("0.2", "0.20", None)
    assert line["price_list_version"] == "default/1" and line["event_id"] == "e1"


def test_instance_by_resources_when_the_flavor_has_no_rate() -> None:
    size = {"vcpus": 2, "ram_gb": 4, "disk_gb": 40, "flavor": "custom"}
    (line,) = lines(item("instance", at(2), at(2, 10), size))
    # 2 x 0.010 + 4 x 0.005 + 40 x 0.0001 = 0.044 per hour, 10 hours
    assert (line["rate"], line["amount"]) == ("0.0440", "0.44")


def test_a_flavor_without_a_rate_is_unrated_never_zero() -> None:
    size = {"vcpus": 2, "ram_gb": 4, "disk_gb": 40, "flavor": "custom"}
    (line,) = lines(item("instance", at(16), at(16, 10), size), docs=(V1, V2))
    assert line["amount"] is None and line["amount_unrounded"] is None and line["rate"] is None
    assert line["unrated"] == "no rate for flavor custom in price list default/2"


@pytest.mark.parametrize(("size", "docs", "reason"), [
    (None, (V1, V2), "the size has no flavor and price list default/2 rates instances by "
     "flavor only"),
    ({"vcpus": 2}, (V1, V2), "the size has no flavor and price list default/2 rates "
     "instances by flavor only"),
    ({"flavor": 7}, (V1, V2), "the size's flavor 7 is not a name and price list default/2 "
     "rates instances by flavor only"),
    ({"vcpus": 2, "disk_gb": 40}, (V1,), "the size has no flavor and no ram_gb"),
    (None, (V1,), "the size has no flavor and no vcpus"),
    ({"flavor": "custom", "vcpus": 2}, (V1,), "flavor custom has no rate and the size has no "
     "ram_gb"),
])
def test_an_unrated_instance_says_what_is_missing(size: Any, docs: tuple[dict[str, Any], ...],
                                                  reason: str) -> None:
    """Never "flavor None": a size without a flavor says so."""
    (line,) = lines(item("instance", at(16), at(16, 10), size), docs=docs)
    assert line["amount"] is None and line["unrated"] == reason


def test_volume_per_gb_hour_with_a_type_modifier_by_name() -> None:
    ssd = {"size_gb": 100, "type": "ssd"}
    hdd = {"size_gb": 100, "type": "hdd"}
    ssd_line, hdd_line = lines(item("volume", at(3), at(4), ssd, rid="v1"),
                               item("volume", at(3), at(4), hdd, rid="v2"))
    # 100 GB x 24 h = 2400 GB-h x 0.00010 = 0.24; ssd x 1.5 = 0.36
    assert (ssd_line["quantity"], ssd_line["unit"], ssd_line["modifier"], ssd_line["amount"]) == (
        "2400", "gb_hour", "1.5", "0.36")
    assert (hdd_line["modifier"], hdd_line["amount"]) == ("1", "0.24")


def test_image_and_half_even_rounding_per_line() -> None:
    # 2.5 GB x 10 h x 0.00005 = 0.00125 -> 0.00; floating ip 5 h x 0.005 = 0.025 -> 0.02
    # (half to even), 7 h -> 0.035 -> 0.04
    fip5, fip7, image = lines(  # statement order: by type, id, start
        item("image", at(2), at(2, 10), {"size_gb": 2.5}, rid="i1"),
        item("floating_ip", at(2), at(2, 5), {"ip_version": 4}, rid="f1"),
        item("floating_ip", at(2), at(2, 7), {"ip_version": 4}, rid="f2"),
    )
    assert (image["quantity"], image["amount_unrounded"], image["amount"]) == (
        "25", "0.00125", "0.00")
    assert (fip5["amount_unrounded"], fip5["amount"]) == ("0.025", "0.02")
    assert (fip7["amount_unrounded"], fip7["amount"]) == ("0.035", "0.04")


def test_subtotal_is_the_sum_of_rounded_lines() -> None:
    rated = rating.rate_intervals(
        [item("floating_ip", at(d), at(d, 5), rid=f"f{d}") for d in (2, 3, 4)],
        versions(V1), *OCT, AFTER)
    # three lines of 0.025 round to 0.02 each: 0.06, not round(0.075) = 0.08
    assert rating.subtotal(rated) == Decimal("0.06")


def test_loadbalancer_with_listeners_and_pools() -> None:
    (line,) = lines(item("loadbalancer", at(2), at(2, 10), {"listeners": 2, "pools": 3}))
    # 0.030 + 2 x 0.005 + 3 x 0.005 = 0.055 per hour, 10 h
    assert (line["rate"], line["amount"]) == ("0.055", "0.55")


def test_state_modifiers() -> None:
    shutoff, shelved = lines(
        item("instance", at(2), at(2, 10), SMALL, state="shutoff", rid="a"),
        item("instance", at(2), at(2, 10), SMALL, state="shelved", rid="b"),
    )
    assert (shutoff["modifier"], shutoff["amount"]) == ("0.5", "0.10")
    assert (shelved["modifier"], shelved["amount"], shelved["unrated"]) == ("0", "0.00", None)


def test_zero_rated_project() -> None:
    (line,) = lines(item("instance", at(2), at(2, 10), SMALL, project="p-free"))
    assert line["zero_rated"] is True and line["amount"] == "0.00" and line["unrated"] is None


def test_price_change_mid_month_splits_the_interval() -> None:
    first, second = lines(item("instance", at(15), at(17), SMALL), docs=(V1, V2))
    assert (first["start"], first["end"], first["price_list_version"], first["amount"]) == (
        "2026-10-15T00:00:00.000000Z", "2026-10-16T00:00:00.000000Z", "default/1", "0.48")
    assert (second["start"], second["end"], second["price_list_version"], second["amount"]) == (
        "2026-10-16T00:00:00.000000Z", "2026-10-17T00:00:00.000000Z", "default/2", "0.72")
    assert first["event_id"] == second["event_id"] == "e1"


def test_time_before_the_first_version_is_unrated() -> None:
    late = {**V1, "effective_from": "2026-10-02T00:00:00Z"}
    before, after = lines(item("floating_ip", at(1, 12), at(2, 12)), docs=(late,))
    assert before["unrated"] == "no price list in effect" and before["amount"] is None
    assert after["amount"] == "0.06"


def test_a_resource_moving_between_projects_is_billed_to_each() -> None:
    moved = [item("instance", at(2), at(3), SMALL, project="p1", event="e1"),
             item("instance", at(3), at(4), SMALL, project="p2", event="e2")]
    rated = rating.rate_intervals(moved, versions(V1), *OCT, AFTER)
    assert [(line.project_id, line.event_id, money.money(line.amount or Decimal(0)))
            for line in rated] == [("p1", "e1", "0.48"), ("p2", "e2", "0.48")]


def test_intervals_crossing_the_period_boundaries_are_clipped() -> None:
    before, after = lines(item("instance", at(30, 12, month=9), at(1, 12), SMALL, rid="a"),
                          item("instance", at(31, 12), at(1, 12, month=11), SMALL, rid="b"))
    assert (before["start"], before["quantity"], before["amount"]) == (
        "2026-10-01T00:00:00.000000Z", "12", "0.24")
    assert (after["end"], after["quantity"]) == ("2026-11-01T00:00:00.000000Z", "12")


def test_open_intervals_end_at_now() -> None:
    (line,) = lines(item("instance", at(9), None, SMALL), now=at(10))
    assert (line["end"], line["quantity"], line["amount"]) == (
        "2026-10-10T00:00:00.000000Z", "24", "0.48")
    assert lines(item("instance", at(11), None, SMALL), now=at(10)) == []


def test_quantities_that_are_not_finite_decimals_stay_exact_in_the_amount() -> None:
    # one second is 1/3600 h; 1 h 1 s at 0.020 = 0.0200055… -> 0.02
    (line,) = lines(item("instance", at(2), at(2) + dt.timedelta(hours=1, seconds=1), SMALL))
    assert line["quantity"] == "1.000277777778" and line["amount"] == "0.02"


@pytest.mark.parametrize(("value", "places", "expected"), [
    (Fraction(5, 1000), 2, "0.00"), (Fraction(15, 1000), 2, "0.02"), (Fraction(25, 1000), 2, "0.02"),
    (Fraction(25001, 1000000), 2, "0.03"), (Fraction(1, 3), 2, "0.33"), (Fraction(2, 3), 2, "0.67"),
])
def test_round_half_even(value: Fraction, places: int, expected: str) -> None:
    assert str(money.round_half_even(value, places)) == expected


@pytest.mark.parametrize(("currency", "rate", "expected"), [
    # 10 h active and 14 h shut off (x 0.5) at the rate, each line rounded half-even to
    # the currency's minor unit: JPY 12.5 -> 12 and 8.75 -> 9; KWD 0.1234 -> 0.123 and
    # 0.08638 -> 0.086; BHD (3 places) 0.0125 -> 0.012 (half to even) and 0.00875 ->
    # 0.009; EUR 0.125 -> 0.12 and 0.0875 -> 0.09.
    ("JPY", "1.25", (["12", "9"], "21")),
    ("KWD", "0.01234", (["0.123", "0.086"], "0.209")),
    ("BHD", "0.00125", (["0.012", "0.009"], "0.021")),
    ("EUR", "0.0125", (["0.12", "0.09"], "0.21")),
])
def test_amounts_are_rounded_to_the_currencys_minor_unit(
        currency: str, rate: str, expected: tuple[list[str], str]) -> None:
    document = {**V1, "currency": currency,
                "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": rate}}}}
    rated = rating.rate_intervals(
        [item("instance", at(2), at(2, 10), SMALL, event="e1"),
         item("instance", at(2, 10), at(3), SMALL, state="shutoff", event="e2")],
        versions(document), *OCT, AFTER)
    assert [line.as_dict()["amount"] for line in rated] == expected[0]
    assert money.money(rating.subtotal(rated), currencies.places(currency)) == expected[1]


@pytest.mark.parametrize(("value", "places", "shown"), [
    ("12", 0, "12"), ("12.00", 0, "12"), ("0.00", 3, "0.000"), ("1.2", 2, "1.20"),
    ("-3.12", 0, "-3.12"),  # a finer amount keeps its digits: never rounded away
    ("500", 2, "500.00"), ("0.1230", 3, "0.123"),
])
def test_money_shows_the_minor_units(value: str, places: int, shown: str) -> None:
    assert money.money(Decimal(value), places) == shown
