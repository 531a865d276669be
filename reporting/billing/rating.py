"""Rating: lifecycle intervals to statement lines, as pure functions (no I/O).

One line per lifecycle interval of a project's resources, clipped to the period,
to *now* (nothing is billed for time that has not happened) and cut at price
version boundaries.  ``amount`` is quantity × rate × modifier rounded half-even to
the currency's minor unit per line (``places``: the cent of EUR, the yen); a line Tally cannot rate says why in ``unrated`` and has no
amount (never a silent zero).  The database computes the same sums for the
per-project summaries (``reporting.billing.sql_rating``); tests keep both equal.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from mapping.event import format_timestamp
from reporting.billing import money
from reporting.billing.pricelist import (
    INSTANCE_RESOURCES,
    UNITS,
    PriceVersion,
    TypeRate,
    in_effect,
    unit_of,
)
from reporting.fold import Interval

_ONE = Decimal(1)


@dataclasses.dataclass(frozen=True)
class RatedInterval:
    """An interval with the identity of its resource."""

    resource_type: str
    resource_id: str
    interval: Interval


@dataclasses.dataclass(frozen=True)
class Line:
    resource_type: str
    resource_id: str
    project_id: str
    state: str | None
    size: dict[str, Any] | None
    start: dt.datetime
    end: dt.datetime
    event_id: str
    price_list_version: str | None
    quantity: Fraction
    unit: str | None
    rate: Decimal | None
    modifier: Decimal | None
    zero_rated: bool
    exact_amount: Fraction | None  # None when unrated
    unrated: str | None
    places: int = money.MINOR_PLACES  # the decimals of the currency's minor unit
    # The exact amount rounded half-even to the minor unit (None when unrated).
    amount: Decimal | None = dataclasses.field(init=False, compare=False)

    def __post_init__(self) -> None:
        amount = (None if self.exact_amount is None
                  else money.round_half_even(self.exact_amount, self.places))
        object.__setattr__(self, "amount", amount)

    def as_dict(self) -> dict[str, Any]:
        amount = self.amount
        return {
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "state": self.state,
            "size": self.size,
            "start": format_timestamp(self.start),
            "end": format_timestamp(self.end),
            "event_id": self.event_id,
            "price_list_version": self.price_list_version,
            "quantity": money.display(self.quantity),
            "unit": self.unit,
            "rate": None if self.rate is None else money.text(self.rate),
            "modifier": None if self.modifier is None else money.text(self.modifier),
            "zero_rated": self.zero_rated,
            "amount_unrounded": (
                None if self.exact_amount is None else money.display(self.exact_amount)
            ),
            "amount": None if amount is None else money.money(amount, self.places),
            "unrated": self.unrated,
        }


def _micros(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _size_number(size: Mapping[str, Any] | None, member: str) -> Decimal | None:
    if not size:
        return None
    return money.number_to_decimal(size.get(member))


def _no_flavor(flavor: Any) -> str:
    """Why a size names no flavor: none at all, or a value that is not a name."""
    if flavor is None:
        return "the size has no flavor"
    return f"the size's flavor {json.dumps(flavor, sort_keys=True)} is not a name"


def base_rate(
    resource_type: str, size: Mapping[str, Any] | None, version: PriceVersion,
    project: str | None = None,
) -> tuple[Decimal, Decimal] | str:
    """``(rate per unit, type modifier)`` for a resource of this size, or why it has none
    (in ``project``, whose terms may override the type's rates)."""
    term = version.terms.get(project) if project is not None else None
    rates = (term.rates.get(resource_type) if term is not None else None) or \
        version.rates.get(resource_type)
    if rates is None:
        return f"no rate for resource type {resource_type} in price list {version.label}"
    if resource_type == "instance":
        flavor = size.get("flavor") if size else None
        if isinstance(flavor, str) and flavor in rates.by_flavor:
            return rates.by_flavor[flavor], _ONE
        if rates.by_resources is None:
            if not isinstance(flavor, str):  # say what is missing, not "flavor None"
                return (f"{_no_flavor(flavor)} and price list {version.label} rates "
                        "instances by flavor only")
            return f"no rate for flavor {flavor} in price list {version.label}"
        total = Decimal(0)
        for member in INSTANCE_RESOURCES:
            if member not in rates.by_resources:
                continue
            amount = _size_number(size, member)
            if amount is None:
                if not isinstance(flavor, str):
                    return f"{_no_flavor(flavor)} and no {member}"
                return f"flavor {flavor} has no rate and the size has no {member}"
            total = money.add(total, money.multiply(amount, rates.by_resources[member]))
        return total, _ONE
    if resource_type == "volume":
        return _volume_rate(size, rates, version.label)
    assert rates.rate is not None
    if resource_type not in UNITS:  # a sized type: its size member is the quantity's factor
        return rates.rate, _ONE
    if resource_type == "loadbalancer":
        listeners = _size_number(size, "listeners") or Decimal(0)
        pools = _size_number(size, "pools") or Decimal(0)
        return money.total((rates.rate, money.multiply(listeners, rates.listener),
                            money.multiply(pools, rates.pool)), Decimal(0)), _ONE
    return rates.rate, _ONE


def _volume_rate(size: Mapping[str, Any] | None, rates: TypeRate, label: str
                 ) -> tuple[Decimal, Decimal] | str:
    """A volume's rate: its volume type's own (``by_volume_type``), else the entry's ×
    the type's modifier, or why it has none (the entry prices named types only)."""
    volume_type = size.get("type") if size else None
    if isinstance(volume_type, str) and volume_type in rates.by_volume_type:
        return rates.by_volume_type[volume_type], _ONE
    if rates.rate is None:
        if isinstance(volume_type, str):
            return f"no rate for volume type {volume_type} in price list {label}"
        what = ("the size has no volume type" if volume_type is None else
                f"the size's volume type {json.dumps(volume_type, sort_keys=True)} is not a name")
        return f"{what} and price list {label} rates volumes by volume type only"
    modifier = _ONE
    if isinstance(volume_type, str):
        modifier = rates.type_modifiers.get(volume_type, _ONE)
    return rates.rate, modifier


def _size_member(resource_type: str, version: PriceVersion | None) -> str | None:
    """The size member whose number multiplies the hours: ``size_gb`` of the gb_hour
    types, the member a sized type's rates name (None: hours alone)."""
    if UNITS.get(resource_type) == "gb_hour":
        return "size_gb"
    if resource_type in UNITS or version is None:
        return None
    rates = version.rates.get(resource_type)
    return None if rates is None else rates.size


@dataclasses.dataclass(frozen=True)
class _Price:
    """How one (version, type, state, size) is priced: the same for every line of it."""

    factor: Fraction | None  # GB for gb_hour types, 1 otherwise; None: no size_gb
    rate: Decimal | None
    modifier: Decimal | None
    reason: str | None  # why it is unrated (a zero-rated project still owes nothing)
    per_hour: Fraction | None  # factor x rate x modifier, when rated


def _price(resource_type: str, size: Mapping[str, Any] | None, state: str | None,
           version: PriceVersion | None, project: str | None = None) -> _Price:
    factor: Fraction | None = Fraction(1)
    reason: str | None = None
    member = _size_member(resource_type, version)
    if member is not None:
        number = _size_number(size, member)
        factor = None if number is None else Fraction(number)
        reason = f"the size has no {member}" if number is None else None
    priced = base_rate(resource_type, size, version, project) if version else None
    if version is None:
        reason = "no price list in effect"
    elif isinstance(priced, str):
        reason = priced
    if not isinstance(priced, tuple) or version is None:
        return _Price(factor, None, None, reason, None)
    rate, type_modifier = priced
    modifier = money.multiply(type_modifier, version.state_modifiers.get(resource_type, {}).get(
        state or "", _ONE))
    term = version.terms.get(project) if project is not None else None
    if term is not None and term.discount_percent:
        modifier = money.multiply(modifier, term.multiplier())  # the project's discount
    if reason is not None or factor is None:
        return _Price(factor, rate, modifier, reason, None)
    return _Price(factor, rate, modifier, None, factor * Fraction(rate) * Fraction(modifier))


# How a piece is priced, public: a close freezes it (``reporting.billing.frozen``).
Price = _Price
_PriceCache = dict[tuple[Any, ...], _Price]


def price_of(resource_type: str, size: Mapping[str, Any] | None, state: str | None,
             version: PriceVersion | None, project: str | None = None) -> Price:
    """How ``version`` prices a piece of this type, size and state (None: no version),
    in ``project`` when the version has terms for it (None: in every other project)."""
    return _price(resource_type, size, state, version, project)


def term_project(version: PriceVersion | None, project_id: str) -> str | None:
    """``project_id`` when ``version`` has terms for it over this piece, else None:
    every other project is priced alike."""
    return project_id if version is not None and project_id in version.terms else None


def _cached_price(cache: _PriceCache, resource_type: str, size: Mapping[str, Any] | None,
                  state: str | None, version: PriceVersion | None,
                  project: str | None) -> _Price:
    try:
        key: tuple[Any, ...] = (id(version), project, resource_type, state,
                                tuple(sorted(size.items())) if size else None)
        hash(key)
    except TypeError:  # a size holding lists or objects: priced without the cache
        return _price(resource_type, size, state, version, project)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _price(resource_type, size, state, version, project)
    return found


def rate_piece(
    item: RatedInterval,
    start: dt.datetime,
    end: dt.datetime,
    version: PriceVersion | None,
    cache: _PriceCache | None = None,
    places: int | None = None,
) -> Line:
    """The line of ``item``'s interval over ``[start, end)``, priced by ``version``
    and rounded to ``places`` (None: the minor units of the version's currency)."""
    interval = item.interval
    project = term_project(version, interval.project_id)
    price = (_cached_price(cache, item.resource_type, interval.size, interval.state, version,
                           project)
             if cache is not None
             else _price(item.resource_type, interval.size, interval.state, version, project))
    zero_rated = version is not None and interval.project_id in version.zero_rated_projects
    if places is None:
        places = version.minor_units if version is not None else money.MINOR_PLACES
    return line_of(item.resource_type, item.resource_id, interval, start, end,
                   version.label if version else None, unit_of(item.resource_type, version),
                   price,
                   zero_rated, places)


def line_of(resource_type: str, resource_id: str, interval: Interval, start: dt.datetime,
            end: dt.datetime, label: str | None, unit: str | None, price: Price,
            zero_rated: bool, places: int) -> Line:
    """The line of a piece ``[start, end)`` of ``interval`` priced by ``price``: the one
    construction of a line, for a statement computed now and for one a close froze
    (``reporting.billing.frozen`` keeps each piece's price, label and unit)."""
    micros = _micros(end - start)
    hours = Fraction(micros, money.MICROS_PER_HOUR)
    common: dict[str, Any] = {
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": interval.project_id,
        "state": interval.state,
        "size": interval.size,
        "start": start,
        "end": end,
        "event_id": interval.event_id,
        "price_list_version": label,
        "unit": unit,
        "quantity": hours * price.factor if price.factor is not None else hours,
        "places": places,
    }
    if zero_rated:
        # A zero-rated project owes nothing whatever its resources are.
        return Line(**common, rate=price.rate, modifier=price.modifier,
                    zero_rated=True, exact_amount=Fraction(0), unrated=None)
    if price.per_hour is None:
        return Line(**common, rate=None, modifier=None,
                    zero_rated=False, exact_amount=None, unrated=price.reason)
    amount = Fraction(micros * price.per_hour.numerator,
                      money.MICROS_PER_HOUR * price.per_hour.denominator)
    return Line(**common, rate=price.rate, modifier=price.modifier,
                zero_rated=False, exact_amount=amount, unrated=None)


def clip(interval: Interval, start: dt.datetime, end: dt.datetime, now: dt.datetime
         ) -> tuple[dt.datetime, dt.datetime] | None:
    """The part of ``interval`` inside ``[start, end)`` that has happened by ``now``."""
    stop = min(end, now) if interval.end is None else min(interval.end, end, now)
    begin = max(interval.start, start)
    return (begin, stop) if stop > begin else None


def rate_intervals(
    items: Iterable[RatedInterval],
    versions: list[PriceVersion],
    period_start: dt.datetime,
    period_end: dt.datetime,
    now: dt.datetime,
    places: int | None = None,
) -> list[Line]:
    """Every line of ``items`` in ``[period_start, period_end)``, in statement order,
    rounded to ``places`` (None: each version's currency's minor units)."""
    lines: list[Line] = []
    cache: _PriceCache = {}
    for item in items:
        clipped = clip(item.interval, period_start, period_end, now)
        if clipped is None:
            continue
        for start, end, version in in_effect(versions, *clipped):
            lines.append(rate_piece(item, start, end, version, cache, places))
    lines.sort(key=lambda line: (line.resource_type, line.resource_id, line.start))
    return lines


def subtotal(lines: Iterable[Line]) -> Decimal:
    """The sum of the rounded amounts (unrated lines count nothing)."""
    return money.total(line.amount for line in lines if line.amount is not None)


def resource_amounts(lines: Iterable[Line]) -> dict[tuple[str, str], Decimal]:
    """Rounded amount per (resource_type, resource_id): what adjustments compare."""
    totals: dict[tuple[str, str], Decimal] = {}
    for line in lines:
        if line.amount is not None:
            key = (line.resource_type, line.resource_id)
            totals[key] = money.add(totals.get(key, money.ZERO), line.amount)
    return totals
