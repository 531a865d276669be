"""A line's text from its kind and columns (``line_texts.LineForm``) is the text of the
line the rating builds (``rating.line_of`` rendered by ``statements.text``)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from reporting.billing import money, rating, statements
from reporting.billing.line_texts import LineForm
from reporting.fold import Interval

START = dt.datetime(2026, 10, 1)


def _rendered(form_args: tuple, resource_id: str, event_id: str, start: dt.datetime,
              micros: int) -> tuple[str, str, int | None]:
    resource_type, state, size, label, unit, price, zero, places = form_args
    end = start + dt.timedelta(microseconds=micros)
    interval = Interval(start, end, "p1", state, size, event_id)
    line = rating.line_of(resource_type, resource_id, interval, start, end, label, unit,
                          price, zero, places)
    form = LineForm.of(*form_args)
    units = form.units(micros)
    expected = None if line.amount is None else int(line.amount.scaleb(places))
    assert units == expected
    return (statements.text(line.as_dict()),
            form.text(resource_id, event_id, start, end, micros), units)


def _price(rate: str | None, modifier: str | None, factor: Fraction | None,
           reason: str | None = None) -> rating.Price:
    if rate is None or modifier is None or factor is None or reason is not None:
        return rating.Price(factor, None if rate is None else Decimal(rate),
                            None if modifier is None else Decimal(modifier),
                            reason or "no rate", None)
    return rating.Price(factor, Decimal(rate), Decimal(modifier), None,
                        factor * Fraction(Decimal(rate)) * Fraction(Decimal(modifier)))


def test_a_hand_computed_line() -> None:
    # 90 minutes of a 20 GB volume at 0.0003 per GB-hour, modifier 0.5: 30 GB-hours,
    # 0.0045, rounded half-even to 0.00
    price = _price("0.0003", "0.5", Fraction(20))
    args = ("volume", "in-use", {"size_gb": 20, "type": "ssd"}, "default/1", "gb_hour",
            price, False, 2)
    expected, text, units = _rendered(args, "vol-1", "ev-1", START, 90 * 60 * 1_000_000)
    assert text == expected
    assert units == 0
    assert ('"quantity":"30","unit":"gb_hour","rate":"0.0003","modifier":"0.5",'
            '"zero_rated":false,"amount_unrounded":"0.0045","amount":"0.00","unrated":null}'
            ) in text


_IDS = ["i-1", 'say "hi"', "back\\slash", "tab\there", "nl\n", "\x01ctl", "ünïcødé €",
        "\u2028sep", "🙂", ""]


def test_random_kinds_and_lines_render_as_the_rating_does() -> None:
    rng = random.Random(20261001)
    for _ in range(3000):
        factor = rng.choice([None, Fraction(1), Fraction(rng.randint(0, 4000)),
                             Fraction(rng.randint(1, 10**6), 10**rng.randint(0, 12)),
                             Fraction(-rng.randint(1, 50))])
        rate = rng.choice([None, "0", "0.5", "0.000000000001", "999999999999.999999999999",
                           f"{rng.randint(0, 10**6)}.{rng.randint(0, 10**6):06d}"])
        modifier = rng.choice([None, "1", "0.5", "0.75", "0.000000000001", "2.125"])
        reason = rng.choice([None, None, None, "the size has no size_gb"])
        price = _price(rate, modifier, factor, reason)
        state = rng.choice([None, "", "active", 'sh"ut'])
        size = rng.choice([None, {}, {"flavor": "m1.small"}, {"size_gb": 1.5, "type": "ü"},
                           {"a": [1, 2.0, None], "b": {"c": "\n"}}])
        args = (rng.choice(["instance", "volume", "ty\"pe"]), state, size,
                rng.choice([None, "default/1", "ü/2"]), rng.choice([None, "hour", "gb_hour"]),
                price, rng.random() < 0.2, rng.choice([0, 2, 3]))
        micros = rng.choice([0, 1, 999_999, 3_600_000_000, 1_800_000_000,
                             rng.randint(0, 31 * 86_400 * 10**6)])
        start = START + dt.timedelta(microseconds=rng.randint(0, 10**13))
        expected, text, _units = _rendered(args, rng.choice(_IDS), rng.choice(_IDS),
                                           start, micros)
        assert text == expected, (args, micros)


@pytest.mark.parametrize("value", [
    Fraction(0), Fraction(1, 3), Fraction(5, 2 * 10**12), Fraction(15, 2 * 10**12),
    Fraction(-7, 3), Fraction(10**30 + 1, 10**12), Fraction(123456789, 1000),
])
def test_display_units_is_display(value: Fraction) -> None:
    units = money.rounded_units(value.numerator, value.denominator, money.DISPLAY_PLACES)
    assert money.display_units(units) == money.display(value)
    for places in (0, 2, 3):
        units = money.rounded_units(value.numerator, value.denominator, places)
        assert money.fixed(units, places) == money.money(money.round_half_even(value, places),
                                                         places)
