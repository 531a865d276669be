"""The kinds the set-based rating prices in Python: version ranges, exact decimal
texts, and when a kind's cents fit in 64-bit integers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from fractions import Fraction

import pytest

from reporting.billing import kinds, rating
from tests.unit.billing.test_rating import V1, V2, versions

OCT, NOV = dt.datetime(2026, 10, 1), dt.datetime(2026, 11, 1)
V1_FROM, V2_FROM = dt.datetime(2026, 10, 1), dt.datetime(2026, 10, 16)


def test_ranges_cover_the_period_with_the_versions_in_effect() -> None:
    timeline = versions(V1, V2)
    found = kinds.ranges(timeline, dt.datetime(2026, 9, 1), NOV)
    assert [(r.number, r.start, r.end, r.version) for r in found] == [
        (0, None, V1_FROM, None), (1, V1_FROM, V2_FROM, timeline[0]),
        (2, V2_FROM, None, timeline[1])]
    assert [r.number for r in kinds.ranges(timeline, dt.datetime(2026, 10, 20), NOV)] == [2]
    assert [r.number for r in kinds.ranges([], OCT, NOV)] == [0]


@pytest.mark.parametrize(("value", "text"), [
    (Fraction(0), "0"), (Fraction(1, 8), "0.125"), (Fraction(-3, 2), "-1.5"),
    (Fraction(Decimal("0.0000185185183500")), "0.00001851851835"),
    (Fraction(10**30 + 1, 10**12), "1000000000000000000.000000000001"),
])
def test_decimal_text_is_exact(value: Fraction, text: str) -> None:
    assert kinds.decimal_text(value) == text
    assert Fraction(Decimal(text)) == value


def test_decimal_text_refuses_a_fraction_without_a_finite_decimal() -> None:
    with pytest.raises(ValueError, match="not a finite decimal"):
        kinds.decimal_text(Fraction(1, 3))


def _kind(rate: str) -> kinds.Kind:
    price = rating.Price(Fraction(1), Decimal(rate), Decimal(1), None, Fraction(Decimal(rate)))
    return kinds.Kind(1, 1, "instance", False, "active", "null", None, "default/1", "hour", price)


def test_cents_take_64_bit_integers_only_when_no_line_can_overflow() -> None:
    month = 31 * 86_400 * 1_000_000
    assert _kind("0.020").integer_safe(month)
    assert not _kind("999999999999.999999999999").integer_safe(month)
    # 2 * micros * ca + cb at the 64-bit boundary, either side
    per_micro = _kind("1").minor_per_micro()
    assert per_micro == Fraction(1, 36_000_000)
    limit = (2**63 - 1 - per_micro.denominator) // (2 * per_micro.numerator)
    assert _kind("1").integer_safe(limit) and not _kind("1").integer_safe(limit + 1)
    unrated = kinds.Kind(1, 1, "image", False, "", "null", None, None, "gb_hour",
                         rating.price_of("image", None, None, None))
    assert not unrated.rated and unrated.minor_per_micro() is None
