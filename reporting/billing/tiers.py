"""Tiers: a type's rate by the quantity of a project's whole period (pure, no I/O).

A rate entry with ``tiers`` (``pricelist.Tier``) prices each line at the first tier's
rate, as any rate; the project's statement then carries one **tier line** per
(price list version, type, and flavor for an instance flavor's tiers or volume type
for a volume type's) whose lines it priced, bringing those lines to the tiered
price of their total quantity ``Q`` (docs/statements.md, "Tiers"):

- ``graduated``: ``P(Q)`` = each slice of ``Q`` at its tier's rate;
  ``volume``: ``P(Q)`` = ``Q`` × the rate of the tier ``Q`` reaches (``up_to`` inclusive);
- modifiers still multiply each line: with ``W`` = Σ quantity × modifier, the group
  owes ``P(Q) / Q × W`` (``P(Q)`` itself when every modifier is 1), its lines
  ``rate₀ × W`` exactly, and the tier line the difference, **rounded once** to the
  minor unit like a line.

A tier line depends only on the sums of its lines, never on their order, so a
statement computed now, a close and a recomputation give the same one; a line keeps
its own amount, so frozen lines and per-resource adjustments are what they were, and
a group's tier line is adjusted as one more item (``adjustments``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from reporting.billing import money
from reporting.billing.pricelist import PriceVersion, Tier
from reporting.billing.rating import Line


@dataclasses.dataclass(frozen=True)
class TierLine:
    """What tiers change of one project's lines of one type under one version."""

    project_id: str
    resource_type: str
    price_list_version: str
    flavor: str | None  # an instance flavor's tiers; None: the type's (or a volume type's)
    mode: str
    unit: str | None
    rate: Decimal  # the first tier's: what the lines are priced at
    quantity: Fraction  # Q, the lines' quantities summed
    modified_quantity: Fraction  # W, each quantity × its line's modifier, summed
    slices: tuple[tuple[Tier, Fraction], ...]  # the tiers reached, with what each priced
    tiered: Fraction  # P(Q) / Q × W
    exact_amount: Fraction  # tiered − rate × W
    places: int = money.MINOR_PLACES
    volume_type: str | None = None  # a volume type's tiers (``by_volume_type``)
    amount: Decimal = dataclasses.field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "amount", money.round_half_even(self.exact_amount, self.places))

    @property
    def adjusted_as(self) -> tuple[str, str]:
        """The (resource_type, resource_id) an adjustment of this tier line names: its
        type and ``adjusted_id``, which no resource id can be (a label holds a ``/``,
        which ingest refuses in a resource id); one for every flavor's tiers."""
        return self.resource_type, adjusted_id(self.price_list_version, self.volume_type)

    def as_dict(self) -> dict[str, Any]:
        # ``volume_type`` only on a volume type's tier line: every other tier line (and
        # so every statement frozen before volume types had tiers) is what it was
        named = {} if self.volume_type is None else {"volume_type": self.volume_type}
        return {
            "resource_type": self.resource_type,
            "price_list_version": self.price_list_version,
            "flavor": self.flavor,
            **named,
            "mode": self.mode,
            "quantity": money.display(self.quantity),
            "unit": self.unit,
            "modified_quantity": money.display(self.modified_quantity),
            "rate": money.text(self.rate),
            "tiers": [{"up_to": None if tier.up_to is None else money.text(tier.up_to),
                       "rate": money.text(tier.rate), "quantity": money.display(part)}
                      for tier, part in self.slices],
            "amount_at_rate_unrounded": money.display(Fraction(self.rate)
                                                      * self.modified_quantity),
            "amount_tiered_unrounded": money.display(self.tiered),
            "amount_unrounded": money.display(self.exact_amount),
            "amount": money.money(self.amount, self.places),
        }


def adjusted_id(label: str, volume_type: str | None) -> str:
    """The resource id of a tier line's adjustments: its version's label, and for a
    volume type's tiers the type in brackets (``default/1[ssd]``): distinct from the
    type-wide group's (a label ends with its number) and from any resource's."""
    return label if volume_type is None else f"{label}[{volume_type}]"


def adjusted_ids(versions: Iterable[PriceVersion]) -> set[str]:
    """Every resource id an adjustment of a tier line of ``versions`` may name."""
    return {adjusted_id(version.label, volume_type) for version in versions
            for volume_type in (None, *(version.rates["volume"].volume_type_tiers
                                        if "volume" in version.rates else ()))}


def slices(tiers: Sequence[Tier], mode: str, quantity: Fraction
           ) -> tuple[tuple[Tier, Fraction], ...]:
    """The tiers ``quantity`` reaches, each with the part of it that tier prices:
    graduated, each slice; volume, the whole quantity at the tier it reaches."""
    if mode == "volume":
        for tier in tiers:
            if tier.up_to is None or quantity <= Fraction(tier.up_to):
                return ((tier, quantity),)
        raise AssertionError("the last tier is open")
    found: list[tuple[Tier, Fraction]] = []
    below = Fraction(0)
    for tier in tiers:
        top = quantity if tier.up_to is None else min(quantity, Fraction(tier.up_to))
        found.append((tier, max(top - below, Fraction(0))))
        if tier.up_to is None or quantity <= Fraction(tier.up_to):
            break
        below = Fraction(tier.up_to)
    return tuple(found)


def price(tiers: Sequence[Tier], mode: str, quantity: Fraction) -> Fraction:
    """``P(Q)``: what the tiers price ``quantity`` at, exactly."""
    return _priced(slices(tiers, mode, quantity))


def _priced(cut: Iterable[tuple[Tier, Fraction]]) -> Fraction:
    return sum((Fraction(tier.rate) * part for tier, part in cut), Fraction(0))


def tiered_types(versions: Iterable[PriceVersion]) -> set[str]:
    """The types some version prices with tiers (an instance: some of its flavors, a
    volume: possibly only some of its volume types)."""
    return {name for version in versions for name, rates in version.rates.items()
            if rates.tiers or rates.flavor_tiers or rates.volume_type_tiers}


# A tier group: (project, type, version label, flavor or "", volume type or "").
GroupKey = tuple[str, str, str, str, str]

# How a group is priced: (mode, tiers, the lines' rate, the flavor if a flavor's, the
# volume type if a volume type's)
_Tiered = tuple[str, tuple[Tier, ...], Decimal, str | None, str | None]


def _entry(line: Line, versions: Sequence[PriceVersion]) -> _Tiered | None:
    """The tiers that priced ``line``, if any (``entry`` of its version's piece)."""
    piece = None
    for version in versions:
        if version.label == line.price_list_version and version.effective_from <= line.start:
            piece = version
    if piece is None:
        return None
    return entry(line.resource_type, line.size, line.project_id, piece)


def entry(resource_type: str, size: Any, project_id: str | None, piece: PriceVersion
          ) -> _Tiered | None:
    """The tiers that price a line of this type and size of ``project_id`` (None: a
    project without terms) under ``piece``, if any: its entry's (or its flavor's,
    for an instance; its volume type's, for a volume of a type priced by its own
    entry: a volume type with a plain rate there is in no group), unless the project's
    terms in force over it gave the type a rate of their own."""
    rates = piece.rates.get(resource_type)
    if rates is None:
        return None
    term = piece.terms.get(project_id) if project_id is not None else None
    if term is not None and resource_type in term.rates:
        return None
    if not isinstance(size, dict):
        size = None
    volume_type = size.get("type") if size else None
    if (resource_type == "volume" and isinstance(volume_type, str)
            and volume_type in rates.by_volume_type):
        if volume_type not in rates.volume_type_tiers:
            return None
        mode, tiers = rates.volume_type_tiers[volume_type]
        return mode, tiers, rates.by_volume_type[volume_type], None, volume_type
    if rates.tiers:
        assert rates.mode is not None and rates.rate is not None
        return rates.mode, rates.tiers, rates.rate, None, None
    flavor = size.get("flavor") if size else None
    if isinstance(flavor, str) and flavor in rates.flavor_tiers:
        mode, tiers = rates.flavor_tiers[flavor]
        return mode, tiers, rates.by_flavor[flavor], flavor, None
    return None


def tier_lines(lines: Iterable[Line], versions: Sequence[PriceVersion],
               places: int | None = None) -> list[TierLine]:
    """The tier lines of ``lines`` (any projects), by project, type, version and flavor
    or volume type (the type-wide group first);
    rounded to ``places`` (None: each version's currency's minor units).  Unrated and
    zero-rated lines are in no group."""
    groups: dict[GroupKey, list[Any]] = {}
    for line in lines:
        if line.exact_amount is None or line.zero_rated or line.modifier is None:
            continue
        assert line.price_list_version is not None
        priced = _entry(line, versions)
        if priced is None:
            continue
        key = (line.project_id, line.resource_type, line.price_list_version, priced[3] or "",
               priced[4] or "")
        group = groups.setdefault(key, [priced, line.unit, Fraction(0), Fraction(0)])
        group[2] += line.quantity
        group[3] += line.quantity * Fraction(line.modifier)
    return from_sums(groups, versions, places)



def from_sums(groups: Mapping[GroupKey, Sequence[Any]], versions: Sequence[PriceVersion],
              places: int | None = None) -> list[TierLine]:
    """The tier lines of groups summed elsewhere (by the database:
    ``reporting.billing.sql_rating.project_totals``, ``sql_close.freeze``): per key,
    ``(priced, unit, Q, W)`` with ``priced`` what ``entry`` answers; ordered and
    rounded as ``tier_lines`` orders and rounds them."""
    order = {version.label: index for index, version in reversed(list(enumerate(versions)))}
    minor = {version.label: version.minor_units for version in versions}
    found = []
    for (project, resource_type, label, *_named), (priced, unit, total, weighted) in sorted(
            groups.items(), key=lambda item: (item[0][0], item[0][1], order[item[0][2]],
                                              *item[0][3:])):
        if total == 0:
            continue  # nothing to price (sizes of zero)
        mode, steps, rate, flavor, volume_type = priced
        cut = slices(steps, mode, total)
        tiered = _priced(cut) * weighted / total
        found.append(TierLine(
            project, resource_type, label, flavor, mode, unit, rate, total, weighted,
            cut, tiered, tiered - Fraction(rate) * weighted,
            minor[label] if places is None else places, volume_type))
    return found


def by_project(found: Iterable[TierLine]) -> dict[str, list[TierLine]]:
    grouped: dict[str, list[TierLine]] = {}
    for line in found:
        grouped.setdefault(line.project_id, []).append(line)
    return grouped


def total(found: Iterable[TierLine]) -> Decimal:
    return money.total(line.amount for line in found)
