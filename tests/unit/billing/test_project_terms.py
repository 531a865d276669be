"""A project's dated terms in a price version: its own rates and a percentage
discount, hand-computed, cutting lines at their dates; what is refused and why."""

from __future__ import annotations

import copy
import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from reporting.billing import kinds, pricelist, rating
from tests.unit.billing.test_rating import AFTER, OCT, SMALL, V1, at, item
from tests.unit.billing.test_sized_types import SIZED

TERMS: dict[str, Any] = {"p-big": [
    {"from": "2026-10-10T00:00:00Z", "until": "2026-10-20T00:00:00Z", "discount_percent": "10",
     "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.015"}}}},
    {"from": "2026-10-20T00:00:00Z", "discount_percent": "12.5"},
]}
WITH_TERMS: dict[str, Any] = {**V1, "project_terms": TERMS}


def timeline(*documents: dict[str, Any]) -> list[pricelist.PriceVersion]:
    return pricelist.expand([pricelist.parse(d, f"default/{n}")
                             for n, d in enumerate(documents, 1)])


def rated(*items: rating.RatedInterval, docs: tuple[dict[str, Any], ...] = (WITH_TERMS,)
          ) -> list[dict[str, Any]]:
    return [line.as_dict() for line in rating.rate_intervals(items, timeline(*docs), *OCT,
                                                             AFTER)]


def test_terms_cut_the_version_where_they_begin_and_end() -> None:
    pieces = timeline(WITH_TERMS)
    assert [(p.label, p.effective_from, sorted(p.terms)) for p in pieces] == [
        ("default/1", at(1), []), ("default/1", at(10), ["p-big"]),
        ("default/1", at(20), ["p-big"])]
    assert pieces[1].terms["p-big"].discount_percent == Decimal("10")
    assert pieces[2].terms["p-big"].rates == {}


def test_an_override_and_a_discount_price_the_project_from_their_dates() -> None:
    found = rated(item("instance", at(8), at(22), SMALL, project="p-big"),
                  item("instance", at(8), at(22), SMALL, project="p1", rid="r2"))
    assert [(x["resource_id"], x["start"][:10], x["quantity"], x["rate"], x["modifier"],
             x["price_list_version"], x["amount_unrounded"], x["amount"]) for x in found] == [
        # before its terms: 48 h x 0.020 = 0.96
        ("r1", "2026-10-08", "48", "0.020", "1", "default/1", "0.96", "0.96"),
        # its own rate and 10 % off: 240 h x 0.015 x 0.90 = 3.24
        ("r1", "2026-10-10", "240", "0.015", "0.90", "default/1", "3.24", "3.24"),
        # the version's rate, 12.5 % off: 48 h x 0.020 x 0.875 = 0.84
        ("r1", "2026-10-20", "48", "0.020", "0.875", "default/1", "0.84", "0.84"),
        # another project: its lines are cut there too, priced as ever (336 h x 0.020)
        ("r2", "2026-10-08", "48", "0.020", "1", "default/1", "0.96", "0.96"),
        ("r2", "2026-10-10", "240", "0.020", "1", "default/1", "4.8", "4.80"),
        ("r2", "2026-10-20", "48", "0.020", "1", "default/1", "0.96", "0.96"),
    ]


def test_a_discount_multiplies_the_state_modifier_and_rounds_once_per_line() -> None:
    found = rated(
        item("instance", at(15), at(15, 10), SMALL, state="shutoff", project="p-big"),
        item("floating_ip", at(21), at(21, 10), {"ip_version": 4}, project="p-big", rid="f"))
    assert [(x["modifier"], x["amount_unrounded"], x["amount"]) for x in found] == [
        # 10 h x 0.005 x 0.875 = 0.04375 -> 0.04
        ("0.875", "0.04375", "0.04"),
        # 10 h x 0.015 x 0.5 (shutoff) x 0.90 = 0.0675 -> 0.07 (half-even)
        ("0.450", "0.0675", "0.07")]


def test_zero_rated_wins_and_a_full_discount_bills_nothing() -> None:
    document = {**V1, "zero_rated_projects": ["p-big"], "project_terms": {
        "p-big": [{"discount_percent": "50"}], "p-all": [{"discount_percent": "100"}]}}
    found = rated(item("instance", at(2), at(3), SMALL, project="p-big"),
                  item("instance", at(2), at(3), SMALL, project="p-all", rid="r2"),
                  docs=(document,))
    assert [(x["zero_rated"], x["modifier"], x["amount"]) for x in found] == [
        (True, "0.50", "0.00"), (False, "0.00", "0.00")]


def test_terms_end_with_their_version() -> None:
    later = {**V1, "effective_from": "2026-10-15T00:00:00Z"}
    found = rated(item("instance", at(8), at(17), SMALL, project="p-big"),
                  docs=(WITH_TERMS, later))
    assert [(x["start"][:10], x["price_list_version"], x["rate"], x["modifier"], x["amount"])
            for x in found] == [
        ("2026-10-08", "default/1", "0.020", "1", "0.96"),
        # 5 days x 24 h x 0.015 x 0.90 = 1.62
        ("2026-10-10", "default/1", "0.015", "0.90", "1.62"),
        # default/2 has no terms: 48 h x 0.020
        ("2026-10-15", "default/2", "0.020", "1", "0.96")]


def test_kinds_price_each_project_with_terms_apart() -> None:
    ranges = kinds.ranges(timeline(WITH_TERMS), *OCT)
    found = kinds.price([("instance", False, "active", "{}", SMALL, ""),
                         ("instance", False, "active", "{}", SMALL, "p-big")], ranges)
    assert [(k.number, k.project, k.price.rate, k.price.modifier) for k in found] == [
        (1, "", Decimal("0.020"), Decimal("1")),
        (2, "", Decimal("0.020"), Decimal("1")),
        (2, "p-big", Decimal("0.015"), Decimal("0.90")),
        (3, "", Decimal("0.020"), Decimal("1")),
        (3, "p-big", Decimal("0.020"), Decimal("0.875"))]
    assert [k.kid for k in found] == [1, 2, 3, 4, 5]


def _terms(*terms: Any, base: dict[str, Any] = V1) -> dict[str, Any]:
    return {**copy.deepcopy(base), "project_terms": {"p1": list(terms)}}


@pytest.mark.parametrize(("document", "reason"), [
    ({**V1, "project_terms": []}, "project_terms must be an object"),
    ({**V1, "project_terms": {"p1": []}}, "project_terms.p1 must be a non-empty list of terms"),
    ({**V1, "project_terms": {"": [{"discount_percent": "1"}]}},
     "a key of project_terms must be a non-empty string"),
    (_terms({"from": "2026-10-02T00:00:00Z"}),
     "project_terms.p1[0] needs discount_percent or rates"),
    (_terms({"discount_percent": "1", "percent": "2"}),
     "project_terms.p1[0] has unknown member(s): percent"),
    (_terms({"discount_percent": 10}),
     "project_terms.p1[0].discount_percent must be a non-negative decimal string"),
    (_terms({"discount_percent": "100.5"}),
     "project_terms.p1[0].discount_percent must be at most 100"),
    (_terms({"discount_percent": "1", "from": "2026-09-30T00:00:00Z"}),
     "project_terms.p1[0].from falls before the version's effective_from"),
    (_terms({"discount_percent": "1", "from": "2026-10-05"}),
     "project_terms.p1[0].from must be an RFC 3339 timestamp"),
    (_terms({"discount_percent": "1", "from": "2026-10-05T00:00:00Z",
             "until": "2026-10-05T00:00:00Z"}),
     "project_terms.p1[0].until must be after its from"),
    (_terms({"discount_percent": "1", "until": "2026-10-06T00:00:00Z"},
            {"discount_percent": "2", "from": "2026-10-05T00:00:00Z"}),
     "project_terms.p1 has terms that overlap; each instant has one"),
    (_terms({"discount_percent": "1"}, {"discount_percent": "2", "from": "2026-10-05T00:00:00Z"}),
     "project_terms.p1 has terms that overlap"),
    (_terms({"rates": {"router": {"per": "hour", "rate": "1"}}}),
     "project_terms.p1[0].rates.router: the version has no rates.router to override"),
    (_terms({"rates": {"instance": {"per": "hour"}}}),
     "project_terms.p1[0].rates.instance needs by_flavor or by_resources"),
    (_terms({"rates": {"volume": {"per": "hour", "rate": "1"}}}),
     'project_terms.p1[0].rates.volume.per must be "gb_hour"'),
    (_terms({"rates": {"share": {"per": "hour", "rate": "1"}}}, base=SIZED),
     "project_terms.p1[0].rates.share.size must be 'size_gb' as in rates.share: an override "
     "changes prices, not what a line counts"),
])
def test_invalid_terms_say_why(document: Any, reason: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse(document)
    assert reason in str(raised.value)


def test_terms_in_an_aware_offset_are_read_in_utc() -> None:
    version = pricelist.parse(_terms({"discount_percent": "5", "from": "2026-10-05T02:00:00+02:00"}))
    (term,) = version.project_terms["p1"]
    assert (term.start, term.end) == (dt.datetime(2026, 10, 5), None)
