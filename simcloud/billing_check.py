"""Bill the simulated month from the simulated cloud's ground truth, independently of
Tally, to check Tally's statements against.

The truth's lifecycle of a resource runs from the instant its creation finished (when
the platform's create notification is dated) to its deletion, cut wherever the record
Tally books (project, state, size) changes; a resource live at the end of what the
world has played runs on, as a statement bills it, to the end of the period.  The
amounts are computed here with exact fractions and a deliberately separate, minimal
reading of ``DEMO_PRICES`` (per line half-even to the cent), not with Tally's code.

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
own).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
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


def _hourly(kind: str, size: dict[str, Any] | None, state: str) -> Fraction | None:
    """Price per hour of one interval under DEMO_PRICES (None: no price)."""
    rates = DEMO_PRICES["rates"]
    size = size or {}
    if kind == "instance":
        instance = rates["instance"]
        if size.get("flavor") in instance["by_flavor"]:
            rate = _q(instance["by_flavor"][size["flavor"]])
        else:
            rate = sum((_num(size[k]) * _q(r) for k, r in instance["by_resources"].items()),
                       Fraction(0))
        return rate * _q(DEMO_PRICES["state_modifiers"]["instance"].get(state, "1"))
    if kind == "volume":
        modifier = _q(rates["volume"]["type_modifiers"].get(size.get("type"), "1"))
        return _num(size["size_gb"]) * _q(rates["volume"]["rate"]) * modifier
    if kind == "image":
        return None if "size_gb" not in size else _num(size["size_gb"]) * _q(
            rates["image"]["rate"])
    if kind == "floating_ip":
        # Each line at the first tier's rate; the project's tier line brings the
        # month's hours to the tiers' price (tier_amount).
        return _q(rates["floating_ip"]["tiers"][0]["rate"])
    if kind == "loadbalancer":
        lb = rates["loadbalancer"]
        return (_q(lb["rate"]) + _num(size.get("listeners", 0)) * _q(lb["listener"])
                + _num(size.get("pools", 0)) * _q(lb["pool"]))
    return None


def graduated(quantity: Fraction) -> Fraction:
    """What DEMO_PRICES' floating-IP tiers price ``quantity`` hours at: each slice at
    its tier's rate."""
    owed, below = Fraction(0), Fraction(0)
    for tier in DEMO_PRICES["rates"]["floating_ip"]["tiers"]:
        top = quantity if tier["up_to"] is None else min(quantity, _q(tier["up_to"]))
        if top > below:
            owed += (top - below) * _q(tier["rate"])
        if tier["up_to"] is None or quantity <= _q(tier["up_to"]):
            return owed
        below = _q(tier["up_to"])
    return owed


def tier_amount(hours: Fraction) -> Decimal:
    """A project's floating-IP tier line: the tiers' price of its month's hours less
    its lines' (every hour at the first tier's rate), rounded once."""
    first = _q(DEMO_PRICES["rates"]["floating_ip"]["tiers"][0]["rate"])
    return _cents(graduated(hours) - first * hours)


def _tier_slack() -> Fraction:
    """How much a tier line moves per hour of difference: first rate − lowest rate."""
    rates = [_q(t["rate"]) for t in DEMO_PRICES["rates"]["floating_ip"]["tiers"]]
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


def bill(kind: str, pieces: list[Piece]) -> dict[str, Decimal]:
    """Per project: the rounded lines of one resource's pieces under DEMO_PRICES."""
    totals: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for begin, end, project, state, size in pieces:
        hourly = _hourly(kind, size, state)
        if hourly is not None:
            totals[project] += _cents(hourly * (end - begin) / 3600)
    return dict(totals)


def _parse(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


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


def _price(kind: str, record: Record | None) -> Fraction:
    """Hourly price of a record (nothing where there is none, or no price)."""
    if record is None:
        return Fraction(0)
    return _hourly(kind, record[2], record[1]) or Fraction(0)


Stretch = tuple[Fraction, Fraction, Fraction]  # start, end (seconds), allowance (EUR)


def disagreements(kind: str, tally: list[Piece], truth: list[Piece]) -> list[Stretch]:
    """The stretches of time over which the two lifecycles book different records
    (or only one books any), each with the larger hourly price of the two records ×
    its length: the most the two bills can differ by over it, before rounding."""
    cuts = sorted({bound for piece in tally + truth for bound in piece[:2]})
    stretches: list[Stretch] = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        have, want = _record_at(tally, lo), _record_at(truth, lo)
        if have == want:
            continue
        allowance = max(_price(kind, have), _price(kind, want)) * (hi - lo) / 3600
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
    tier_lines: int = 0  # projects' floating-IP tier lines checked
    tiers_total: Decimal = Decimal("0.00")
    allowance: Fraction = Fraction(0)  # the sum of their bounds
    problems: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return (f"{self.billed} resources billed, total {self.total} EUR; {self.exact} with "
                f"the truth's lifecycle billed exactly the truth's amounts; {self.bounded} "
                f"learnt a change at a sync's poll, off by {self.deviation} EUR in all "
                f"(bound {_cents(self.allowance)} EUR), longest disagreement "
                f"{float(self.longest):.0f} s outside transitions; {self.tier_lines} "
                f"floating-IP tier lines ({self.tiers_total} EUR) recomputed from the "
                f"lifecycles")


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
                tiers: dict[str, Decimal]) -> dict[tuple[str, str], dict[str, Decimal]]:
    """Per resource, per project: the amounts of every project's statement (checked
    against its summary and its own totals); ``tiers`` gets each project's
    floating-IP tier line."""
    billed: dict[tuple[str, str], dict[str, Decimal]] = {}
    for project, summary in _projects(get, cloud, period).items():
        body = get("/v1/statements", cloud=cloud, period=period, project_id=project)
        amounts = [Decimal(line["amount"]) for line in body["lines"] if line["amount"]]
        for tier in body.get("tiers", []):
            amounts.append(Decimal(tier["amount"]))
            if tier["resource_type"] == "floating_ip":
                tiers[project] = tiers.get(project, Decimal("0.00")) + Decimal(tier["amount"])
            else:
                check.problems.append(f"project {project}: a tier line of "
                                      f"{tier['resource_type']}, which DEMO_PRICES does not tier")
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


def check_month(get: Getter, cloud: str, world: Any, period: str, period_start: dt.datetime,
                end: dt.datetime, played_until: dt.datetime, tolerance: dt.timedelta
                ) -> MonthCheck:
    """Tally's statements of ``period`` (``DEMO_PRICES`` in force, billed up to ``end``:
    the period's end, or now) against the truth's bill, by the rule of this module."""
    check = MonthCheck(period)
    tiers: dict[str, Decimal] = {}
    billed = _statements(get, cloud, period, check, tiers)
    truth = truth_lifecycles(world, period_start, end, played_until)
    # Per project, its floating-IP hours of the month: Tally's lifecycles, the truth's.
    hours: dict[str, Fraction] = defaultdict(Fraction)
    truth_hours: dict[str, Fraction] = defaultdict(Fraction)
    limit = Fraction(int(tolerance.total_seconds() * 1_000_000), 1_000_000)
    for key in sorted(set(billed) | set(truth)):
        kind = key[0]
        have = {p: a for p, a in billed.get(key, {}).items() if a}
        lifecycle: list[Piece] = []
        if key in billed:
            path = f"/v1/resources/openstack/{cloud}/{kind}/{key[1]}/lifecycle"
            lifecycle = tally_lifecycle(get(path)["intervals"], period_start, end)
        rated = {p: a for p, a in bill(kind, lifecycle).items() if a}
        if kind == "floating_ip":
            for begin, stop, project, _state, _size in lifecycle:
                hours[project] += (stop - begin) / 3600
            for begin, stop, project, _state, _size in truth.get(key, []):
                truth_hours[project] += (stop - begin) / 3600
        if rated != have:
            check.problems.append(f"{kind} {key[1]}: statement {have} != its rated lifecycle "
                                  f"{rated}")
        pieces = truth.get(key, [])
        want = {p: a for p, a in bill(kind, pieces).items() if a}
        if lifecycle == pieces:
            check.exact += 1
            if want != have:
                check.problems.append(f"{kind} {key[1]}: statement {have} != the truth's "
                                      f"bill {want} of the same lifecycle")
            continue
        check.bounded += 1
        stretches = disagreements(kind, lifecycle, pieces)
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
            lines = sum(1 for piece in lifecycle + pieces if piece[2] == project)
            bound = allowance + HALF_CENT * lines
            off = abs(have.get(project, Decimal(0)) - want.get(project, Decimal(0)))
            check.deviation += off
            check.allowance += bound
            if Fraction(off) > bound:
                check.problems.append(f"{kind} {key[1]} in {project}: statement "
                                      f"{have.get(project)} and the truth's bill "
                                      f"{want.get(project)} differ by {off}, more than the "
                                      f"bound {float(bound):.4f}")
    _check_tiers(check, tiers, hours, truth_hours)
    check.billed = len(billed)
    check.total = sum((a for per in billed.values() for a in per.values()),
                      Decimal("0.00")) + check.tiers_total
    return check


def _check_tiers(check: MonthCheck, tiers: dict[str, Decimal], hours: dict[str, Fraction],
                 truth_hours: dict[str, Fraction]) -> None:
    """Each project's tier line is the tiers' price of Tally's own floating-IP hours
    (to the cent), and within the slope of the tiers × the hours Tally's lifecycles
    and the truth's disagree by (plus a cent, two roundings) of the truth's."""
    for project in sorted(set(tiers) | {p for p, h in hours.items() if h}):
        have = tiers.get(project)
        rated = tier_amount(hours[project])
        if have != rated:
            check.problems.append(f"project {project}: floating-IP tier line {have} != "
                                  f"{rated}, the tiers' price of its {float(hours[project]):.3f} "
                                  "hours")
            continue
        check.tier_lines += 1
        check.tiers_total += rated
        want = tier_amount(truth_hours[project])
        bound = _tier_slack() * abs(hours[project] - truth_hours[project]) + Fraction(1, 100)
        if Fraction(abs(rated - want)) > bound:
            check.problems.append(f"project {project}: floating-IP tier line {rated} and the "
                                  f"truth's {want} differ by more than {float(bound):.4f}")
