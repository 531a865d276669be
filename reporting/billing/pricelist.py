"""Price list documents: validation and the typed version a rating reads.

A document (``PUT /v1/price-lists/{cloud}``; ``docs/statements.md``)::

    {"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
     "zero_rated_projects": ["<project id>"],
     "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.020"},
                            "by_resources": {"vcpus": "0.010", "ram_gb": "0.005"}},
               "volume": {"per": "gb_hour", "rate": "0.00010", "type_modifiers": {"ssd": "1.5"}},
               "floating_ip": {"per": "hour", "rate": "0.005"},
               "image": {"per": "gb_hour", "rate": "0.00005"},
               "loadbalancer": {"per": "hour", "rate": "0.030", "listener": "0.005",
                                "pool": "0.005"},
               "share": {"per": "size_gb_hour", "size": "size_gb", "rate": "0.00002"}},
     "state_modifiers": {"instance": {"shutoff": "0.5", "shelved": "0"}}}

A type other than the five built in (``share`` above) is a *sized* type: any resource
type registered with a size schema (``/v1/resource-types``) is priced per hour, or per
hour × the number its size holds in the member ``size`` names (``per`` is then
``<size>_hour``).  Whether the type is registered with that member is checked when a
version is added (``versions.add``), not here: a stored version is read as it was
accepted.

Every amount is a decimal string; every member not listed here is refused, so a
misspelt key never silently prices something at nothing.  A new version
(``parse_new``) is also refused for text no database can hold and for a currency that
is not an ISO 4217 code with a minor unit: a stored version is never removed, so
whatever it holds is priced, summed and closed with for ever.

A ``volume``, ``image``, ``floating_ip`` or sized entry may give ``tiers`` and a
``mode`` instead of ``rate`` (``{"mode": "graduated", "tiers": [{"up_to": "500",
"rate": "0.0002"}, {"up_to": null, "rate": "0.0001"}]}``): ascending bounds, the last
open; ``reporting.billing.tiers`` prices a project's period quantity with them.  An
instance's ``by_flavor`` and a volume's ``by_volume_type`` may give, per flavor or
volume type, a rate or ``{"mode", "tiers"}``: each flavor or volume type with tiers
is a group of its own.

``project_terms`` gives projects dated terms of their own (their own rates for some
types, a percentage discount); ``account_terms`` gives billing accounts dated rates of
their own, pricing every project for the time it is a member of the account (a
project's own override of a type beats its account's).  ``expand`` cuts a version
where one begins or ends (for an account's, where its rates begin or stop pricing a
member project), so the rating sees, piece by piece, the terms in force.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from mapping.event import MAX_ID_LEN, TimestampError, parse_timestamp
from reporting.billing import currencies
from reporting.billing.money import EXACT as _EXACT
from reporting.billing.money import MoneyError, parse_decimal
from reporting.billing.money import text as _text

DEFAULT_LIST = "default"  # applies to every cloud without a list of its own
_CURRENCY = re.compile(r"^[A-Z]{3}\Z")
# What each resource type is priced per, and the members its rates entry may hold.
UNITS = {
    "instance": "hour",
    "volume": "gb_hour",
    "floating_ip": "hour",
    "image": "gb_hour",
    "loadbalancer": "hour",
}
_RATE_MEMBERS = {
    "instance": {"per", "by_flavor", "by_resources"},
    "volume": {"per", "rate", "type_modifiers", "mode", "tiers", "by_volume_type"},
    "floating_ip": {"per", "rate", "mode", "tiers"},
    "image": {"per", "rate", "mode", "tiers"},
    "loadbalancer": {"per", "rate", "listener", "pool"},
}
# How tiers price a period's quantity: each slice at its tier's rate, or the whole
# quantity at the rate of the tier it reaches (docs/statements.md, "Tiers").
TIER_MODES = ("graduated", "volume")
INSTANCE_RESOURCES = ("vcpus", "ram_gb", "disk_gb")
# A sized type's name (as ``/v1/resource-types`` registers it) and its size member's.
SIZED_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")
SIZE_MEMBER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_SIZED_MEMBERS = {"per", "rate", "size", "mode", "tiers"}
# An account id as ``POST /v1/accounts`` accepts it (``reporting.billing.accounts``): a
# short name safe in a path, letters, digits, ".", "_", "-".
ACCOUNT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}\Z")


class PriceListError(ValueError):
    """A document that is not a valid price list; the message says why."""


@dataclasses.dataclass(frozen=True)
class Tier:
    """One tier: its rate prices the quantity above the previous tier's ``up_to`` up to
    its own (inclusive; None: every quantity above)."""

    up_to: Decimal | None
    rate: Decimal


@dataclasses.dataclass(frozen=True)
class TypeRate:
    """The rates of one resource type."""

    rate: Decimal | None = None  # every type but instance; with tiers, the first tier's
    by_flavor: Mapping[str, Decimal] = dataclasses.field(default_factory=dict)
    by_resources: Mapping[str, Decimal] | None = None
    type_modifiers: Mapping[str, Decimal] = dataclasses.field(default_factory=dict)
    listener: Decimal = Decimal(0)
    pool: Decimal = Decimal(0)
    # A sized type: the size member whose number multiplies the hours (None: hours
    # alone), and the unit its lines are in ("hour", "<size>_hour").
    size: str | None = None
    unit: str | None = None
    # Tiers over a project's period quantity (``mode`` one of TIER_MODES); empty: none.
    tiers: tuple[Tier, ...] = ()
    mode: str | None = None
    # An instance's flavors priced with tiers: flavor -> (mode, tiers); ``by_flavor``
    # holds each one's first tier's rate.
    flavor_tiers: Mapping[str, tuple[str, tuple[Tier, ...]]] = dataclasses.field(
        default_factory=dict)
    # A volume's own rates per volume type (its ``rate`` then prices the other types;
    # None: only these are rated), and those priced with tiers: type -> (mode, tiers),
    # ``by_volume_type`` holding each one's first tier's rate.
    by_volume_type: Mapping[str, Decimal] = dataclasses.field(default_factory=dict)
    volume_type_tiers: Mapping[str, tuple[str, tuple[Tier, ...]]] = dataclasses.field(
        default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ProjectTerm:
    """One project's dated terms in a version: its own rates for some types and a
    percentage discount, over ``[start, end)`` (and only while the version prices)."""

    start: dt.datetime  # naive UTC
    end: dt.datetime | None  # None: for as long as the version prices
    discount_percent: Decimal
    rates: Mapping[str, TypeRate]

    def multiplier(self) -> Decimal:
        """What the discount leaves of an amount: (100 - percent) / 100, exactly."""
        return (Decimal(100) - self.discount_percent).scaleb(-2, context=_EXACT)


@dataclasses.dataclass(frozen=True)
class PriceVersion:
    """One stored version of a price list (``label`` names it in statement lines)."""

    label: str  # "<list>/<number>", e.g. "default/2"
    effective_from: dt.datetime  # naive UTC
    currency: str
    zero_rated_projects: frozenset[str]
    rates: Mapping[str, TypeRate]
    state_modifiers: Mapping[str, Mapping[str, Decimal]]
    # The decimals amounts are rounded to: the currency's ISO 4217 minor units.
    minor_units: int = currencies.LEGACY_PLACES
    # Each project's dated terms, as the document states them.
    project_terms: Mapping[str, tuple[ProjectTerm, ...]] = dataclasses.field(
        default_factory=dict)
    # Each billing account's dated rates, as the document states them (a term's
    # ``discount_percent`` is always 0: an account's discount is its own, not a price).
    account_terms: Mapping[str, tuple[ProjectTerm, ...]] = dataclasses.field(
        default_factory=dict)
    # The terms in force over this piece of the version, per project (``expand`` cuts a
    # version at its terms' dates, and at its member projects' moves for an account's
    # terms): what the rating reads.
    terms: Mapping[str, ProjectTerm] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Membership:
    """A project of the cloud priced belongs to ``account`` over ``[start, end)`` (end
    None: until further notice), as its dated memberships say."""

    project_id: str
    account: str
    start: dt.datetime  # naive UTC
    end: dt.datetime | None


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PriceListError(f"{where} must be an object")
    return value


def _only(document: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise PriceListError(f"{where} has unknown member(s): {', '.join(unknown)}")


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN:
        raise PriceListError(f"{where} must be a non-empty string of at most {MAX_ID_LEN} characters")
    return value


def _decimals(value: Any, where: str) -> dict[str, Decimal]:
    return {
        _name(key, f"a key of {where}"): _decimal(amount, f"{where}.{key}")
        for key, amount in _object(value, where).items()
    }


def _decimal(value: Any, where: str) -> Decimal:
    try:
        return parse_decimal(value, where)
    except MoneyError as exc:
        raise PriceListError(str(exc)) from None


def sized_unit(size: str | None) -> str:
    """The unit of a sized type's lines: hours, or hours × its size member."""
    return "hour" if size is None else f"{size}_hour"


def _sized_rate(resource_type: str, entry: dict[str, Any]) -> TypeRate:
    where = f"rates.{resource_type}"
    if not SIZED_TYPE.match(resource_type):
        raise PriceListError(
            f"rates has a member {resource_type!r} that is neither a built-in type "
            f"({', '.join(UNITS)}) nor a resource type name (^[a-z][a-z0-9_]*$)")
    _only(entry, _SIZED_MEMBERS, where)
    size = entry.get("size")
    if size is not None and (not isinstance(size, str) or not SIZE_MEMBER.match(size)):
        raise PriceListError(
            f"{where}.size must name a member of the type's size (^[A-Za-z_][A-Za-z0-9_]*$, "
            "e.g. \"size_gb\")")
    unit = sized_unit(size)
    if entry.get("per") != unit:
        reason = "the size member it names" if size is not None else "no size member"
        raise PriceListError(f"{where}.per must be \"{unit}\" ({reason}: per hour"
                             f"{' × ' + size if size is not None else ''})")
    rate, tiers, mode = _rate_or_tiers(entry, where)
    return TypeRate(rate=rate, size=size, unit=unit, tiers=tiers, mode=mode)


def _tiers(value: Any, where: str) -> tuple[Tier, ...]:
    """``tiers``: ascending ``up_to`` quantities, the last one open (null)."""
    if not isinstance(value, list) or not value:
        raise PriceListError(
            f"{where} must be a non-empty list of tiers such as "
            '{"up_to": "500", "rate": "0.0002"}, the last with "up_to": null')
    found: list[Tier] = []
    for index, raw in enumerate(value):
        at = f"{where}[{index}]"
        entry = _object(raw, at)
        _only(entry, {"up_to", "rate"}, at)
        for member in ("up_to", "rate"):
            if member not in entry:
                raise PriceListError(f"{at}.{member} is required"
                                     + (" (null for the last tier)" if member == "up_to"
                                        else ""))
        rate = _decimal(entry["rate"], f"{at}.rate")
        last = index == len(value) - 1
        if entry["up_to"] is None:
            if not last:
                raise PriceListError(f"{at}.up_to is null but tiers follow it: only the "
                                     "last tier is open")
            found.append(Tier(None, rate))
            continue
        if last:
            raise PriceListError(f"{at}.up_to must be null: the last tier is open (it "
                                 "prices every quantity above the one before)")
        up_to = _decimal(entry["up_to"], f"{at}.up_to")
        below = found[-1].up_to if found else Decimal(0)
        assert below is not None
        if up_to <= below:
            raise PriceListError(
                f"{at}.up_to must be greater than "
                + (f"{where}[{index - 1}].up_to ({_text(below)})" if found else "0"))
        found.append(Tier(up_to, rate))
    return tuple(found)


def _rate_or_tiers(entry: Mapping[str, Any], where: str
                   ) -> tuple[Decimal, tuple[Tier, ...], str | None]:
    """A type's ``rate``, or its ``tiers`` and ``mode`` (the first tier's rate is then
    what each line is priced at before its group's tier line)."""
    if "tiers" in entry:
        if "rate" in entry:
            raise PriceListError(f"{where} has both rate and tiers: give one (the tiers' "
                                 "rates replace the rate)")
        mode = entry.get("mode")
        if mode not in TIER_MODES:
            raise PriceListError(f"{where}.mode must be \"graduated\" or \"volume\" "
                                 "(how the tiers price the period's quantity)")
        tiers = _tiers(entry["tiers"], f"{where}.tiers")
        return tiers[0].rate, tiers, mode
    if "mode" in entry:
        raise PriceListError(f"{where}.mode is only a member with tiers")
    if "rate" not in entry:
        raise PriceListError(f"{where}.rate is required")
    return _decimal(entry["rate"], f"{where}.rate"), (), None


def _named(value: Any, where: str
           ) -> tuple[dict[str, Decimal], dict[str, tuple[str, tuple[Tier, ...]]]]:
    """``by_flavor`` or ``by_volume_type``: per name a rate, or ``{"mode", "tiers"}``
    (its quantity priced with tiers, each line at the first tier's rate)."""
    rates: dict[str, Decimal] = {}
    tiered: dict[str, tuple[str, tuple[Tier, ...]]] = {}
    for name, given in _object(value, where).items():
        _name(name, f"a key of {where}")
        if not isinstance(given, dict):
            rates[name] = _decimal(given, f"{where}.{name}")
            continue
        at = f"{where}.{name}"
        _only(given, {"mode", "tiers"}, at)
        if "tiers" not in given:
            raise PriceListError(f"{at} must be a rate or {{\"mode\", \"tiers\"}}")
        rate, tiers, mode = _rate_or_tiers(given, at)
        assert mode is not None
        rates[name], tiered[name] = rate, (mode, tiers)
    return rates, tiered


def _volume_rate(entry: Mapping[str, Any], where: str) -> TypeRate:
    """A volume's entry: ``rate`` or ``tiers`` for every volume type, ``by_volume_type``
    a rate or tiers of their own for some (``rate`` may then be left out: the other
    types are unrated).  A volume type is priced either by its own entry or by the
    type-wide rate × its ``type_modifiers`` entry, never both: one price per type."""
    by_type, type_tiers = _named(entry.get("by_volume_type", {}), f"{where}.by_volume_type")
    rate: Decimal | None = None
    tiers: tuple[Tier, ...] = ()
    mode = None
    if not by_type or {"rate", "tiers", "mode"} & set(entry):  # else: only those named
        rate, tiers, mode = _rate_or_tiers(entry, where)
    modifiers = _decimals(entry.get("type_modifiers", {}), f"{where}.type_modifiers")
    both = sorted(set(modifiers) & set(by_type))
    if both:
        name = both[0]
        raise PriceListError(
            f"{where}.type_modifiers.{name} and {where}.by_volume_type.{name} both price "
            f"volume type {name}: give one (by_volume_type gives the type its own rate or "
            "tiers; a modifier multiplies the entry's rate)")
    return TypeRate(rate=rate, tiers=tiers, mode=mode, type_modifiers=modifiers,
                    by_volume_type=by_type, volume_type_tiers=type_tiers)


def _type_rate(resource_type: str, value: Any) -> TypeRate:
    where = f"rates.{resource_type}"
    entry = _object(value, where)
    if resource_type not in UNITS:
        return _sized_rate(resource_type, entry)
    _only(entry, _RATE_MEMBERS[resource_type], where)
    if entry.get("per") != UNITS[resource_type]:
        raise PriceListError(f"{where}.per must be \"{UNITS[resource_type]}\"")
    if resource_type == "instance":
        by_flavor, flavor_tiers = _named(entry.get("by_flavor", {}), f"{where}.by_flavor")
        by_resources = None
        if "by_resources" in entry:
            by_resources = _decimals(entry["by_resources"], f"{where}.by_resources")
            _only(by_resources, set(INSTANCE_RESOURCES), f"{where}.by_resources")
            if not by_resources:
                raise PriceListError(f"{where}.by_resources must name at least one resource")
        if not by_flavor and by_resources is None:
            raise PriceListError(f"{where} needs by_flavor or by_resources")
        return TypeRate(by_flavor=by_flavor, by_resources=by_resources,
                        flavor_tiers=flavor_tiers)
    if resource_type == "volume":
        return _volume_rate(entry, where)
    rate, tiers, mode = _rate_or_tiers(entry, where)  # a load balancer's members hold no tiers
    return TypeRate(
        rate=rate, tiers=tiers, mode=mode,
        type_modifiers=_decimals(entry.get("type_modifiers", {}), f"{where}.type_modifiers"),
        listener=_decimal(entry.get("listener", "0"), f"{where}.listener"),
        pool=_decimal(entry.get("pool", "0"), f"{where}.pool"),
    )


def _timestamp(value: Any, where: str) -> dt.datetime:
    try:
        return parse_timestamp(value).replace(tzinfo=None)
    except (TimestampError, TypeError, AttributeError):
        raise PriceListError(
            f"{where} must be an RFC 3339 timestamp with an offset, e.g. 2026-10-01T00:00:00Z"
        ) from None


def _override(name: str, value: Any, where: str, rates: Mapping[str, TypeRate],
              what: str = "project_terms") -> TypeRate:
    """A project's (or an account's) own rates for type ``name``: the same form as
    ``rates.<name>``, in the same unit (an override changes prices, never what a line
    counts)."""
    if name not in rates:
        raise PriceListError(f"{where}.{name}: the version has no rates.{name} to override")
    try:
        override = _type_rate(name, value)
    except PriceListError as exc:
        raise PriceListError(str(exc).replace(f"rates.{name}", f"{where}.{name}", 1)) from None
    if override.tiers or override.flavor_tiers or override.volume_type_tiers:
        member = ("tiers" if override.tiers
                  else f"by_flavor.{sorted(override.flavor_tiers)[0]}.tiers"
                  if override.flavor_tiers
                  else f"by_volume_type.{sorted(override.volume_type_tiers)[0]}.tiers")
        raise PriceListError(
            f"{where}.{name}.{member}: {'an account' if what == 'account_terms' else 'a project'}"
            "'s terms give a rate, not tiers (tiers price the quantity of the project's "
            "whole period, a term only a stretch of it)")
    if override.size != rates[name].size:
        raise PriceListError(
            f"{where}.{name}.size must be {rates[name].size!r} as in rates.{name}: an override "
            "changes prices, not what a line counts")
    return override


def _terms(value: Any, effective_from: dt.datetime, rates: Mapping[str, TypeRate],
           what: str = "project_terms") -> dict[str, tuple[ProjectTerm, ...]]:
    """``project_terms`` (or ``account_terms``: the same form, keyed by account id,
    rates only) as the rating reads them."""
    accounts = what == "account_terms"
    found: dict[str, tuple[ProjectTerm, ...]] = {}
    for owner, listed in _object(value, what).items():
        _name(owner, f"a key of {what}")
        if accounts and not ACCOUNT_ID.match(owner):
            raise PriceListError(
                f"a key of account_terms ({owner!r}) must be an account id: 1 to 255 letters, "
                "digits, '.', '_' or '-', starting with a letter or digit")
        where = f"{what}.{owner}"
        if not isinstance(listed, list) or not listed:
            raise PriceListError(f"{where} must be a non-empty list of terms")
        terms = []
        for index, raw in enumerate(listed):
            at = f"{where}[{index}]"
            entry = _object(raw, at)
            if accounts and "discount_percent" in entry:
                raise PriceListError(
                    f"{at}.discount_percent: an account's terms give rates only; its "
                    "percentage discount is POST /v1/accounts/{id}/discounts (off the "
                    "account's usage), a project's is a discount_percent of project_terms")
            _only(entry, {"from", "until", "rates"} if accounts
                  else {"from", "until", "discount_percent", "rates"}, at)
            if accounts and not entry.get("rates"):
                raise PriceListError(f"{at}.rates must name at least one type of rates "
                                     "to override")
            if "discount_percent" not in entry and "rates" not in entry:
                raise PriceListError(f"{at} needs discount_percent or rates")
            start = (_timestamp(entry["from"], f"{at}.from") if "from" in entry
                     else effective_from)
            if start < effective_from:
                raise PriceListError(f"{at}.from falls before the version's effective_from")
            end = _timestamp(entry["until"], f"{at}.until") if "until" in entry else None
            if end is not None and end <= start:
                raise PriceListError(f"{at}.until must be after its from")
            discount = _decimal(entry.get("discount_percent", "0"), f"{at}.discount_percent")
            if discount > 100:
                raise PriceListError(f"{at}.discount_percent must be at most 100")
            overrides = {name: _override(name, rate, f"{at}.rates", rates, what)
                         for name, rate in _object(entry.get("rates", {}), f"{at}.rates").items()}
            terms.append(ProjectTerm(start, end, discount, overrides))
        terms.sort(key=lambda term: term.start)
        for earlier, later in zip(terms, terms[1:], strict=False):
            if earlier.end is None or earlier.end > later.start:
                raise PriceListError(f"{where} has terms that overlap; each instant has one")
        found[owner] = tuple(terms)
    return found


def parse(document: Any, label: str = "") -> PriceVersion:
    """Validate a price list document; raises PriceListError with the reason."""
    doc = _object(document, "the price list")
    _only(doc, {"effective_from", "currency", "zero_rated_projects", "rates", "state_modifiers",
                "project_terms", "account_terms"}, "the price list")
    effective_from = _timestamp(doc.get("effective_from"), "effective_from")
    currency = doc.get("currency")
    if not isinstance(currency, str) or not _CURRENCY.match(currency):
        raise PriceListError("currency must be an ISO 4217 code such as \"EUR\"")
    zero_rated = doc.get("zero_rated_projects", [])
    if not isinstance(zero_rated, list):
        raise PriceListError("zero_rated_projects must be a list of project ids")
    projects = frozenset(_name(p, "a zero_rated_projects entry") for p in zero_rated)
    rates_doc = _object(doc.get("rates"), "rates")
    rates = {kind: _type_rate(kind, value) for kind, value in rates_doc.items()}
    modifiers_doc = _object(doc.get("state_modifiers", {}), "state_modifiers")
    _only(modifiers_doc, set(UNITS) | set(rates), "state_modifiers")
    state_modifiers = {
        kind: _decimals(value, f"state_modifiers.{kind}") for kind, value in modifiers_doc.items()
    }
    return PriceVersion(
        label=label,
        effective_from=effective_from,
        currency=currency,
        zero_rated_projects=projects,
        rates=rates,
        state_modifiers=state_modifiers,
        minor_units=currencies.places(currency),
        project_terms=_terms(doc.get("project_terms", {}), effective_from, rates),
        account_terms=_terms(doc.get("account_terms", {}), effective_from, rates,
                             "account_terms"),
    )


def _in_force(terms: Sequence[ProjectTerm], moment: dt.datetime) -> ProjectTerm | None:
    return next((term for term in terms
                 if term.start <= moment and (term.end is None or moment < term.end)), None)


def _account_cuts(version: PriceVersion, members: Sequence[Membership]) -> set[dt.datetime]:
    """Where the version's account terms begin or stop pricing a member project: the
    bounds of each membership's stretch within each of its account's terms."""
    cuts: set[dt.datetime] = set()
    for member in members:
        for term in version.account_terms.get(member.account, ()):
            start = max(term.start, member.start)
            ends = [moment for moment in (term.end, member.end) if moment is not None]
            end = min(ends) if ends else None
            if end is None or start < end:
                cuts.update(moment for moment in (start, end) if moment is not None)
    return cuts


def _with_account(own: ProjectTerm | None, account: ProjectTerm | None
                  ) -> ProjectTerm | None:
    """The terms pricing a project: its account's rates, under its own term's (a
    project's override of a type beats its account's; its discount multiplies either)."""
    if account is None:
        return own
    if own is None:
        return account
    return dataclasses.replace(own, rates={**account.rates, **own.rates})


def expand(versions: Sequence[PriceVersion], members: Sequence[Membership] = ()
           ) -> list[PriceVersion]:
    """A timeline cut at its versions' project terms' dates, and where an account's
    terms begin or stop pricing one of ``members`` (the cloud's dated memberships):
    each piece the version with the terms in force from its ``effective_from``, per
    project (the label stays the version's).  A term prices only while its version
    does; a member's account is the one its membership names at the piece's start."""
    pieces: list[PriceVersion] = []
    for index, version in enumerate(versions):
        until = versions[index + 1].effective_from if index + 1 < len(versions) else None
        cuts = {version.effective_from}
        for terms in version.project_terms.values():
            for term in terms:
                cuts.update(moment for moment in (term.start, term.end) if moment is not None)
        with_terms = [m for m in members if m.account in version.account_terms]
        cuts |= _account_cuts(version, with_terms)
        for start in sorted(c for c in cuts if c >= version.effective_from
                            and (until is None or c < until)):
            active = {project: own for project, terms in version.project_terms.items()
                      if (own := _in_force(terms, start)) is not None}
            for member in with_terms:
                if member.start <= start and (member.end is None or start < member.end):
                    combined = _with_account(active.get(member.project_id), _in_force(
                        version.account_terms[member.account], start))
                    if combined is not None:
                        active[member.project_id] = combined
            pieces.append(dataclasses.replace(version, effective_from=start, terms=active))
    return pieces


def unit_of(resource_type: str, version: PriceVersion | None) -> str | None:
    """The unit a line of ``resource_type`` is in under ``version``: a built-in type's
    fixed unit, a sized type's as the version prices it, None for a type it does not
    price (its lines are unrated)."""
    if resource_type in UNITS:
        return UNITS[resource_type]
    rates = version.rates.get(resource_type) if version is not None else None
    return None if rates is None else rates.unit


def sized_types(version: PriceVersion) -> dict[str, str | None]:
    """The sized types ``version`` prices, each with the size member it names (a
    project's override prices only a type the version prices)."""
    return {name: rates.size for name, rates in version.rates.items() if name not in UNITS}


def _numeric(schema: Any) -> bool:
    """Whether a size schema's property may hold a number (no ``type``: it may)."""
    if not isinstance(schema, dict) or "type" not in schema:
        return isinstance(schema, dict)
    declared = schema["type"]
    names = declared if isinstance(declared, list) else [declared]
    return "integer" in names or "number" in names


def check_registered(version: PriceVersion,
                     schemas: Mapping[str, Sequence[tuple[str, Any]]]) -> None:
    """Refuse a sized type no platform registers (``schemas``: per type, each
    ``(platform, size schema)`` registered), or whose size member no registered schema
    declares as a number: its lines could never be rated."""
    for name, size in sorted(sized_types(version).items()):
        registered = schemas.get(name, ())
        if not registered:
            raise PriceListError(
                f"rates.{name}: {name} is not a registered resource type (register its size "
                "schema with PUT /v1/resource-types/{platform}/" + name + " first)")
        if size is None:
            continue
        if not any(isinstance(schema, dict)
                   and _numeric((schema.get("properties") or {}).get(size))
                   for _platform, schema in registered):
            platforms = ", ".join(f"{platform}/{name}" for platform, _schema in registered)
            raise PriceListError(
                f"rates.{name}.size: no size schema registered for {name} ({platforms}) "
                f"declares a numeric member {size!r}")


def minor_units_of(versions: Sequence[PriceVersion]) -> int:
    """The minor units a timeline's amounts are rounded to (every version shares one
    currency; hundredths without a version)."""
    return versions[-1].minor_units if versions else currencies.LEGACY_PLACES


def _unstorable(text: str) -> str | None:
    """What in ``text`` neither PostgreSQL text nor UTF-8 can hold, if anything."""
    if "\x00" in text:
        return "a NUL character (U+0000)"
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return f"a lone surrogate (U+{ord(char):04X})"
    return None


def refuse_unstorable(value: Any, where: str = "the price list") -> None:
    """Raise PriceListError naming the first string (member name or value) that no
    database can hold: PostgreSQL refuses NUL in text and UTF-8 has no surrogates, so
    such a version could be stored as JSON text but never priced with."""
    if isinstance(value, str):
        found = _unstorable(value)
        if found is not None:
            raise PriceListError(f"{where} holds {found}, which no stored text can hold")
    elif isinstance(value, dict):
        for key, member in value.items():
            shown = ascii(key) if isinstance(key, str) and _unstorable(key) else key
            refuse_unstorable(key, f"the member name {shown} of {where}")
            refuse_unstorable(member, f"{where}.{shown}" if where != "the price list" else shown)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            refuse_unstorable(item, f"{where}[{index}]")


def parse_new(document: Any, stored_currency: str | None) -> PriceVersion:
    """Validate a document offered as a new version: ``parse``'s rules, every string
    storable, and the currency an ISO 4217 code with a minor unit.  ``stored_currency``
    (the currency of the versions stored, if any) is accepted as it is: it was accepted
    before codes were checked against ISO 4217, and every version must use it."""
    refuse_unstorable(document)
    version = parse(document)
    if (currencies.minor_units(version.currency) is None
            and version.currency != stored_currency):
        raise PriceListError(
            f"currency {version.currency} is not an ISO 4217 code with a minor unit "
            "(e.g. EUR, JPY, KWD)")
    return version


def in_effect(
    versions: list[PriceVersion], start: dt.datetime, end: dt.datetime
) -> list[tuple[dt.datetime, dt.datetime, PriceVersion | None]]:
    """``[start, end)`` cut at version boundaries: each piece with the version in
    effect over it (None before the first version).  ``versions`` sorted by
    ``effective_from``."""
    pieces: list[tuple[dt.datetime, dt.datetime, PriceVersion | None]] = []
    cursor = start
    current: PriceVersion | None = None
    for version in versions:
        if version.effective_from <= cursor:
            current = version
            continue
        if version.effective_from >= end:
            break
        pieces.append((cursor, version.effective_from, current))
        cursor, current = version.effective_from, version
    pieces.append((cursor, end, current))
    return pieces
