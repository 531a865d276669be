"""ISO 4217 currencies and their minor units, from the ``iso4217`` package's copy of
the standard's table (JPY 0 decimals, EUR 2, KWD 3, CLF 4)."""

from __future__ import annotations

from iso4217 import Currency

# Amounts were rounded to hundredths in every currency before minor units were
# followed: a code stored then that the table does not know keeps that rounding.
LEGACY_PLACES = 2


def minor_units(code: str) -> int | None:
    """The number of decimals of ``code``'s minor unit; None when ``code`` is not an
    ISO 4217 code or has no minor unit (``XXX``, ``XAU``: funds and metals)."""
    try:
        return Currency(code).exponent
    except ValueError:
        return None


def places(code: str | None) -> int:
    """The decimals amounts in ``code`` are rounded to: its minor units; hundredths for
    no currency (a statement no version priced) and for a code stored before codes were
    checked against ISO 4217."""
    found = minor_units(code) if code is not None else None
    return LEGACY_PLACES if found is None else found
