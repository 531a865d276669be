"""Cutting a statement line at a membership's instant, computed by hand."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from fractions import Fraction

from reporting.billing.account_statements import clip
from reporting.billing.rating import Line

T0 = dt.datetime(2026, 10, 2)


def _line(hours: int, rate: str, places: int = 2) -> Line:
    exact = Fraction(hours) * Fraction(Decimal(rate))
    return Line("instance", "inst-a", "p1", "active", None, T0, T0 + dt.timedelta(hours=hours),
                "ev-1", "default/1", Fraction(hours), "hour", Decimal(rate), Decimal(1), False,
                exact, None, places)


def test_a_line_crossing_the_instant_is_split_in_proportion() -> None:
    line = _line(10, "0.020")  # 0.20
    moved = T0 + dt.timedelta(hours=5)
    before = clip(line, dt.datetime(2026, 10, 1), moved)
    after = clip(line, moved, dt.datetime(2026, 11, 1))
    assert before is not None and after is not None
    assert (before.start, before.end, before.quantity, before.amount) == (
        T0, moved, 5, Decimal("0.10"))
    assert (after.quantity, after.amount) == (5, Decimal("0.10"))
    assert before.exact_amount + after.exact_amount == line.exact_amount  # type: ignore[operator]


def test_each_part_is_rounded_on_its_own() -> None:
    # 1 h at 0.025 = 0.025 (0.02 half-even); cut at 20 min: 1/120 -> 0.01, 1/60 -> 0.02
    line = _line(1, "0.025")
    moved = T0 + dt.timedelta(minutes=20)
    first, second = clip(line, T0, moved), clip(line, moved, T0 + dt.timedelta(hours=1))
    assert first is not None and second is not None
    assert (line.amount, first.amount, second.amount) == (
        Decimal("0.02"), Decimal("0.01"), Decimal("0.02"))
    assert first.exact_amount == Fraction(1, 120) and second.exact_amount == Fraction(1, 60)


def test_outside_and_whole() -> None:
    line = _line(10, "0.020")
    assert clip(line, T0 + dt.timedelta(hours=10), T0 + dt.timedelta(hours=20)) is None
    assert clip(line, T0 - dt.timedelta(hours=1), T0 + dt.timedelta(hours=11)) is line
