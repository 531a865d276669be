"""A statement line's JSON text, from its kind and its own few columns.

Every line of one kind (``reporting.billing.kinds``: version, type, state, size, and
so its price) renders alike but for its resource id, event id, bounds and length;
its quantity and amounts are the length × the kind's factor and price.  ``LineForm``
holds the constant text of a kind's lines once and renders a line from those columns
with integer arithmetic: exactly ``statements.text(rating.line_of(...).as_dict())``
(tests compare the two), without building the line, its fractions or its dict.  A
frozen statement (``reporting.billing.frozen``) and an open one rated set-based
(``reporting.billing.sql_rating.project_lines``) are rendered by it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) quotes with
from typing import Any

from mapping.event import format_timestamp
from reporting.billing import money
from reporting.billing.rating import Price


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _stamp(moment: dt.datetime) -> str:
    # ``format_timestamp`` of the naive UTC instants the databases hand back
    if moment.tzinfo is None:
        return moment.isoformat(timespec="microseconds") + "Z"
    return format_timestamp(moment)


@dataclasses.dataclass(frozen=True)
class LineForm:
    """The text of every line of one kind, zero-rated or not, rounded to ``places``."""

    head: str  # up to the resource id
    size: str  # from the resource id to the start
    version: str  # from the event id to the quantity
    rate: str  # from the quantity to the unrounded amount
    tail: str  # after the amount
    # quantity = micros × factor_a / factor_b; amount = micros × price_a / price_b
    factor_a: int
    factor_b: int
    price_a: int | None  # None: the amount is ``fixed_amount`` (zero-rated or unrated)
    price_b: int
    fixed_amount: str
    fixed_units: int | None  # the amount in minor units where price_a is None (None: unrated)
    places: int

    @classmethod
    def of(cls, resource_type: str, state: str | None, size: Any, label: str | None,
           unit: str | None, price: Price, zero_rated: bool, places: int) -> LineForm:
        """The form of ``rating.line_of``'s lines of this kind."""
        rate, modifier, unrated = price.rate, price.modifier, None
        per_hour = price.per_hour
        if zero_rated:
            fixed_amount = f'"0","amount":"{money.money(money.ZERO, places)}"'
            per_hour = None
        elif per_hour is None:
            rate, modifier, unrated = None, None, price.reason
            fixed_amount = 'null,"amount":null'
        else:
            fixed_amount = ""
        factor = price.factor if price.factor is not None else 1
        hour = money.MICROS_PER_HOUR
        return cls(
            head=f'{{"resource_type":{_json(resource_type)},"resource_id":',
            size=f',"state":{_json(state)},"size":{_json(size)},"start":"',
            version=f',"price_list_version":{_json(label)},"quantity":"',
            rate=(f'","unit":{_json(unit)},'
                  f'"rate":{_json(None if rate is None else money.text(rate))},'
                  f'"modifier":{_json(None if modifier is None else money.text(modifier))},'
                  f'"zero_rated":{_json(zero_rated)},"amount_unrounded":'),
            tail=f',"unrated":{_json(unrated)}}}',
            factor_a=factor.numerator, factor_b=hour * factor.denominator,
            price_a=None if per_hour is None else per_hour.numerator,
            price_b=hour * (1 if per_hour is None else per_hour.denominator),
            fixed_amount=fixed_amount, fixed_units=0 if zero_rated else None, places=places,
        )

    def units(self, micros: int) -> int | None:
        """The amount of a line of ``micros`` in minor units (None: unrated; 0:
        zero-rated)."""
        if self.price_a is None:
            return self.fixed_units
        return money.rounded_units(micros * self.price_a, self.price_b, self.places)

    def text(self, resource_id: str, event_id: str, start: dt.datetime, end: dt.datetime,
             micros: int) -> str:
        """The line's text (``micros``: the length of ``[start, end)``)."""
        shown = money.DISPLAY_PLACES
        quantity = money.display_units(money.rounded_units(
            micros * self.factor_a, self.factor_b, shown))
        if self.price_a is None:
            amounts = self.fixed_amount
        else:
            exact = micros * self.price_a
            unrounded = money.display_units(money.rounded_units(exact, self.price_b, shown))
            amount = money.fixed(money.rounded_units(exact, self.price_b, self.places),
                                 self.places)
            amounts = f'"{unrounded}","amount":"{amount}"'
        return (f'{self.head}{encode_basestring(resource_id)}{self.size}{_stamp(start)}'
                f'","end":"{_stamp(end)}","event_id":{encode_basestring(event_id)}'
                f'{self.version}{quantity}{self.rate}{amounts}{self.tail}')
