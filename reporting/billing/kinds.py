"""What the set-based rating prices in Python: each distinct (version, type, state,
size) of a period, once.

A line's price depends only on the price version in effect over it (a piece of it,
cut at its project terms' dates), its resource's type, state and size, and whether
its project has terms there (``reporting.billing.rating.price_of``).  A month of
a large cloud has about a million lines but a few dozen such kinds, so the
database finds the kinds (one grouping query), Python prices each with the pure
rating's own code, and the database then rates every line by joining its kind
(``reporting.billing.sql_rating``, ``reporting.billing.sql_close``): the prices
are the pure rating's by construction, and the database only multiplies, rounds and
sums.

A line's amount in minor units (cents of EUR, yen, fils of KWD) is
``round_half_even(micros * ca / cb)`` with ``ca / cb`` the kind's price per
microsecond in minor units as a reduced fraction.  In 64-bit integers
when ``2 * micros * ca + cb`` cannot overflow for any line of the period (every
ordinary price), else in ``NUMERIC`` (``big`` says which); both are exact.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from reporting.billing import money
from reporting.billing.pricelist import PriceVersion, unit_of
from reporting.billing.rating import Price, price_of

_INT64 = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class VersionRange:
    """``[start, end)`` priced by ``version`` (None: before the first version)."""

    number: int  # 0 before the first version, then 1, 2, ... in timeline order
    start: dt.datetime | None  # None: from the beginning of time
    end: dt.datetime | None  # None: until the end of time
    version: PriceVersion | None


def ranges(versions: Sequence[PriceVersion], start: dt.datetime, end: dt.datetime
           ) -> list[VersionRange]:
    """The ranges of the timeline ``versions`` that overlap ``[start, end)``."""
    found = []
    bounds: list[dt.datetime | None] = [None, *(v.effective_from for v in versions), None]
    for number in range(len(versions) + 1):
        low, high = bounds[number], bounds[number + 1]
        if (low is None or low < end) and (high is None or high > start):
            found.append(VersionRange(number, low, high,
                                      versions[number - 1] if number else None))
    return found


@dataclasses.dataclass(frozen=True)
class Kind:
    """One priced (version, type, state, size) of a period.

    The key columns are what the database joins a line on: the state as
    ``(state IS NULL, COALESCE(state, ''))`` (so NULL and '' stay apart) and the size
    as its stored JSON text (``'null'`` for none, which prices and renders alike)."""

    kid: int
    number: int  # the VersionRange it belongs to
    resource_type: str
    state_null: bool
    state: str
    size_text: str
    size: Any  # the size as the JSON column hands it back
    label: str | None  # the price list version, e.g. "default/2"
    unit: str | None
    price: Price
    places: int = money.MINOR_PLACES  # the decimals of its currency's minor unit
    # The project whose terms price it ('' for every project without terms then).
    project: str = ""

    @property
    def rated(self) -> bool:
        return self.price.per_hour is not None

    def minor_per_micro(self) -> Fraction | None:
        """The price per microsecond in minor units of the currency."""
        if self.price.per_hour is None:
            return None
        return self.price.per_hour * Fraction(10**self.places, money.MICROS_PER_HOUR)

    def integer_safe(self, max_micros: int) -> bool:
        """Whether ``2 * micros * ca + cb`` fits in 64 bits for every line."""
        per_micro = self.minor_per_micro()
        if per_micro is None:
            return False
        ca, cb = per_micro.numerator, per_micro.denominator
        return 2 * cb <= _INT64 and 2 * max_micros * ca + cb <= _INT64

    def size_json(self) -> str:
        """The size as a line renders it (compact, as ``statements.text`` writes it)."""
        return json.dumps(self.size, separators=(",", ":"), ensure_ascii=False)


# A kind as the database finds it: (resource_type, state_null, state, size_text, size,
# project): project '' for every project without terms, else the project with some.
Distinct = tuple[str, bool, str, str, Any, str]


def price(distinct: Iterable[Distinct], periods: Sequence[VersionRange]) -> list[Kind]:
    """Every ``(resource_type, state_null, state, size_text, size, project)`` priced by
    every range: for its project in a range with terms for it, for every project
    without terms elsewhere; numbered from 1 in a fixed order."""
    found: dict[tuple[int, str, str, bool, str, str], Kind] = {}
    for rtype, state_null, state, size_text, size, owner in sorted(
            distinct, key=lambda k: (k[5], *k[:4])):
        for period in periods:
            version = period.version
            project = owner if version is not None and owner in version.terms else ""
            key = (period.number, project, rtype, state_null, state, size_text)
            if key in found:
                continue
            found[key] = Kind(
                kid=0, number=period.number, resource_type=rtype, state_null=state_null,
                state=state, size_text=size_text, size=size,
                label=version.label if version else None, unit=unit_of(rtype, version),
                price=price_of(rtype, size, None if state_null else state, version,
                               project or None),
                places=version.minor_units if version is not None else money.MINOR_PLACES,
                project=project,
            )
    kinds = list(found.values())
    kinds.sort(key=lambda k: (k.number, k.project, k.resource_type, k.state_null, k.state,
                              k.size_text))
    return [dataclasses.replace(k, kid=n) for n, k in enumerate(kinds, 1)]


def decimal_text(value: Fraction) -> str:
    """A finite decimal fraction (a product of decimals) as its exact decimal text."""
    places = 0
    denominator = value.denominator
    while denominator % 10 == 0:
        denominator //= 10
        places += 1
    while denominator % 2 == 0 or denominator % 5 == 0:
        denominator //= 2 if denominator % 2 == 0 else 5
        places += 1
    if denominator != 1:
        raise ValueError(f"{value} is not a finite decimal")
    scaled = value * 10**places
    assert scaled.denominator == 1
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    sign = "-" if scaled < 0 else ""
    return sign + (digits[:-places] + "." + digits[-places:] if places else digits)
