"""Bill the simulated month from the simulated cloud's ground truth, independently of
Tally, to check Tally's statements against.

The truth's lifecycle of a resource runs from the instant its creation finished (when
the platform's create notification is dated) to its deletion, cut wherever the record
Tally books (project, state, size) changes; a resource live at the end of what the
world has played runs on, as a statement bills it, to the end of the period.  The
amounts are computed here with exact fractions and a deliberately separate, minimal
reading of the price list (``DEMO_PRICES``, or the demo's ``demo_prices``: one
version), not with Tally's code, by the rules of docs/statements.md: a line per
interval, cut wherever a project's term begins or ends and wherever an account's term
begins or stops pricing a member (in every project), each priced at that instant by
the project's own term's rate of its type, else its account's (the account its
memberships put it in then), else the version's, × its modifiers, and rounded
half-even to the cent; per project and tier group (a type's tiers, a flavor's), the
lines the version's tiered entry priced (not a term's rate) add up to one tier line.

``check_month`` compares Tally's statements of a month with that bill, resource by
resource.  Where Tally's lifecycle of a resource is the truth's (the same intervals,
project, state and size), the amounts must be equal to the cent.  Where it is not,
Tally learnt something at a sync's poll rather than from a notification (a lost or
unbooked notification; a create dated at the platform's creation instant, before the
truth's ready instant): each stretch of time over which the two disagree must last at
most the dating tolerance given plus the time the resource spent in transition within
it (a sync defers a resource in transition, with no cap), and per project the amounts
may differ by at most the larger hourly price of the two records × the length of every
such stretch, plus half a cent per line of either bill (each line is rounded on its
own).  Each project's tier line is the tiers' price of Tally's own lifecycles to the
cent, and within the tiers' slope × the hours the two lifecycles disagree by of the
truth's.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from simcloud import model

DEMO_PRICES: dict[str, Any] = {
    "effective_from": "2026-01-01T00:00:00Z",
    "currency": "EUR",
    "rates": {
        "instance": {"per": "hour",
                     "by_flavor": {"m1.tiny": "0.005", "m1.small": "0.020", "m1.medium": "0.040",
                                   "m1.large": "0.080", "m1.xlarge": "0.160",
                                   "c1.scratch": "0.090"},
                     "by_resources": {"vcpus": "0.010", "ram_gb": "0.005", "disk_gb": "0.0001"}},
        "volume": {"per": "gb_hour", "rate": "0.00010",
                   "type_modifiers": {"ssd": "1.5", "gold-private": "2"}},
        # Graduated over each project's floating-IP hours of the month.
        "floating_ip": {"per": "hour", "mode": "graduated",
                        "tiers": [{"up_to": "48", "rate": "0.005"},
                                  {"up_to": None, "rate": "0.003"}]},
        "image": {"per": "gb_hour", "rate": "0.00005"},
        "loadbalancer": {"per": "hour", "rate": "0.030", "listener": "0.005", "pool": "0.005"},
    },
    "state_modifiers": {"instance": {"shutoff": "0.5", "shelved": "0", "suspended": "0.5"}},
}


def _q(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _num(value: Any) -> Fraction:
    return Fraction(Decimal(repr(value))) if isinstance(value, float) else Fraction(value)


def demo_prices(account: str, period_start: dt.datetime) -> dict[str, Any]:
    """DEMO_PRICES with m1.small tiered per project's month (graduated: 0.020 up to
    100 h, 0.012 above; "Tiers") and terms of ``account`` (docs/statements.md,
    "Account terms"): its members' floating IPs at a rate of their own (so out of the
    tiers) from 02:00 on the period's first day to its third, and cheaper instances from
    the 10th to the 20th, an entry replacing the version's whole (m1.xlarge and
    c1.scratch are priced by their resources then, and no m1.small of a member is in
    the tier group)."""
    document = copy.deepcopy(DEMO_PRICES)
    document["rates"]["instance"]["by_flavor"]["m1.small"] = {
        "mode": "graduated", "tiers": [{"up_to": "100", "rate": "0.020"},
                                       {"up_to": None, "rate": "0.012"}]}
    day = period_start.replace(hour=0, minute=0, second=0, microsecond=0)
    document["account_terms"] = {account: [
        {"from": _text(day + dt.timedelta(hours=2)), "until": _text(day + dt.timedelta(days=2)),
         "rates": {"floating_ip": {"per": "hour", "rate": "0.004"}}},
        {"from": _text(day + dt.timedelta(days=9)), "until": _text(day + dt.timedelta(days=19)),
         "rates": {"instance": {"per": "hour",
                                "by_flavor": {"m1.tiny": "0.004", "m1.small": "0.015",
                                              "m1.medium": "0.030", "m1.large": "0.060"},
                                "by_resources": {"vcpus": "0.008", "ram_gb": "0.004",
                                                 "disk_gb": "0.0001"}}}}]}
    return document


def _text(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hourly(kind: str, size: dict[str, Any] | None, state: str,
            entry: dict[str, Any] | None, state_modifiers: dict[str, Any]) -> Fraction | None:
    """Price per hour of one interval under the rate entry ``entry`` of its type
    (None: no price); a tiered entry prices at its first tier's rate (the tier line
    brings the group to the tiers' price, ``tier_amount``)."""
    if entry is None:
        return None
    size = size or {}
    if kind == "instance":
        if size.get("flavor") in entry.get("by_flavor", {}):
            rate = _rate(entry["by_flavor"][size["flavor"]])
        elif "by_resources" not in entry or any(
                k not in size for k in entry["by_resources"]):
            return None
        else:
            rate = sum((_num(size[k]) * _q(r) for k, r in entry["by_resources"].items()),
                       Fraction(0))
        return rate * _q(state_modifiers.get("instance", {}).get(state, "1"))
    if kind == "volume":
        modifier = _q(entry.get("type_modifiers", {}).get(size.get("type"), "1"))
        return _num(size["size_gb"]) * _rate(entry) * modifier
    if kind == "image":
        return None if "size_gb" not in size else _num(size["size_gb"]) * _rate(entry)
    if kind == "floating_ip":
        return _rate(entry)
    if kind == "loadbalancer":
        return (_q(entry["rate"]) + _num(size.get("listeners", 0)) * _q(entry["listener"])
                + _num(size.get("pools", 0)) * _q(entry["pool"]))
    return None


def _rate(entry: dict[str, Any] | str) -> Fraction:
    """A rate entry's (or a flavor's) rate: its first tier's, for tiers."""
    if isinstance(entry, str):
        return _q(entry)
    return _q(entry["tiers"][0]["rate"] if "tiers" in entry else entry["rate"])


Tiers = tuple[str, list[dict[str, Any]]]  # mode, tiers


def tiers_of(document: dict[str, Any], kind: str, flavor: str | None) -> Tiers | None:
    """The version's tiers of a group: a type's entry's (``flavor`` None), or a
    flavor's own under ``rates.instance.by_flavor``; None: the version tiers no such
    group."""
    entry = document["rates"].get(kind) or {}
    if flavor is not None:
        entry = entry.get("by_flavor", {}).get(flavor) if kind == "instance" else None
        if not isinstance(entry, dict):
            return None
    elif kind == "instance":
        return None
    if "tiers" not in entry:
        return None
    return entry.get("mode", "graduated"), entry["tiers"]


Member = tuple[Fraction, Fraction | None, str]  # from, until (seconds; None: open), account


def memberships_of(rows: list[dict[str, Any]], cloud: str) -> dict[str, list[Member]]:
    """Per project of ``cloud``: the stretches its memberships (``GET /v1/accounts/{id}``
    ``memberships``) put it in an account, each until the project's next membership."""
    found: dict[str, list[Member]] = defaultdict(list)
    dated = sorted((row["project_id"], _seconds(_parse_z(row["effective_from"])),
                    row["account_id"]) for row in rows if row["cloud"] == cloud)
    for index, (project, begin, account) in enumerate(dated):
        following = dated[index + 1] if index + 1 < len(dated) else None
        until = following[1] if following is not None and following[0] == project else None
        found[project].append((begin, until, account))
    return dict(found)


@dataclasses.dataclass(frozen=True)
class Rating:
    """A price list (one version, as the demo's) and the memberships it reads: what
    prices each project's lines at each instant, by the rules of docs/statements.md
    ("Project terms", "Account terms"), read here apart from Tally's code."""

    document: dict[str, Any]
    memberships: dict[str, list[Member]] = dataclasses.field(default_factory=dict)

    def _of(self, member: str, key: str) -> list[tuple[Fraction, Fraction | None,
                                                     dict[str, Any]]]:
        """The terms of ``key`` in ``member`` (``account_terms``, ``project_terms``):
        (from, until, term), ``from`` defaulting to the version's ``effective_from``."""
        start = _seconds(_parse_z(self.document["effective_from"]))
        return [(start if "from" not in term else _seconds(_parse_z(term["from"])),
                 None if term.get("until") is None else _seconds(_parse_z(term["until"])),
                 term) for term in self.document.get(member, {}).get(key, [])]

    @functools.cached_property
    def cuts(self) -> list[Fraction]:
        """Where every line is cut: where a project's term begins or ends, and where an
        account's term begins or stops pricing a member (the bounds of each membership's
        stretch within each term of its account)."""
        found: set[Fraction] = set()
        for project in self.document.get("project_terms", {}):
            for begin, until, _term in self._of("project_terms", project):
                found.update(t for t in (begin, until) if t is not None)
        for stretches in self.memberships.values():
            for joined, left, account in stretches:
                for begin, until, _term in self._of("account_terms", account):
                    lo = max(begin, joined)
                    ends = [t for t in (until, left) if t is not None]
                    hi = min(ends) if ends else None
                    if hi is None or lo < hi:
                        found.update(t for t in (lo, hi) if t is not None)
        return sorted(found)

    def account_at(self, project: str, t: Fraction) -> str | None:
        for joined, left, account in self.memberships.get(project, []):
            if joined <= t and (left is None or t < left):
                return account
        return None

    def priced(self, kind: str, project: str, t: Fraction
               ) -> tuple[dict[str, Any] | None, bool, Fraction]:
        """At ``t`` for ``project``'s line of ``kind``: the rate entry pricing it, whether
        a term's own rate is that entry (then the line is in no tier group), and the
        project's discount multiplier.  Per type, the project's own term beats its
        account's, which beats the version's."""
        own = _in_force(self._of("project_terms", project), t)
        account = self.account_at(project, t)
        held = _in_force(self._of("account_terms", account), t) if account else None
        multiplier = Fraction(1)
        if own is not None and own.get("discount_percent"):
            multiplier = 1 - _q(own["discount_percent"]) / 100
        for term in (own, held):
            if term is not None and kind in term.get("rates", {}):
                return term["rates"][kind], True, multiplier
        return self.document["rates"].get(kind), False, multiplier

    def hourly(self, kind: str, project: str, state: str, size: Any, t: Fraction
               ) -> Fraction | None:
        entry, _own, multiplier = self.priced(kind, project, t)
        hourly = _hourly(kind, size, state, entry, self.document.get("state_modifiers", {}))
        return None if hourly is None else hourly * multiplier

    def group(self, kind: str, project: str, state: str, size: Any, t: Fraction
              ) -> tuple[str | None, Fraction] | None:
        """The tier group a line at ``t`` is in (its flavor for a flavor's tiers, None
        for a type's) and its modifier (state × the project's discount), if any: a
        line the version's tiered entry priced, not a term's own rate."""
        _entry, own, multiplier = self.priced(kind, project, t)
        flavor = (size or {}).get("flavor") if kind == "instance" else None
        if own or tiers_of(self.document, kind, flavor) is None:
            return None
        state_modifier = self.document.get("state_modifiers", {}).get(kind, {}).get(state, "1")
        return flavor, _q(state_modifier) * multiplier

    def lines(self, begin: Fraction, end: Fraction) -> list[tuple[Fraction, Fraction]]:
        """``[begin, end)`` cut at every instant the price list cuts lines at."""
        bounds = [begin, *(t for t in self.cuts if begin < t < end), end]
        return list(zip(bounds, bounds[1:], strict=False))


def _in_force(terms: list[tuple[Fraction, Fraction | None, dict[str, Any]]], t: Fraction
              ) -> dict[str, Any] | None:
    return next((term for begin, until, term in terms
                 if begin <= t and (until is None or t < until)), None)


DEMO_RATING = Rating(DEMO_PRICES)


def graduated(quantity: Fraction, tiers: list[dict[str, Any]] | None = None,
              mode: str = "graduated") -> Fraction:
    """What ``tiers`` (DEMO_PRICES' floating-IP tiers unless given) price ``quantity``
    at: ``graduated``, each slice at its tier's rate; ``volume``, the whole quantity at
    the rate of the tier it reaches."""
    tiers = DEMO_PRICES["rates"]["floating_ip"]["tiers"] if tiers is None else tiers
    if mode == "volume":
        reached = next(t for t in tiers if t["up_to"] is None or quantity <= _q(t["up_to"]))
        return quantity * _q(reached["rate"])
    owed, below = Fraction(0), Fraction(0)
    for tier in tiers:
        top = quantity if tier["up_to"] is None else min(quantity, _q(tier["up_to"]))
        if top > below:
            owed += (top - below) * _q(tier["rate"])
        if tier["up_to"] is None or quantity <= _q(tier["up_to"]):
            return owed
        below = _q(tier["up_to"])
    return owed


def tier_amount(hours: Fraction, modified: Fraction | None = None,
                tiers: list[dict[str, Any]] | None = None, mode: str = "graduated"
                ) -> Decimal:
    """A project's tier line (DEMO_PRICES' floating-IP tiers unless given): with
    ``hours`` the quantity Q of the group's lines and ``modified`` W their quantity ×
    modifier (state, a project's discount; W = Q without), the group owes P(Q) / Q × W
    and its lines the first tier's rate × W; the tier line is the difference, rounded
    once."""
    tiers = DEMO_PRICES["rates"]["floating_ip"]["tiers"] if tiers is None else tiers
    modified = hours if modified is None else modified
    if not hours:
        return _cents(Fraction(0))
    return _cents((graduated(hours, tiers, mode) / hours - _q(tiers[0]["rate"])) * modified)


def _tier_slack(tiers: list[dict[str, Any]] | None = None) -> Fraction:
    """How much a tier line moves per hour of difference: first rate − lowest rate."""
    tiers = DEMO_PRICES["rates"]["floating_ip"]["tiers"] if tiers is None else tiers
    rates = [_q(t["rate"]) for t in tiers]
    return rates[0] - min(rates)


def _cents(value: Fraction) -> Decimal:
    whole, rest = divmod(value * 100, 1)
    whole = int(whole)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    return Decimal(whole) / 100


def _seconds(moment: dt.datetime) -> Fraction:
    return Fraction(int(moment.replace(tzinfo=dt.UTC).timestamp() * 1_000_000), 1_000_000)


Piece = tuple[Fraction, Fraction, str, str, Any]  # start, end (seconds), project, state, size


def truth_lifecycles(world: Any, period_start: dt.datetime, period_end: dt.datetime,
                     played_until: dt.datetime) -> dict[tuple[str, str], list[Piece]]:
    """Per (resource type, id): its truth intervals clipped to the period."""
    lo, hi = _seconds(period_start), _seconds(period_end)
    until = played_until.replace(tzinfo=dt.UTC).timestamp()
    found: dict[tuple[str, str], list[Piece]] = {}
    for res in world.resources:
        if res.ready_at > until:
            continue
        deleted = res.deleted_at if res.deleted_at is not None and res.deleted_at <= until \
            else None
        instants = [res.ready_at] + [t for t in res.phase_times
                                     if res.ready_at < t <= until and (deleted is None or
                                                                       t < deleted)]
        changes: list[tuple[float, tuple[str, str, Any]]] = []
        for t in instants:
            record = model.truth_record(res, t)
            booked = (record["project_id"], record["state"], record["size"])
            if not changes or changes[-1][1] != booked:
                changes.append((t, booked))
        pieces: list[Piece] = []
        for index, (start, booked) in enumerate(changes):
            stop = (_micro(changes[index + 1][0]) if index + 1 < len(changes)
                    else (_micro(deleted) if deleted is not None else hi))
            begin, end = max(_micro(start), lo), min(stop, hi)
            if end > begin:
                pieces.append((begin, end, *booked))
        if pieces:
            found[(res.kind, res.id)] = pieces
    return found


def tally_lifecycle(intervals: list[dict[str, Any]], period_start: dt.datetime,
                    period_end: dt.datetime) -> list[Piece]:
    """Tally's lifecycle (``GET …/lifecycle``) in the same form, clipped to the period."""
    lo, hi = _seconds(period_start), _seconds(period_end)
    pieces: list[Piece] = []
    for interval in intervals:
        start = _seconds(_parse(interval["start"]))
        stop = hi if interval["end"] is None else _seconds(_parse(interval["end"]))
        begin, end = max(start, lo), min(stop, hi)
        if end > begin:
            pieces.append((begin, end, interval["project_id"], interval["state"],
                           interval["size"]))
    return pieces


def bill(kind: str, pieces: list[Piece], rating: Rating = DEMO_RATING) -> dict[str, Decimal]:
    """Per project: the rounded lines of one resource's pieces under ``rating``'s price
    list, each piece cut where the list's terms cut lines."""
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for begin, end, project, state, size in pieces:
        for lo, hi in rating.lines(begin, end):
            hourly = rating.hourly(kind, project, state, size, lo)
            if hourly is not None:
                totals[project] += _cents(hourly * (hi - lo) / 3600)
    return dict(totals)


def term_priced(kind: str, pieces: list[Piece], rating: Rating) -> tuple[int, Decimal]:
    """How many of one resource's rounded lines a term's own rate priced, and their sum."""
    count, total = 0, Decimal("0.00")
    for begin, end, project, state, size in pieces:
        for lo, hi in rating.lines(begin, end):
            hourly = rating.hourly(kind, project, state, size, lo)
            if hourly is not None and rating.priced(kind, project, lo)[1]:
                count += 1
                total += _cents(hourly * (hi - lo) / 3600)
    return count, total


Group = tuple[str, str, str | None]  # project, resource type, flavor (None: the type's)


def tiered_hours(kind: str, pieces: list[Piece], rating: Rating = DEMO_RATING
                 ) -> dict[Group, tuple[Fraction, Fraction]]:
    """Per tier group: (Q, W) of one resource's lines the version's tiered entry priced
    (hours; hours × the line's modifier); a line priced by a term's own rate is in no
    tier group."""
    found: dict[Group, tuple[Fraction, Fraction]] = {}
    for begin, end, project, state, size in pieces:
        for lo, hi in rating.lines(begin, end):
            grouped = rating.group(kind, project, state, size, lo)
            if grouped is not None:
                key = (project, kind, grouped[0])
                q, w = found.get(key, (Fraction(0), Fraction(0)))
                found[key] = (q + (hi - lo) / 3600, w + (hi - lo) / 3600 * grouped[1])
    return found


def _parse(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_z(text: str) -> dt.datetime:
    """An RFC 3339 instant in UTC (a price list's, a membership's), naive."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(
        dt.UTC).replace(tzinfo=None)


def _micro(t: float) -> Fraction:
    """A platform instant as Tally stores it: microseconds (what RFC 3339 carries)."""
    text = model.rfc3339(t)
    moment = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return _seconds(moment)


Record = tuple[str, str, Any]  # project, state, size
HALF_CENT = Fraction(1, 200)


def _record_at(pieces: list[Piece], t: Fraction) -> Record | None:
    for begin, end, project, state, size in pieces:
        if begin <= t < end:
            return (project, state, size)
    return None


def _price(kind: str, record: Record | None, t: Fraction, rating: Rating) -> Fraction:
    """Hourly price of a record at ``t`` (nothing where there is none, or no price)."""
    if record is None:
        return Fraction(0)
    return rating.hourly(kind, record[0], record[1], record[2], t) or Fraction(0)


Stretch = tuple[Fraction, Fraction, Fraction]  # start, end (seconds), allowance (EUR)


def disagreements(kind: str, tally: list[Piece], truth: list[Piece],
                  rating: Rating = DEMO_RATING) -> list[Stretch]:
    """The stretches of time over which the two lifecycles book different records
    (or only one books any), each with the larger hourly price of the two records ×
    its length: the most the two bills can differ by over it, before rounding."""
    bounds = {bound for piece in tally + truth for bound in piece[:2]}
    cuts = sorted(bounds | {t for t in rating.cuts if min(bounds) < t < max(bounds)}) \
        if bounds else []
    stretches: list[Stretch] = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        have, want = _record_at(tally, lo), _record_at(truth, lo)
        if have == want:
            continue
        allowance = max(_price(kind, have, lo, rating),
                        _price(kind, want, lo, rating)) * (hi - lo) / 3600
        if stretches and stretches[-1][1] == lo:
            start, _end, before = stretches[-1]
            stretches[-1] = (start, hi, before + allowance)
        else:
            stretches.append((lo, hi, allowance))
    return stretches


@dataclasses.dataclass
class MonthCheck:
    """What ``check_month`` found (``problems`` empty: every rule held)."""

    period: str
    billed: int = 0  # resources on the statements
    total: Decimal = Decimal("0.00")
    exact: int = 0  # resources with the truth's lifecycle: billed the truth's amounts
    bounded: int = 0  # the others: within the bound
    longest: Fraction = Fraction(0)  # the longest disagreement outside transitions, seconds
    deviation: Decimal = Decimal("0.00")  # sum over resources and projects of |Tally - truth|
    tier_lines: int = 0  # projects' tier lines checked (floating IPs', a flavor's)
    tiers_total: Decimal = Decimal("0.00")
    allowance: Fraction = Fraction(0)  # the sum of their bounds
    term_lines: int = 0  # lines of Tally's lifecycles a term's own rate priced
    terms_total: Decimal = Decimal("0.00")
    problems: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return (f"{self.billed} resources billed, total {self.total} EUR; {self.exact} with "
                f"the truth's lifecycle billed exactly the truth's amounts; {self.bounded} "
                f"learnt a change at a sync's poll, off by {self.deviation} EUR in all "
                f"(bound {_cents(self.allowance)} EUR), longest disagreement "
                f"{float(self.longest):.0f} s outside transitions; {self.tier_lines} "
                f"tier lines ({self.tiers_total} EUR) recomputed from the "
                f"lifecycles; {self.term_lines} lines priced by terms' own rates "
                f"({self.terms_total} EUR)")


Getter = Callable[..., Any]  # get(path, **params) -> the decoded JSON body


def _in_transition(resource: Any, lo: Fraction, hi: Fraction) -> Fraction:
    """Seconds of ``[lo, hi)`` the resource spent in transition (an operation under way)."""
    phases = resource.phases
    total = Fraction(0)
    for index, phase in enumerate(phases):
        if not model.in_transition(resource, phase):
            continue
        until = phases[index + 1].at if index + 1 < len(phases) else resource.deleted_at
        begin = max(Fraction(phase.at), lo)
        end = hi if until is None else min(Fraction(until), hi)
        if end > begin:
            total += end - begin
    return total


def _instant(seconds: Fraction) -> str:
    return model.rfc3339(float(seconds))


def _projects(get: Getter, cloud: str, period: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    marker = None
    while True:
        params: dict[str, Any] = {"cloud": cloud, "period": period, "limit": 1000}
        if marker:
            params["marker"] = marker
        page = get("/v1/statements", **params)
        found.update({item["project_id"]: item for item in page["items"]})
        marker = page["next_marker"]
        if not marker:
            return found


def _statements(get: Getter, cloud: str, period: str, check: MonthCheck,
                tiers: dict[Group, Decimal]) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Per resource, per project: the amounts of every project's statement (checked
    against its summary and its own totals); ``tiers`` gets each project's tier lines,
    per group."""
    billed: dict[tuple[str, str], dict[str, Decimal]] = {}
    for project, summary in _projects(get, cloud, period).items():
        body = get("/v1/statements", cloud=cloud, period=period, project_id=project)
        amounts = [Decimal(line["amount"]) for line in body["lines"] if line["amount"]]
        for tier in body.get("tiers", []):
            amounts.append(Decimal(tier["amount"]))
            key = (project, tier["resource_type"], tier.get("flavor"))
            tiers[key] = tiers.get(key, Decimal("0.00")) + Decimal(tier["amount"])
        subtotal = sum(amounts, Decimal("0.00"))
        mine = {k: body[k] for k in ("subtotal", "adjustments_total", "total", "unrated_lines")}
        # A summary also carries the statement's number (null while the period is open).
        totals = {k: v for k, v in summary.items() if k != "number"}
        if totals != {"project_id": project, **mine} or Decimal(body["subtotal"]) != subtotal \
                or Decimal(body["total"]) != subtotal + Decimal(body["adjustments_total"]):
            check.problems.append(f"project {project}: summary {summary} and statement "
                                  f"{mine} disagree (lines sum to {subtotal})")
        for line in body["lines"]:
            per = billed.setdefault((line["resource_type"], line["resource_id"]), {})
            per[project] = per.get(project, Decimal("0.00")) + Decimal(line["amount"] or 0)
    return billed


def _memberships(get: Getter, cloud: str) -> dict[str, list[Member]]:
    """Tally's memberships of ``cloud``'s projects, every account's."""
    rows: list[dict[str, Any]] = []
    marker = None
    while True:
        params: dict[str, Any] = {"limit": 1000}
        if marker:
            params["marker"] = marker
        page = get("/v1/accounts", **params)
        for item in page["items"]:
            rows.extend(get(f"/v1/accounts/{item['account_id']}")["memberships"])
        marker = page["next_marker"]
        if not marker:
            return memberships_of(rows, cloud)


def check_month(get: Getter, cloud: str, world: Any, period: str, period_start: dt.datetime,
                end: dt.datetime, played_until: dt.datetime, tolerance: dt.timedelta,
                prices: dict[str, Any] | None = None,
                accounts: dict[str, str] | None = None) -> MonthCheck:
    """Tally's statements of ``period`` (``prices`` in force, one version: DEMO_PRICES
    unless given; billed up to ``end``: the period's end, or now) against the truth's
    bill, by the rule of this module.  With account terms in ``prices``, Tally's
    lifecycles are rated with Tally's memberships and the truth's with ``accounts``
    (per project, the account it is in from the period's start: its keystone domain's),
    which must be the same."""
    prices = DEMO_PRICES if prices is None else prices
    check = MonthCheck(period)
    tiers: dict[Group, Decimal] = {}
    billed = _statements(get, cloud, period, check, tiers)
    truth = truth_lifecycles(world, period_start, end, played_until)
    rating = truth_rating = Rating(prices)
    if prices.get("account_terms"):
        members = _memberships(get, cloud)
        rating = Rating(prices, members)
        truth_rating = rating
        if accounts is not None:
            expected: dict[str, list[Member]] = {
                p: [(_seconds(period_start), None, a)] for p, a in accounts.items()}
            truth_rating = Rating(prices, expected)
            held = {p: members.get(p) for p in expected}
            if held != expected:
                check.problems.append(f"Tally's memberships {held} are not the truth's "
                                      f"{expected} (each project in its domain's account)")
    # Per tier group, its (Q, W) of the month: Tally's lifecycles, the truth's.
    hours: dict[Group, tuple[Fraction, Fraction]] = {}
    truth_hours: dict[Group, tuple[Fraction, Fraction]] = {}
    limit = Fraction(int(tolerance.total_seconds() * 1_000_000), 1_000_000)
    for key in sorted(set(billed) | set(truth)):
        kind = key[0]
        have = {p: a for p, a in billed.get(key, {}).items() if a}
        lifecycle: list[Piece] = []
        if key in billed:
            path = f"/v1/resources/openstack/{cloud}/{kind}/{key[1]}/lifecycle"
            lifecycle = tally_lifecycle(get(path)["intervals"], period_start, end)
        rated = {p: a for p, a in bill(kind, lifecycle, rating).items() if a}
        count, amount = term_priced(kind, lifecycle, rating)
        check.term_lines += count
        check.terms_total += amount
        pieces = truth.get(key, [])
        _add(hours, tiered_hours(kind, lifecycle, rating))
        _add(truth_hours, tiered_hours(kind, pieces, truth_rating))
        if rated != have:
            check.problems.append(f"{kind} {key[1]}: statement {have} != its rated lifecycle "
                                  f"{rated}")
        want = {p: a for p, a in bill(kind, pieces, truth_rating).items() if a}
        if lifecycle == pieces:
            check.exact += 1
            if want != have:
                check.problems.append(f"{kind} {key[1]}: statement {have} != the truth's "
                                      f"bill {want} of the same lifecycle")
            continue
        check.bounded += 1
        stretches = disagreements(kind, lifecycle, pieces, truth_rating)
        resource = world.by_id.get(key[1])
        for lo, hi, _a in stretches:
            settled = hi - lo - (_in_transition(resource, lo, hi) if resource else 0)
            check.longest = max(check.longest, settled)
            if settled > limit:
                check.problems.append(
                    f"{kind} {key[1]}: Tally's lifecycle and the truth's disagree from "
                    f"{_instant(lo)} to {_instant(hi)}, {float(settled):.0f} s outside "
                    f"transitions, more than the tolerance {float(limit):.0f} s")
        allowance = sum((a for _lo, _hi, a in stretches), Fraction(0))
        for project in sorted(set(have) | set(want)):
            lines = sum(len(rating.lines(piece[0], piece[1]))
                        for piece in lifecycle + pieces if piece[2] == project)
            bound = allowance + HALF_CENT * lines
            off = abs(have.get(project, Decimal(0)) - want.get(project, Decimal(0)))
            check.deviation += off
            check.allowance += bound
            if Fraction(off) > bound:
                check.problems.append(f"{kind} {key[1]} in {project}: statement "
                                      f"{have.get(project)} and the truth's bill "
                                      f"{want.get(project)} differ by {off}, more than the "
                                      f"bound {float(bound):.4f}")
    _check_tiers(check, tiers, hours, truth_hours, prices)
    check.billed = len(billed)
    check.total = sum((a for per in billed.values() for a in per.values()),
                      Decimal("0.00")) + check.tiers_total
    return check


def _add(into: dict[Group, tuple[Fraction, Fraction]],
         more: dict[Group, tuple[Fraction, Fraction]]) -> None:
    for project, (q, w) in more.items():
        have_q, have_w = into.get(project, (Fraction(0), Fraction(0)))
        into[project] = (have_q + q, have_w + w)


def _check_tiers(check: MonthCheck, tiers: dict[Group, Decimal],
                 hours: dict[Group, tuple[Fraction, Fraction]],
                 truth_hours: dict[Group, tuple[Fraction, Fraction]],
                 prices: dict[str, Any]) -> None:
    """Each project's tier line of a group is the tiers' price of its lines' Q and W in
    Tally's own lifecycles (to the cent), and within the slope of the tiers × the hours
    Tally's lifecycles and the truth's disagree by (plus a cent, two roundings) of the
    truth's; where a modifier makes W differ from Q, × the difference in W as well
    (every modifier of a tiered line here is at most 1)."""
    zero = (Fraction(0), Fraction(0))
    for key in sorted(set(tiers) | {g for g, (q, _w) in hours.items() if q},
                      key=lambda g: (g[0], g[1], g[2] or "")):
        project, kind, flavor = key
        what = f"project {project}: tier line of {kind}" + (f" {flavor}" if flavor else "")
        spec = tiers_of(prices, kind, flavor)
        if spec is None:
            check.problems.append(f"{what}: the price list has no such tiers")
            continue
        mode, price_tiers = spec
        have = tiers.get(key)
        q, w = hours.get(key, zero)
        rated = tier_amount(q, w, price_tiers, mode)
        if have != rated:
            check.problems.append(f"{what} {have} != {rated}, the tiers' price of its "
                                  f"{float(q):.3f} tiered hours")
            continue
        check.tier_lines += 1
        check.tiers_total += rated
        truth_q, truth_w = truth_hours.get(key, zero)
        want = tier_amount(truth_q, truth_w, price_tiers, mode)
        apart = abs(q - truth_q) + (0 if (q, truth_q) == (w, truth_w) else abs(w - truth_w))
        if mode == "volume":  # the rate of the tier reached may differ by the slope
            apart += max(w, truth_w)
        bound = _tier_slack(price_tiers) * apart + Fraction(1, 100)
        if Fraction(abs(rated - want)) > bound:
            check.problems.append(f"{what} {rated} and the truth's {want} differ by more "
                                  f"than {float(bound):.4f}")
