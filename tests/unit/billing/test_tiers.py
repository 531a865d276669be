"""Tiers over a project's period quantity, hand-computed (docs/statements.md, "Tiers"):
graduated and volume, with modifiers, versions, terms, zero-rated and unrated lines;
what a price list may not say."""

from __future__ import annotations

import copy
import itertools
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from reporting.billing import money, pricelist, rating, statements, tiers
from tests.unit.billing.test_rating import AFTER, OCT, V1, at, item, versions

GRADUATED = {"per": "gb_hour", "mode": "graduated", "type_modifiers": {"ssd": "1.5"},
             "tiers": [{"up_to": "500", "rate": "0.0002"}, {"up_to": None, "rate": "0.0001"}]}
VOLUME = {**GRADUATED, "mode": "volume"}
FIP = {"per": "hour", "mode": "graduated",
       "tiers": [{"up_to": "100", "rate": "0.005"}, {"up_to": "500", "rate": "0.004"},
                 {"up_to": None, "rate": "0.003"}]}

TIERS_OF_HOURS = [{"up_to": "100", "rate": "0.020"}, {"up_to": None, "rate": "0.010"}]


def doc(**rates: Any) -> dict[str, Any]:
    return {**V1, "rates": {**V1["rates"], **rates}}


def statement(*items: rating.RatedInterval, docs: tuple[dict[str, Any], ...]
              ) -> dict[str, Any]:
    timeline = pricelist.expand(versions(*docs))
    lines = rating.rate_intervals(items, timeline, *OCT, AFTER)
    return statements.document(
        cloud="c1", project_id="p1", period="2026-10", currency_code="EUR", closed=False,
        computed_at=AFTER, lines=lines, adjustments=[],
        tier_lines=tiers.tier_lines(lines, timeline))


def gb(size: int, **more: Any) -> dict[str, Any]:
    return {"size_gb": size, **more}


def test_graduated_1000_gb_hours_are_500_at_the_first_rate_and_500_at_the_second() -> None:
    # one 50 GB volume for 20 h: 1000 GB-h; 500 x 0.0002 + 500 x 0.0001 = 0.15.
    # The line is priced at the first tier's rate (0.20), its tier line brings it to 0.15.
    found = statement(item("volume", at(2), at(2, 20), gb(50)), docs=(doc(volume=GRADUATED),))
    (line,) = found["lines"]
    assert (line["quantity"], line["rate"], line["amount"]) == ("1000", "0.0002", "0.20")
    (tier,) = found["tiers"]
    assert tier == {
        "resource_type": "volume", "price_list_version": "default/1", "flavor": None,
        "mode": "graduated",
        "quantity": "1000", "unit": "gb_hour", "modified_quantity": "1000", "rate": "0.0002",
        "tiers": [{"up_to": "500", "rate": "0.0002", "quantity": "500"},
                  {"up_to": None, "rate": "0.0001", "quantity": "500"}],
        "amount_at_rate_unrounded": "0.2", "amount_tiered_unrounded": "0.15",
        "amount_unrounded": "-0.05", "amount": "-0.05"}
    assert found["subtotal"] == "0.15" and found["total"] == "0.15"


def test_volume_prices_the_whole_quantity_at_the_tier_it_reaches() -> None:
    # 1000 GB-h reach the second tier: 1000 x 0.0001 = 0.10 (tier line -0.10)
    found = statement(item("volume", at(2), at(2, 20), gb(50)), docs=(doc(volume=VOLUME),))
    (tier,) = found["tiers"]
    assert tier["tiers"] == [{"up_to": None, "rate": "0.0001", "quantity": "1000"}]
    assert (tier["amount"], found["subtotal"]) == ("-0.10", "0.10")
    # exactly 500 GB-h is in the first tier (up_to is inclusive): 500 x 0.0002 = 0.10
    found = statement(item("volume", at(2), at(2, 10), gb(50)), docs=(doc(volume=VOLUME),))
    assert (found["tiers"][0]["tiers"][0]["up_to"], found["tiers"][0]["amount"],
            found["subtotal"]) == ("500", "0.00", "0.10")


def test_the_quantity_is_the_projects_period_over_its_resources_and_lines() -> None:
    # three floating IPs of 240 h: 720 h = 100 x 0.005 + 400 x 0.004 + 220 x 0.003
    # = 0.50 + 1.60 + 0.66 = 2.76; the lines are 3 x 1.20 = 3.60, the tier line -0.84
    ips = [item("floating_ip", at(2), at(12), rid=f"fip-{n}") for n in range(3)]
    found = statement(*ips, docs=(doc(floating_ip=FIP),))
    assert [x["amount"] for x in found["lines"]] == ["1.20"] * 3
    (tier,) = found["tiers"]
    assert [x["quantity"] for x in tier["tiers"]] == ["100", "400", "220"]
    assert (tier["amount_tiered_unrounded"], tier["amount"], found["subtotal"]) == (
        "2.76", "-0.84", "2.76")


def test_modifiers_multiply_each_line_and_the_tier_line_is_rounded_once() -> None:
    # 500 GB-h of ssd (x 1.5) and 500 GB-h plain: Q = 1000, P(Q) = 0.15, W = 1250;
    # tiered 0.15 / 1000 x 1250 = 0.1875; lines 0.15 + 0.10 = 0.25; tier line
    # -0.0625 -> -0.06 (half-even); subtotal 0.19
    found = statement(item("volume", at(2), at(2, 20), gb(25, type="ssd"), rid="vol-a"),
                      item("volume", at(2), at(2, 20), gb(25), rid="vol-b"),
                      docs=(doc(volume=GRADUATED),))
    assert [x["amount"] for x in found["lines"]] == ["0.15", "0.10"]
    (tier,) = found["tiers"]
    assert (tier["quantity"], tier["modified_quantity"], tier["amount_tiered_unrounded"],
            tier["amount_unrounded"], tier["amount"]) == (
        "1000", "1250", "0.1875", "-0.0625", "-0.06")
    assert found["subtotal"] == "0.19"


def test_the_tier_line_does_not_depend_on_the_order_lines_arrive_in() -> None:
    pieces = [item("volume", at(2), at(2, 7), gb(40, type="ssd"), rid="a", event="e1"),
              item("volume", at(2, 7), at(3, 1), gb(40), rid="a", state="in-use", event="e2"),
              item("volume", at(5), at(6), gb(3), rid="b"),
              item("volume", at(9), at(9, 13), gb(11, type="ssd"), rid="c")]
    seen = {(statement(*order, docs=(doc(volume=GRADUATED),))["subtotal"],
             statement(*order, docs=(doc(volume=GRADUATED),))["tiers"][0]["amount_unrounded"])
            for order in itertools.permutations(pieces)}
    # Q = 280 + 720 + 72 + 143 = 1215: 500 x 0.0002 + 715 x 0.0001 = 0.1715;
    # W = 280 x 1.5 + 720 + 72 + 143 x 1.5 = 1426.5
    # tier line 0.1715 / 1215 x 1426.5 - 0.0002 x 1426.5 = -0.0839462962... -> -0.08;
    # lines 0.084 -> 0.08, 0.144 -> 0.14, 0.0144 -> 0.01, 0.0429 -> 0.04: 0.27; 0.19
    exact = (Fraction("0.1715") / 1215 - Fraction("0.0002")) * Fraction("1426.5")
    assert seen == {("0.19", money.display(exact))}
    assert money.display(exact) == "-0.083946296296"


def test_each_version_prices_the_quantity_it_priced_with_its_own_tiers() -> None:
    # default/1 prices 2 to 12 Oct (500 GB-h of a 50 GB volume over 10 h... each version
    # a 20 h stretch): under default/1 1000 GB-h graduated = 0.15; default/2 from the 16th
    # is plain 0.0001: its 1000 GB-h are 0.10 and have no tier line
    v2 = {**doc(volume={"per": "gb_hour", "rate": "0.0001"}),
          "effective_from": "2026-10-16T00:00:00Z"}
    found = statement(item("volume", at(2), at(2, 20), gb(50), rid="a"),
                      item("volume", at(20), at(20, 20), gb(50), rid="b"),
                      docs=(doc(volume=GRADUATED), v2))
    assert [(x["price_list_version"], x["amount"]) for x in found["lines"]] == [
        ("default/1", "0.20"), ("default/2", "0.10")]
    assert [(x["price_list_version"], x["amount"]) for x in found["tiers"]] == [
        ("default/1", "-0.05")]
    assert found["subtotal"] == "0.25"


def test_unrated_zero_rated_and_other_projects_lines_are_in_no_group() -> None:
    timeline = versions(doc(volume=GRADUATED))
    lines = rating.rate_intervals([
        item("volume", at(2), at(2, 20), gb(50), project="p1"),
        item("volume", at(2), at(2, 20), gb(50), project="p2", rid="r2"),
        item("volume", at(2), at(2, 20), gb(50), project="p-free", rid="r3"),
        item("volume", at(2), at(2, 20), {"gigabytes": 50}, project="p1", rid="r4"),
    ], timeline, *OCT, AFTER)
    found = tiers.tier_lines(lines, timeline)
    assert [(x.project_id, x.quantity, x.amount) for x in found] == [
        ("p1", 1000, Decimal("-0.05")), ("p2", 1000, Decimal("-0.05"))]


def test_a_terms_rate_replaces_the_tiers_a_discount_is_a_modifier() -> None:
    # p1 has 10 % off from the 10th: its 1000 GB-h there weigh 900 (W), so the
    # tier line is 0.15 x 0.9 - 0.18 = -0.045 -> -0.04; p1's own rate from the 20th
    # prices its lines there without tiers
    terms = {"p1": [{"from": "2026-10-10T00:00:00Z", "until": "2026-10-20T00:00:00Z",
                     "discount_percent": "10"},
                    {"from": "2026-10-20T00:00:00Z",
                     "rates": {"volume": {"per": "gb_hour", "rate": "0.0003"}}}]}
    found = statement(item("volume", at(12), at(12, 20), gb(50), rid="a"),
                      item("volume", at(22), at(22, 20), gb(50), rid="b"),
                      docs=({**doc(volume=GRADUATED), "project_terms": terms},))
    assert [x["amount"] for x in found["lines"]] == ["0.18", "0.30"]
    (tier,) = found["tiers"]
    assert (tier["quantity"], tier["modified_quantity"], tier["amount_unrounded"],
            tier["amount"]) == ("1000", "900", "-0.045", "-0.04")
    assert found["subtotal"] == "0.44"


def test_a_sized_type_and_an_image_take_tiers_too() -> None:
    # a 500 GiB share for 30 h: 15000 size_gb-h reach the second tier (volume):
    # 15000 x 0.00001 = 0.15 (the line 0.30 at the first tier's rate, the tier line -0.15)
    share = {"per": "size_gb_hour", "size": "size_gb", "mode": "volume",
             "tiers": [{"up_to": "10000", "rate": "0.00002"},
                       {"up_to": None, "rate": "0.00001"}]}
    image = {"per": "gb_hour", "mode": "graduated", "tiers": GRADUATED["tiers"]}
    found = statement(item("share", at(2), at(3, 6), {"size_gb": 500}),
                      item("image", at(2), at(2, 20), gb(50), rid="img"),
                      docs=(doc(share=share, image=image),))
    assert [(x["resource_type"], x["amount"]) for x in found["lines"]] == [
        ("image", "0.20"), ("share", "0.30")]
    assert [(x["resource_type"], x["unit"], x["amount"]) for x in found["tiers"]] == [
        ("image", "gb_hour", "-0.05"), ("share", "size_gb_hour", "-0.15")]
    assert found["subtotal"] == "0.30"


def test_an_instance_flavor_takes_tiers_over_its_hours_each_flavor_its_own() -> None:
    # m1.small graduated 0-100 h at 0.020, above at 0.010: two of 80 h, 160 h = 2.00 +
    # 0.60 = 2.60 (lines 2 x 1.60, tier line -0.60); m1.large by volume, 0-50 h at 0.08,
    # above at 0.06: 60 h x 0.06 = 3.60 (line 4.80, tier line -1.20); a flavor priced by
    # by_resources and one with a plain rate have no tier line
    instance = {"per": "hour", "by_flavor": {
        "m1.small": {"mode": "graduated", "tiers": [{"up_to": "100", "rate": "0.020"},
                                                    {"up_to": None, "rate": "0.010"}]},
        "m1.large": {"mode": "volume", "tiers": [{"up_to": "50", "rate": "0.08"},
                                                 {"up_to": None, "rate": "0.06"}]},
        "m1.medium": "0.040"}, "by_resources": {"vcpus": "0.010"}}
    found = statement(
        item("instance", at(2), at(5, 8), {"flavor": "m1.small"}, rid="a"),
        item("instance", at(2), at(5, 8), {"flavor": "m1.small"}, rid="b"),
        item("instance", at(2), at(4, 12), {"flavor": "m1.large"}, rid="c"),
        item("instance", at(2), at(3), {"flavor": "m1.medium"}, rid="d"),
        item("instance", at(2), at(3), {"flavor": "custom", "vcpus": 2}, rid="e"),
        docs=(doc(instance=instance),))
    assert [x["amount"] for x in found["lines"]] == ["1.60", "1.60", "4.80", "0.96", "0.48"]
    assert [(x["flavor"], x["mode"], x["quantity"], x["amount"]) for x in found["tiers"]] == [
        ("m1.large", "volume", "60", "-1.20"), ("m1.small", "graduated", "160", "-0.60")]
    assert found["subtotal"] == "7.64"  # 2.60 + 3.60 + 0.96 + 0.48


@pytest.mark.parametrize(("flavor", "message"), [
    ({"mode": "volume"}, 'rates.instance.by_flavor.m1.small must be a rate or {"mode", "tiers"}'),
    ({"tiers": TIERS_OF_HOURS}, 'rates.instance.by_flavor.m1.small.mode must be "graduated"'),
    ({"mode": "volume", "tiers": [{"up_to": "5", "rate": "1"}]},
     "rates.instance.by_flavor.m1.small.tiers[0].up_to must be null"),
    ({"mode": "volume", "tiers": TIERS_OF_HOURS, "rate": "1"},
     "rates.instance.by_flavor.m1.small has unknown member(s): rate"),
])
def test_bad_flavor_tiers_are_refused_naming_the_flavor(flavor: dict[str, Any],
                                                        message: str) -> None:
    instance = {"per": "hour", "by_flavor": {"m1.small": flavor}}
    assert message in _refused({"instance": instance})


def test_a_statement_without_tiers_has_no_tiers_member() -> None:
    found = statement(item("volume", at(2), at(2, 20), gb(50)), docs=(V1,))
    assert "tiers" not in found and found["subtotal"] == "0.10"  # 1000 x 0.00010


def _refused(rates: dict[str, Any], **more: Any) -> str:
    document = copy.deepcopy(doc(**rates)) | more
    with pytest.raises(pricelist.PriceListError) as caught:
        pricelist.parse(document)
    return str(caught.value)


TIERS = GRADUATED["tiers"]


@pytest.mark.parametrize(("entry", "message"), [
    ({**GRADUATED, "rate": "0.1"}, "rates.volume has both rate and tiers: give one"),
    ({**GRADUATED, "mode": "stairs"}, 'rates.volume.mode must be "graduated" or "volume"'),
    ({k: v for k, v in GRADUATED.items() if k != "mode"},
     'rates.volume.mode must be "graduated" or "volume"'),
    ({"per": "gb_hour", "rate": "0.1", "mode": "volume"},
     "rates.volume.mode is only a member with tiers"),
    ({**GRADUATED, "tiers": []}, "rates.volume.tiers must be a non-empty list of tiers"),
    ({**GRADUATED, "tiers": {"up_to": None, "rate": "1"}},
     "rates.volume.tiers must be a non-empty list"),
    ({**GRADUATED, "tiers": [{"up_to": "500", "rate": "0.1"}]},
     "rates.volume.tiers[0].up_to must be null: the last tier is open"),
    ({**GRADUATED, "tiers": [{"up_to": None, "rate": "0.1"}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].up_to is null but tiers follow it"),
    ({**GRADUATED, "tiers": [{"up_to": "500", "rate": "0.1"}, {"up_to": "500", "rate": "0"},
                             {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[1].up_to must be greater than rates.volume.tiers[0].up_to (500)"),
    ({**GRADUATED, "tiers": [{"up_to": "0", "rate": "0.1"}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].up_to must be greater than 0"),
    ({**GRADUATED, "tiers": [{"up_to": 500, "rate": "0.1"}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].up_to must be a non-negative decimal string"),
    ({**GRADUATED, "tiers": [{"up_to": "500", "rate": 0.1}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].rate must be a non-negative decimal string"),
    ({**GRADUATED, "tiers": [{"up_to": "500", "rate": "-1"}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].rate must be a non-negative decimal string"),
    ({**GRADUATED, "tiers": [{"up_to": "500", "rate": "1", "from": "0"},
                             {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0] has unknown member(s): from"),
    ({**GRADUATED, "tiers": [{"rate": "1"}, {"up_to": None, "rate": "0"}]},
     "rates.volume.tiers[0].up_to is required (null for the last tier)"),
    ({**GRADUATED, "tiers": [{"up_to": None}]}, "rates.volume.tiers[0].rate is required"),
    ({**GRADUATED, "tiers": ["0.1"]}, "rates.volume.tiers[0] must be an object"),
])
def test_bad_tiers_are_refused_naming_the_member(entry: dict[str, Any], message: str) -> None:
    assert message in _refused({"volume": entry})


def test_tiers_are_refused_where_a_rate_is_not_one_number() -> None:
    # an instance's tiers are per flavor (by_flavor), never over all its flavors
    instance = {"per": "hour", "by_flavor": {"m1.small": "0.02"}, "mode": "volume",
                "tiers": TIERS}
    assert "rates.instance has unknown member(s): mode, tiers" in _refused(
        {"instance": instance})
    loadbalancer = {"per": "hour", "rate": "0.03", "tiers": TIERS}
    assert "rates.loadbalancer has unknown member(s): tiers" in _refused(
        {"loadbalancer": loadbalancer})


def test_a_terms_override_may_not_give_tiers() -> None:
    terms = {"p1": [{"rates": {"volume": GRADUATED}}]}
    assert ("project_terms.p1[0].rates.volume.tiers: a project's terms give a rate, "
            "not tiers") in _refused({"volume": GRADUATED}, project_terms=terms)
    tiered = {"per": "hour", "by_flavor": {"m1.small": {"mode": "volume",
                                                        "tiers": TIERS_OF_HOURS}}}
    terms = {"p1": [{"rates": {"instance": tiered}}]}
    assert ("project_terms.p1[0].rates.instance.by_flavor.m1.small.tiers: a project's "
            "terms give a rate") in _refused({"instance": tiered}, project_terms=terms)
