"""Exact money arithmetic: decimal strings in, ``Fraction`` inside, decimal strings out.

Durations are whole microseconds and an hour is 3,600,000,000 of them, so an hour
count is in general not a finite decimal (one second is 0.000277… h).  Amounts are
therefore computed as exact fractions and rounded once, half-even, to the minor
unit of the currency (``places``: its ISO 4217 minor units, ``reporting.billing.
currencies``; JPY 0, EUR 2, KWD 3); only the displayed quantity and unrounded amount
are cut to ``DISPLAY_PLACES``.

Decimal arithmetic runs in ``EXACT``: Python's default context keeps 28 significant
digits, so it would round a large amount silently (or refuse to quantize it), and a
price list may hold rates and modifiers of 12 digits each side of the point.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
)
from fractions import Fraction

MICROS_PER_HOUR = 3_600_000_000
MINOR_PLACES = 2  # hundredths: what ``places`` is when nothing says otherwise
DISPLAY_PLACES = 12  # quantity and amount_unrounded: finer than one microsecond of anything

# A rate or modifier on the wire: a non-negative decimal string, never a JSON number.
DECIMAL_TEXT = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,12})?\Z")


# Sums, differences and products of finite decimals are exact in this context.
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_HALF_EVEN,
                traps=[InvalidOperation, DivisionByZero, Overflow])
ZERO = Decimal("0.00")


def total(values: Iterable[Decimal], start: Decimal = ZERO) -> Decimal:
    """The exact sum of ``values`` (and ``start``)."""
    return functools.reduce(EXACT.add, values, start)


def add(left: Decimal, right: Decimal) -> Decimal:
    return EXACT.add(left, right)


def subtract(left: Decimal, right: Decimal) -> Decimal:
    return EXACT.subtract(left, right)


def multiply(left: Decimal, right: Decimal) -> Decimal:
    return EXACT.multiply(left, right)


def minor(count: int | Decimal, places: int) -> Decimal:
    """A whole number of minor units as an amount, exactly (``1234`` is ``12.34`` with
    two places, ``1.234`` with three, ``1234`` with none)."""
    return Decimal(count).scaleb(-places, context=EXACT)


class MoneyError(ValueError):
    """A value that is not a decimal string Tally accepts."""


def parse_decimal(value: object, where: str) -> Decimal:
    """A non-negative decimal string (``"0.020"``) as a Decimal; anything else raises."""
    if not isinstance(value, str) or not DECIMAL_TEXT.match(value):
        raise MoneyError(
            f"{where} must be a non-negative decimal string such as \"0.020\" "
            f"(got {value!r}); JSON numbers are refused because they are binary floats"
        )
    return Decimal(value)


def number_to_decimal(value: object) -> Decimal | None:
    """A size member (a JSON number) as the decimal its shortest text spells, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def to_fraction(value: Decimal) -> Fraction:
    return Fraction(value)


def round_half_even(value: Fraction, places: int = MINOR_PLACES) -> Decimal:
    """``value`` rounded half-even to ``places`` decimals, exactly (no float, no
    intermediate decimal rounding)."""
    whole = rounded_units(value.numerator, value.denominator, places)
    return Decimal(whole).scaleb(-places, context=EXACT)


def rounded_units(numerator: int, denominator: int, places: int = MINOR_PLACES) -> int:
    """``numerator / denominator`` (``denominator`` > 0) rounded half-even to ``places``
    decimals, as a whole number of ``10**-places``: ``round_half_even`` in integers
    (a Fraction product would reduce by a gcd on every line)."""
    whole, rest = divmod(numerator * 10**places, denominator)
    twice = 2 * rest
    if twice > denominator or (twice == denominator and whole % 2 == 1):
        whole += 1
    return whole


def fixed(units: int, places: int) -> str:
    """A whole number of ``10**-places`` as plain decimal text with ``places`` decimals:
    ``format(Decimal(units).scaleb(-places), "f")`` without the Decimal."""
    if not places:
        return str(units)
    digits = str(abs(units)).rjust(places + 1, "0")
    return ("-" if units < 0 else "") + digits[:-places] + "." + digits[-places:]


def display_units(units: int) -> str:
    """``display`` of a value already rounded to ``DISPLAY_PLACES`` (as ``rounded_units``)."""
    plain = fixed(units, DISPLAY_PLACES).rstrip("0").rstrip(".")
    return plain or "0"


def text(value: Decimal) -> str:
    """Plain decimal text, never exponent notation."""
    return format(value, "f")


def display(value: Fraction) -> str:
    """An exact value cut to ``DISPLAY_PLACES`` (half-even), trailing zeros dropped."""
    rounded = round_half_even(value, DISPLAY_PLACES)
    plain = format(rounded, "f")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain or "0"


def money(value: Decimal, places: int = MINOR_PLACES) -> str:
    """An amount with the minor unit's ``places`` decimals, e.g. ``"12.30"`` (EUR),
    ``"1230"`` (JPY), ``"12.300"`` (KWD).  Every amount Tally computes is already a
    whole number of minor units; one finer (an adjustment of a period closed when
    every currency was rounded to hundredths) keeps its digits: never rounded here."""
    exponent = value.normalize(context=EXACT).as_tuple().exponent
    shown = max(places, -exponent) if isinstance(exponent, int) else places
    return format(value.quantize(Decimal(1).scaleb(-shown), context=EXACT), "f")
