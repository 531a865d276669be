"""Sized types: a resource type that is not built in, priced per hour or per hour ×
a member of its size that the price list names, hand-computed; what is refused."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from reporting.billing import kinds, pricelist
from tests.unit.billing.test_rating import OCT, V1, at, item, lines, versions

SHARE = {"per": "size_gb_hour", "size": "size_gb", "rate": "0.00002"}
GPU = {"per": "gpus_hour", "size": "gpus", "rate": "0.35"}
DNS = {"per": "hour", "rate": "0.0011"}
SIZED: dict[str, Any] = {
    **V1, "rates": {**V1["rates"], "share": SHARE, "gpu_server": GPU, "dns_zone": DNS},
    "state_modifiers": {**V1["state_modifiers"], "gpu_server": {"shutoff": "0.1"}},
}
SHARE_SCHEMA = {"type": "object", "properties": {"size_gb": {"type": "integer"}}}
GPU_SCHEMA = {"type": "object", "properties": {"gpus": {"type": "integer"},
                                               "flavor": {"type": "string"}}}
DNS_SCHEMA = {"type": "object"}
REGISTERED = {"share": [("openstack", SHARE_SCHEMA)], "gpu_server": [("openstack", GPU_SCHEMA)],
              "dns_zone": [("openstack", DNS_SCHEMA)]}


def test_a_share_is_priced_per_gib_hour_of_the_member_named() -> None:
    # 500 GiB for 30 h: 15000 GiB-h x 0.00002 = 0.30
    (line,) = lines(item("share", at(2), at(3, 6), {"size_gb": 500}), docs=(SIZED,))
    assert (line["quantity"], line["unit"], line["rate"], line["modifier"],
            line["amount_unrounded"], line["amount"]) == (
        "15000", "size_gb_hour", "0.00002", "1", "0.3", "0.30")


def test_a_gpu_flavor_family_is_priced_per_gpu_hour_with_its_state_modifier() -> None:
    # 4 GPUs: 10 h active = 40 GPU-h x 0.35 = 14.00; 5 h shut off = 20 GPU-h x 0.35 x 0.1
    # = 0.70; a 2-GPU server 1 h 30 min = 3 GPU-h x 0.35 = 1.05
    size4 = {"gpus": 4, "flavor": "g1.4xa100"}
    found = lines(item("gpu_server", at(2), at(2, 10), size4, event="e1"),
                  item("gpu_server", at(2, 10), at(2, 15), size4, state="shutoff", event="e2"),
                  item("gpu_server", at(4), at(4, 1) + (at(4, 1) - at(4)) / 2,
                       {"gpus": 2, "flavor": "g1.2xa100"}, rid="r2"),
                  docs=(SIZED,))
    assert [(x["quantity"], x["unit"], x["modifier"], x["amount"]) for x in found] == [
        ("40", "gpus_hour", "1", "14.00"), ("20", "gpus_hour", "0.1", "0.70"),
        ("3", "gpus_hour", "1", "1.05")]


def test_a_type_priced_per_hour_alone_ignores_its_size() -> None:
    # 24 h x 0.0011 = 0.0264 -> 0.03
    (line,) = lines(item("dns_zone", at(2), at(3), {"records": 40}), docs=(SIZED,))
    assert (line["quantity"], line["unit"], line["amount"]) == ("24", "hour", "0.03")


@pytest.mark.parametrize(("size", "reason"), [
    ({"size_gb": None}, "the size has no size_gb"),
    ({"gigabytes": 5}, "the size has no size_gb"),
    (None, "the size has no size_gb"),
    ({"size_gb": "5"}, "the size has no size_gb"),
])
def test_a_size_without_the_member_named_is_unrated(size: Any, reason: str) -> None:
    (line,) = lines(item("share", at(2), at(3), size), docs=(SIZED,))
    assert (line["unrated"], line["amount"], line["unit"]) == (reason, None, "size_gb_hour")


def test_a_version_without_the_type_leaves_its_lines_unrated() -> None:
    (line,) = lines(item("share", at(2), at(3), {"size_gb": 5}))
    assert line["unrated"] == "no rate for resource type share in price list default/1"
    assert line["unit"] is None


def test_kinds_carry_the_sized_unit_and_factor() -> None:
    timeline = versions(SIZED)
    found = kinds.price([("share", False, "available", '{"size_gb":500}', {"size_gb": 500}, "")],
                        kinds.ranges(timeline, *OCT))
    (kind,) = [k for k in found if k.label is not None]
    assert (kind.unit, kind.price.factor, kind.price.per_hour) == (
        "size_gb_hour", 500, Fraction(1, 100))


def _with(path: list[str], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(SIZED)
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return document


@pytest.mark.parametrize(("document", "reason"), [
    (_with(["rates", "share", "per"], "gb_hour"),
     'rates.share.per must be "size_gb_hour" (the size member it names: per hour × size_gb)'),
    (_with(["rates", "dns_zone", "per"], "zone_hour"),
     'rates.dns_zone.per must be "hour" (no size member: per hour)'),
    (_with(["rates", "share", "size"], "size gb"), "rates.share.size must name a member"),
    (_with(["rates", "share", "size"], 7), "rates.share.size must name a member"),
    (_with(["rates", "share", "rate"], 0.1), "rates.share.rate must be a non-negative decimal"),
    (_with(["rates", "share"], {"per": "hour"}), "rates.share.rate is required"),
    (_with(["rates", "share", "type_modifiers"], {}), "rates.share has unknown member(s): type_modifiers"),
    (_with(["rates", "Share"], DNS), "rates has a member 'Share' that is neither a built-in type"),
    (_with(["state_modifiers", "router"], {}), "state_modifiers has unknown member(s): router"),
])
def test_invalid_sized_rates_say_why(document: Any, reason: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse(document)
    assert reason in str(raised.value)


def test_registered_types_with_a_numeric_member_are_accepted() -> None:
    pricelist.check_registered(pricelist.parse(SIZED), REGISTERED)


@pytest.mark.parametrize(("registered", "reason"), [
    ({**REGISTERED, "share": []},
     "rates.share: share is not a registered resource type (register its size schema "
     "with PUT /v1/resource-types/{platform}/share first)"),
    ({**REGISTERED, "gpu_server": [("openstack", {"type": "object", "properties": {
        "gpus": {"type": "string"}}})]},
     "rates.gpu_server.size: no size schema registered for gpu_server (openstack/gpu_server) "
     "declares a numeric member 'gpus'"),
    ({**REGISTERED, "share": [("openstack", {"type": "object"}), ("other", {"properties": {}})]},
     "rates.share.size: no size schema registered for share (openstack/share, other/share) "
     "declares a numeric member 'size_gb'"),
])
def test_unregistered_types_and_members_are_refused(registered: Any, reason: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.check_registered(pricelist.parse(SIZED), registered)
    assert str(raised.value) == reason
