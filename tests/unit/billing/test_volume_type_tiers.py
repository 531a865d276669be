"""A volume type's own rate or tiers (``rates.volume.by_volume_type``), hand-computed
(docs/statements.md, "Tiers"): each volume type with tiers its own group beside the
type-wide one, modifiers, terms, unrated volumes; what a price list may not say."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from reporting.billing import pricelist, rating, tiers
from tests.unit.billing.test_rating import AFTER, OCT, at, item, versions
from tests.unit.billing.test_tiers import GRADUATED, _refused, doc, gb, statement

SSD = {"mode": "graduated", "tiers": [{"up_to": "500", "rate": "0.0004"},
                                      {"up_to": None, "rate": "0.0002"}]}
BULK = {"mode": "volume", "tiers": [{"up_to": "1000", "rate": "0.00005"},
                                    {"up_to": None, "rate": "0.00002"}]}
BY_TYPE = {"per": "gb_hour", "rate": "0.00010", "type_modifiers": {"standard": "1.5"},
           "by_volume_type": {"ssd": SSD, "bulk": BULK, "archive": "0.00001"}}


def test_each_volume_type_with_tiers_is_its_own_group() -> None:
    # vol-a ssd 50 GB x 20 h = 1000 GB-h, graduated: 500 x 0.0004 + 500 x 0.0002 = 0.30;
    #   its line at the first tier's rate 1000 x 0.0004 = 0.40, the tier line -0.10
    # vol-b bulk 100 GB x 20 h = 2000 GB-h, by volume: 2000 > 1000 reaches the second
    #   tier, 2000 x 0.00002 = 0.04; the line 2000 x 0.00005 = 0.10, the tier line -0.06
    # vol-c archive 100 GB x 10 h = 1000 GB-h x 0.00001 = 0.01, a plain rate: no group
    # vol-d standard 10 GB x 10 h = 100 GB-h x 0.0001 x 1.5 = 0.015 -> 0.02 (half-even)
    # vol-e without a type 100 GB-h x 0.0001 = 0.01
    # subtotal 0.40 + 0.10 + 0.01 + 0.02 + 0.01 - 0.06 - 0.10 = 0.38
    found = statement(item("volume", at(2), at(2, 20), gb(50, type="ssd"), rid="vol-a"),
                      item("volume", at(2), at(2, 20), gb(100, type="bulk"), rid="vol-b"),
                      item("volume", at(2), at(2, 10), gb(100, type="archive"), rid="vol-c"),
                      item("volume", at(2), at(2, 10), gb(10, type="standard"), rid="vol-d"),
                      item("volume", at(2), at(2, 10), gb(10), rid="vol-e"),
                      docs=(doc(volume=BY_TYPE),))
    assert [(x["rate"], x["modifier"], x["amount"]) for x in found["lines"]] == [
        ("0.0004", "1", "0.40"), ("0.00005", "1", "0.10"), ("0.00001", "1", "0.01"),
        ("0.00010", "1.5", "0.02"), ("0.00010", "1", "0.01")]
    bulk, ssd = found["tiers"]  # by volume type's name
    assert ssd == {
        "resource_type": "volume", "price_list_version": "default/1", "flavor": None,
        "volume_type": "ssd", "mode": "graduated", "quantity": "1000", "unit": "gb_hour",
        "modified_quantity": "1000", "rate": "0.0004",
        "tiers": [{"up_to": "500", "rate": "0.0004", "quantity": "500"},
                  {"up_to": None, "rate": "0.0002", "quantity": "500"}],
        "amount_at_rate_unrounded": "0.4", "amount_tiered_unrounded": "0.3",
        "amount_unrounded": "-0.1", "amount": "-0.10"}
    assert (bulk["volume_type"], bulk["mode"], bulk["quantity"], bulk["tiers"],
            bulk["amount"]) == ("bulk", "volume", "2000",
                                [{"up_to": None, "rate": "0.00002", "quantity": "2000"}],
                                "-0.06")
    assert found["subtotal"] == "0.38"


def test_the_type_wide_tiers_group_the_volume_types_not_named() -> None:
    # type-wide graduated (0-500 at 0.0002, above at 0.0001, ssd x 1.5): vol-a plain
    #   1000 GB-h and vol-b ssd 500 GB-h: Q = 1500, P(Q) = 0.10 + 0.10 = 0.20,
    #   W = 1000 + 750 = 1750, owed 0.20 / 1500 x 1750 = 0.2333..., the lines
    #   0.20 + 0.15 = 0.35 = 0.0002 x W: tier line -0.11666... -> -0.12
    # fast graduated (0-100 at 0.001, above at 0.0005): vol-c 300 GB-h and vol-d 100
    #   GB-h in-use (x 0.5): Q = 400, P(Q) = 0.10 + 0.15 = 0.25, W = 300 + 50 = 350,
    #   owed 0.25 / 400 x 350 = 0.21875, the lines 0.30 + 0.05 = 0.35: tier line
    #   -0.13125 -> -0.13
    # subtotal 0.20 + 0.15 + 0.30 + 0.05 - 0.12 - 0.13 = 0.45
    fast = {"mode": "graduated", "tiers": [{"up_to": "100", "rate": "0.001"},
                                           {"up_to": None, "rate": "0.0005"}]}
    document = {**doc(volume={**GRADUATED, "by_volume_type": {"fast": fast}}),
                "state_modifiers": {"volume": {"in-use": "0.5"}}}
    found = statement(item("volume", at(2), at(2, 20), gb(50), rid="vol-a"),
                      item("volume", at(2), at(2, 20), gb(25, type="ssd"), rid="vol-b"),
                      item("volume", at(2), at(3, 6), gb(10, type="fast"), rid="vol-c"),
                      item("volume", at(4), at(4, 10), gb(10, type="fast"), state="in-use",
                           rid="vol-d"),
                      docs=(document,))
    assert [x["amount"] for x in found["lines"]] == ["0.20", "0.15", "0.30", "0.05"]
    assert [(x.get("volume_type"), x["quantity"], x["modified_quantity"],
             x["amount_unrounded"], x["amount"]) for x in found["tiers"]] == [
        (None, "1500", "1750", "-0.116666666667", "-0.12"),
        ("fast", "400", "350", "-0.13125", "-0.13")]
    assert "volume_type" not in found["tiers"][0]  # the type-wide line is what it was
    assert found["subtotal"] == "0.45"


def test_a_volume_types_tier_line_is_adjusted_apart_from_the_type_wides() -> None:
    timeline = versions(doc(volume={**GRADUATED, "by_volume_type": {"fast": SSD}}))
    lines = rating.rate_intervals([
        item("volume", at(2), at(2, 20), gb(50), rid="a"),
        item("volume", at(2), at(2, 20), gb(50, type="fast"), rid="b"),
    ], timeline, *OCT, AFTER)
    found = tiers.tier_lines(lines, timeline)
    assert [x.adjusted_as for x in found] == [("volume", "default/1"),
                                              ("volume", "default/1[fast]")]
    assert tiers.adjusted_ids(timeline) == {"default/1", "default/1[fast]"}
    assert tiers.tiered_types(versions(doc(volume={
        "per": "gb_hour", "rate": "0.0001", "by_volume_type": {"fast": SSD}}))) == {"volume"}
    assert tiers.tiered_types(versions(doc(volume={
        "per": "gb_hour", "rate": "0.0001", "by_volume_type": {"fast": "0.0002"}}))) == set()


def test_without_a_type_wide_rate_only_the_volume_types_named_are_rated() -> None:
    volume = {"per": "gb_hour", "by_volume_type": {"ssd": "0.0003"}}
    found = statement(item("volume", at(2), at(2, 10), gb(10, type="ssd"), rid="a"),
                      item("volume", at(2), at(2, 10), gb(10, type="hdd"), rid="b"),
                      item("volume", at(2), at(2, 10), gb(10), rid="c"),
                      item("volume", at(2), at(2, 10), gb(10, type=["ssd"]), rid="d"),
                      docs=(doc(volume=volume),))
    # 100 GB-h x 0.0003 = 0.03; the others say why they have no rate
    assert [(x["amount"], x["unrated"]) for x in found["lines"]] == [
        ("0.03", None),
        (None, "no rate for volume type hdd in price list default/1"),
        (None, "the size has no volume type and price list default/1 rates volumes by "
               "volume type only"),
        (None, 'the size\'s volume type ["ssd"] is not a name and price list default/1 '
               "rates volumes by volume type only")]
    assert "tiers" not in found and found["unrated_lines"] == 3


def test_a_term_may_give_volume_types_rates_never_tiers() -> None:
    # p1's own volume rates from the 10th: ssd at 0.0001, the type-wide 0.00005; its
    # ssd volume's 1000 GB-h before are in the ssd group (graduated: 0.30, tier line
    # -0.10), those after priced at the term's 0.0001 (0.10) in no group
    terms = {"p1": [{"from": "2026-10-10T00:00:00Z", "rates": {"volume": {
        "per": "gb_hour", "rate": "0.00005", "by_volume_type": {"ssd": "0.0001"}}}}]}
    found = statement(item("volume", at(2), at(2, 20), gb(50, type="ssd"), rid="a"),
                      item("volume", at(12), at(12, 20), gb(50, type="ssd"), rid="b"),
                      item("volume", at(12), at(12, 20), gb(50), rid="c"),
                      docs=({**doc(volume=BY_TYPE), "project_terms": terms},))
    assert [x["amount"] for x in found["lines"]] == ["0.40", "0.10", "0.05"]
    assert [(x["volume_type"], x["quantity"], x["amount"]) for x in found["tiers"]] == [
        ("ssd", "1000", "-0.10")]
    assert found["subtotal"] == "0.45"
    terms = {"p1": [{"rates": {"volume": {"per": "gb_hour", "by_volume_type": {"ssd": SSD}}}}]}
    assert ("project_terms.p1[0].rates.volume.by_volume_type.ssd.tiers: a project's terms "
            "give a rate, not tiers") in _refused({"volume": BY_TYPE}, project_terms=terms)


@pytest.mark.parametrize(("entry", "message"), [
    ({"bulk": {**BULK, "tiers": [{"up_to": "500", "rate": "1"}, {"up_to": "100", "rate": "1"},
                                 {"up_to": None, "rate": "0"}]}},
     "rates.volume.by_volume_type.bulk.tiers[1].up_to must be greater than "
     "rates.volume.by_volume_type.bulk.tiers[0].up_to (500)"),
    ({"bulk": {"mode": "volume"}},
     'rates.volume.by_volume_type.bulk must be a rate or {"mode", "tiers"}'),
    ({"bulk": {"tiers": BULK["tiers"]}},
     'rates.volume.by_volume_type.bulk.mode must be "graduated" or "volume"'),
    ({"bulk": {**BULK, "rate": "1"}},
     "rates.volume.by_volume_type.bulk has unknown member(s): rate"),
    ({"bulk": {**BULK, "tiers": [{"up_to": "5", "rate": "1"}]}},
     "rates.volume.by_volume_type.bulk.tiers[0].up_to must be null"),
    ({"bulk": "-1"}, "rates.volume.by_volume_type.bulk must be a non-negative decimal string"),
    ({"": "1"}, "a key of rates.volume.by_volume_type must be a non-empty string"),
    (["bulk"], "rates.volume.by_volume_type must be an object"),
])
def test_bad_volume_type_rates_are_refused_naming_the_path(entry: Any, message: str) -> None:
    volume = {"per": "gb_hour", "rate": "0.0001", "by_volume_type": entry}
    assert message in _refused({"volume": volume})


def test_a_volume_type_is_priced_by_its_own_entry_or_a_modifier_never_both() -> None:
    volume = {"per": "gb_hour", "rate": "0.0001", "type_modifiers": {"ssd": "1.5"},
              "by_volume_type": {"ssd": SSD}}
    assert ("rates.volume.type_modifiers.ssd and rates.volume.by_volume_type.ssd both "
            "price volume type ssd: give one") in _refused({"volume": volume})


def test_a_volume_entry_needs_a_rate_unless_it_names_volume_types() -> None:
    assert "rates.volume.rate is required" in _refused({"volume": {
        "per": "gb_hour", "by_volume_type": {}}})
    assert "rates.volume.mode is only a member with tiers" in _refused({"volume": {
        "per": "gb_hour", "mode": "volume", "by_volume_type": {"ssd": "1"}}})
    parsed = pricelist.parse(doc(volume={"per": "gb_hour", "by_volume_type": {
        "ssd": "0.0003", "bulk": BULK}}))
    rates = parsed.rates["volume"]
    assert (rates.rate, rates.by_volume_type, list(rates.volume_type_tiers)) == (
        None, {"ssd": Decimal("0.0003"), "bulk": Decimal("0.00005")}, ["bulk"])
