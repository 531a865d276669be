"""Price list documents: what is accepted and why anything else is refused."""

from __future__ import annotations

import copy
import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from reporting.billing import pricelist
from tests.unit.billing.test_rating import V1


def test_a_full_document_parses() -> None:
    version = pricelist.parse(V1, "default/1")
    assert version.effective_from == dt.datetime(2026, 10, 1)
    assert version.currency == "EUR" and version.zero_rated_projects == {"p-free"}
    assert version.rates["volume"].type_modifiers == {"ssd": Decimal("1.5")}
    assert version.state_modifiers["instance"]["shutoff"] == Decimal("0.5")


def _without(path: list[str]) -> dict[str, Any]:
    document = copy.deepcopy(V1)
    node = document
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return document


def _with(path: list[str], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(V1)
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return document


@pytest.mark.parametrize(("document", "reason"), [
    ([], "the price list must be an object"),
    (_with(["rates", "floating_ip", "rate"], 0.005), "rates.floating_ip.rate must be a non-negative decimal string"),
    (_with(["rates", "floating_ip", "rate"], "-1"), "rates.floating_ip.rate must be a non-negative decimal string"),
    (_with(["rates", "floating_ip", "rate"], "1e-3"), "rates.floating_ip.rate must be"),
    (_with(["rates", "volume", "per"], "hour"), 'rates.volume.per must be "gb_hour"'),
    (_without(["rates", "image", "rate"]), "rates.image.rate is required"),
    (_with(["rates", "instance"], {"per": "hour"}), "rates.instance needs by_flavor or by_resources"),
    (_with(["rates", "instance", "by_resources"], {"gpus": "1"}), "unknown member(s): gpus"),
    (_with(["rates", "Network"], {"per": "hour", "rate": "1"}), "rates has a member 'Network' that is neither"),
    (_with(["rate"], {}), "the price list has unknown member(s): rate"),
    (_with(["currency"], "eur"), "currency must be an ISO 4217 code"),
    (_without(["currency"]), "currency must be an ISO 4217 code"),
    (_with(["effective_from"], "2026-10-01"), "effective_from must be an RFC 3339 timestamp"),
    (_without(["rates"]), "rates must be an object"),
    (_with(["zero_rated_projects"], "p1"), "zero_rated_projects must be a list"),
    (_with(["zero_rated_projects"], [""]), "zero_rated_projects entry must be a non-empty string"),
    (_with(["state_modifiers", "instance", "shutoff"], 0.5), "state_modifiers.instance.shutoff must be"),
    (_with(["state_modifiers", "router"], {}), "state_modifiers has unknown member(s): router"),
])
def test_invalid_documents_say_why(document: Any, reason: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse(document)
    assert reason in str(raised.value)


def test_in_effect_cuts_at_version_boundaries() -> None:
    v1 = pricelist.parse(V1, "a/1")
    v2 = pricelist.parse({**V1, "effective_from": "2026-10-16T00:00:00Z"}, "a/2")
    start, end = dt.datetime(2026, 9, 30), dt.datetime(2026, 10, 20)
    assert pricelist.in_effect([v1, v2], start, end) == [
        (start, dt.datetime(2026, 10, 1), None),
        (dt.datetime(2026, 10, 1), dt.datetime(2026, 10, 16), v1),
        (dt.datetime(2026, 10, 16), end, v2),
    ]
    assert pricelist.in_effect([v1, v2], dt.datetime(2026, 10, 17), end) == [
        (dt.datetime(2026, 10, 17), end, v2)]


@pytest.mark.parametrize(("document", "reason"), [
    (_with(["zero_rated_projects"], ["p\x00"]),
     "zero_rated_projects[0] holds a NUL character (U+0000)"),
    (_with(["zero_rated_projects"], ["ok", "\udc00"]),
     "zero_rated_projects[1] holds a lone surrogate (U+DC00)"),
    (_with(["rates", "instance", "by_flavor"], {"m1\x00": "0.020"}),
     "the member name 'm1\\x00' of rates.instance.by_flavor holds a NUL character"),
    (_with(["rates", "volume", "type_modifiers"], {"ssd\ud83d": "1.5"}),
     "holds a lone surrogate (U+D83D)"),
    (_with(["state_modifiers", "instance"], {"shut\x00off": "0.5"}),
     "of state_modifiers.instance holds a NUL"),
    (_with(["effective_from"], "2026-10-01T00:00:00Z\x00"), "effective_from holds a NUL"),
    (_with(["currency"], "EU\x00"), "currency holds a NUL"),
    (_with(["rates", "floating_ip", "per"], "hour\udfff"), "rates.floating_ip.per holds a lone"),
    ({**V1, "oops\x00": 1}, "the member name 'oops\\x00' of the price list holds a NUL"),
])
def test_a_new_version_holds_only_storable_text(document: Any, reason: str) -> None:
    """Text PostgreSQL cannot hold (NUL) or UTF-8 cannot encode (a lone surrogate),
    anywhere in the document: refused at PUT, where it was accepted and then broke
    every statement it prices."""
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse_new(document, None)
    assert reason in str(raised.value)


@pytest.mark.parametrize(("code", "places"), [
    ("EUR", 2), ("USD", 2), ("JPY", 0), ("KRW", 0), ("KWD", 3), ("BHD", 3), ("CLF", 4)])
def test_the_currency_is_iso_4217_with_its_minor_units(code: str, places: int) -> None:
    version = pricelist.parse_new({**V1, "currency": code}, None)
    assert (version.currency, version.minor_units) == (code, places)


@pytest.mark.parametrize("code", ["XYZ", "ABC", "DEM", "XXX", "XAU", "XDR"])
def test_a_code_outside_iso_4217_or_without_minor_unit_is_refused(code: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse_new({**V1, "currency": code}, None)
    assert f"currency {code} is not an ISO 4217 code with a minor unit" in str(raised.value)


def test_a_code_already_stored_stays_usable_in_hundredths() -> None:
    """A deployment that stored XYZ before the check keeps pricing (every version
    must use one currency, so refusing it would leave no version addable)."""
    version = pricelist.parse_new({**V1, "currency": "XYZ"}, "XYZ")
    assert version.minor_units == 2
    assert pricelist.parse({**V1, "currency": "XYZ"}).minor_units == 2
