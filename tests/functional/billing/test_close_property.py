"""For any history of instances, volumes and shares (a sized type, registered with
its size schema), priced with dated project terms (own rates, discounts) and drawn
tiers (graduated or volume, over volumes' GB-hours, a volume type's own GB-hours, an
instance flavor's hours and later shares' hours), and any
arrival order, split anywhere by
closes, with a price version added after the first close (for a later period): every
frozen statement stays byte for byte what it was, it is the statement of the facts
received up to its cutoff, and frozen + booked + pending adjustments = the recomputed
truth.  Two accounts share p1 (it moves at a drawn instant) and p2 (joining at
another): every account statement's lines are its projects' lines cut at the
memberships' instants, and a closed period's account statement never changes.  Drawn
credits and charges booked by hand on account a (one reversed on a later period
after its close) count in its totals exactly, are refused once their period is
closed, and change no project's statement.  A drawn minimum commitment of account a
from each period's start tops its euros up to the minimum exactly, before the credits
and charges, and none is accepted once the account's statement of the period is
closed.  A drawn percentage discount of account a from each period's start comes off
its usage first (rounded once to the cent, half-even), the commitment topping up the
discounted usage, and none is accepted once the account's statement of the period is
closed.  Drawn account terms of a and b (their own dated rates of instances, volumes
and shares in each version) price every line of p1 and p2 while a membership puts the
project in the account, unless the project's own term overrides the type: each line's
rate is the one those drawn terms and moves give at both its ends, whatever the
arrival order and the closes.  On SQLite and PostgreSQL (fewer examples there: each one truncates and
refills a database)."""

from __future__ import annotations

import collections
import datetime as dt
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import (
    account_statements,
    accounts,
    adjustments,
    closing,
    commitments,
    discounts,
    manual_lines,
    money,
    service,
    statements,
    versions,
)
from reporting.db import engine as db_engine
from reporting.db import writes
from reporting.db.models import SyncRun
from tests.functional.billing import truth
from tests.functional.billing.history import ACCEPT_ALL, PRICES, empty_history, event, seed

NOW = dt.datetime(2026, 12, 15)
START = dt.datetime(2026, 9, 28)
SIZES = [{"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"},
         {"vcpus": 2, "ram_gb": 4, "disk_gb": 10, "flavor": "custom"}]
VOLUME_SIZES = [{"size_gb": 100, "type": "ssd"}, {"size_gb": 3, "type": "lvmdriver-1"}]
SHARE_SIZES = [{"size_gb": 50}, {"size_gb": 7}, {"gigabytes": 1}]  # the last: unrated
# What each resource type's events are called and which states and sizes they carry.
KINDS = {
    "instance": ("compute.instance", ["active", "shutoff"], SIZES),
    "volume": ("volume", ["available", "in-use"], VOLUME_SIZES),
    "share": ("share", ["available", "error"], SHARE_SIZES),
}
SHARE_SCHEMA = {"type": "object", "properties": {"size_gb": {"type": "number", "minimum": 0}}}
# The versions of history.py with a sized type, shares per GiB-hour of size_gb (a
# dearer rate from default/2 on), and dated project terms: p1's own rates and a
# discount inside default/1, a term of p2 that default/2 begins before it would
# (never in force), p1's discount from the 25th and one for zero-rated p-free.
_TERMS = [
    {"p1": [{"from": "2026-10-05T00:00:00Z", "until": "2026-10-12T06:00:00Z",
             "discount_percent": "20",
             "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.017"},
                                    "by_resources": {"vcpus": "0.013"}},
                       "share": {"per": "size_gb_hour", "size": "size_gb",
                                 "rate": "0.00001"}}}],
     "p2": [{"from": "2026-10-20T00:00:00Z", "discount_percent": "50"}]},
    {"p1": [{"from": "2026-10-25T00:00:00Z", "discount_percent": "33.3"}],
     "p-free": [{"discount_percent": "10"}]},
]
SIZED_PRICES = [
    {**document, "project_terms": terms, "rates": {**document["rates"], "share": {
        "per": "size_gb_hour", "size": "size_gb", "rate": rate}}}
    for document, rate, terms in zip(PRICES, ("0.00003", "0.00007"), _TERMS, strict=True)]
# Added after October's close, effective at a drawn instant of November or December:
# other rates, modifiers and zero-rated projects from then on.
LATER = {
    "currency": "EUR", "zero_rated_projects": ["p2"],
    "rates": {
        "instance": {"per": "hour", "by_flavor": {"m1.small": "0.050"},
                     "by_resources": {"vcpus": "0.015"}},
        "volume": {"per": "gb_hour", "rate": "0.00020", "type_modifiers": {"ssd": "3"}},
        # by the hour alone from then on: the unit of a sized type's lines changes too
        "share": {"per": "hour", "rate": "0.0125"},
    },
    "state_modifiers": {"volume": {"in-use": "1.25"}, "instance": {"shutoff": "0.1"},
                        "share": {"error": "0"}},
    # p1 from the version on: a discount and its own volume rate
    "project_terms": {"p1": [{"discount_percent": "7.5", "rates": {
        "volume": {"per": "gb_hour", "rate": "0.00011"}}}]},
}


def _tiers(data: st.DataObject, name: str, ups: list[int], rates: list[str]
           ) -> dict[str, Any]:
    """Drawn tiers (or none) for a rate entry: a mode, 1 to 3 ascending bounds, rates."""
    mode = data.draw(st.sampled_from([None, "graduated", "volume"]), label=f"{name} tiers")
    if mode is None:
        return {}
    bounds = sorted(set(data.draw(st.lists(st.sampled_from(ups), min_size=1, max_size=3),
                                  label=f"{name} tier bounds")))
    drawn = data.draw(st.lists(st.sampled_from(rates), min_size=len(bounds) + 1,
                               max_size=len(bounds) + 1), label=f"{name} tier rates")
    return {"mode": mode, "tiers": [{"up_to": None if up is None else str(up), "rate": rate}
                                    for up, rate in zip([*bounds, None], drawn, strict=True)]}


def _tiered(document: dict[str, Any], name: str, drawn: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its ``rates.<name>`` priced by ``drawn`` tiers (if any)."""
    if not drawn:
        return document
    entry = {k: v for k, v in document["rates"][name].items() if k != "rate"}
    return {**document, "rates": {**document["rates"], name: {**entry, **drawn}}}


def _flavor_tiered(document: dict[str, Any], drawn: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its instances' m1.small priced by ``drawn`` tiers (if any)."""
    if not drawn:
        return document
    instance = document["rates"]["instance"]
    return {**document, "rates": {**document["rates"], "instance": {
        **instance, "by_flavor": {**instance["by_flavor"], "m1.small": drawn}}}}


def _volume_types(data: st.DataObject) -> dict[str, Any]:
    """Drawn ``by_volume_type`` entries: per volume type of the histories none, its own
    rate or its own tiers."""
    drawn: dict[str, Any] = {}
    for name, ups, rates in (("lvmdriver-1", [30, 300, 3000], ["0.00030", "0.00012", "0"]),
                             ("ssd", [300, 3000, 30000], ["0.00015", "0.00005", "0.00040"])):
        tiers = _tiers(data, name, ups, rates)
        if tiers:
            drawn[name] = tiers
        elif data.draw(st.booleans(), label=f"{name} own rate"):
            drawn[name] = data.draw(st.sampled_from(rates), label=f"{name} rate")
    return drawn


def _volume_typed(document: dict[str, Any], drawn: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its volumes of the ``drawn`` volume types priced by their own
    rates or tiers (if any), their ``type_modifiers`` entries gone (one price a type)."""
    if not drawn:
        return document
    volume = document["rates"]["volume"]
    modifiers = {k: v for k, v in volume.get("type_modifiers", {}).items() if k not in drawn}
    return {**document, "rates": {**document["rates"], "volume": {
        **volume, "type_modifiers": modifiers, "by_volume_type": drawn}}}


# An account term's rates: (instance m1.small, instance per vcpu, volume, share), each
# drawn or absent; the later version prices shares by the hour alone, so its terms
# override instances and volumes only.
_ACCOUNT_RATES = {"instance": ["0.011", "0.027"], "vcpus": ["0.004", "0.021"],
                  "volume": ["0.00006", "0.00031"], "share": ["0.00002", "0.00009"]}
# The drawn terms: (version label, account) -> (start, end, {type: rate entry})
AccountTerms = dict[tuple[str, str], tuple[dt.datetime, dt.datetime | None, dict[str, Any]]]


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _account_terms(data: st.DataObject, label: str, effective_from: dt.datetime,
                   drawn: AccountTerms, types: tuple[str, ...] = ("instance", "volume", "share")
                   ) -> dict[str, Any]:
    """Drawn ``account_terms`` of a version (``{}`` for none): per account maybe one
    term from a drawn instant, until another or open, with drawn rates of ``types``;
    recorded in ``drawn`` for the check."""
    document: dict[str, Any] = {}
    for name in ACCOUNTS:
        chosen = [t for t in types if data.draw(st.booleans(), label=f"{label} {name} {t}")]
        if not chosen:
            continue
        start = effective_from + dt.timedelta(
            hours=data.draw(st.integers(0, 24 * 20), label=f"{label} {name} from (h)"))
        length = data.draw(st.none() | st.integers(1, 24 * 30), label=f"{label} {name} (h)")
        end = None if length is None else start + dt.timedelta(hours=length)
        rates: dict[str, Any] = {}
        for rtype in chosen:
            rate = data.draw(st.sampled_from(_ACCOUNT_RATES[rtype]), label=f"{rtype} rate")
            if rtype == "instance":
                vcpu = data.draw(st.sampled_from(_ACCOUNT_RATES["vcpus"]), label="vcpu rate")
                rates[rtype] = {"per": "hour", "by_flavor": {"m1.small": rate},
                                "by_resources": {"vcpus": vcpu}}
            elif rtype == "volume":
                rates[rtype] = {"per": "gb_hour", "rate": rate}
            else:
                rates[rtype] = {"per": "size_gb_hour", "size": "size_gb", "rate": rate}
        term: dict[str, Any] = {"from": _stamp(start), "rates": rates}
        if end is not None:
            term["until"] = _stamp(end)
        document[name] = [term]
        drawn[(label, name)] = (start, end, rates)
    return document


def _own_override(label: str, project: str, rtype: str, moment: dt.datetime) -> bool:
    """Whether ``project``'s own terms (``_TERMS``, ``LATER``) override ``rtype`` at
    ``moment`` under version ``label``: then they, not its account's, price it."""
    if label == "default/1" and project == "p1":
        return rtype in ("instance", "share") and (
            dt.datetime(2026, 10, 5) <= moment < dt.datetime(2026, 10, 12, 6))
    return label == "default/3" and project == "p1" and rtype == "volume"


def _account_at(moves: list[tuple[str, str, dt.datetime]], project: str,
                moment: dt.datetime) -> str | None:
    """The account the drawn memberships put ``project`` in at ``moment``."""
    found = None
    for name, member, at in sorted(moves, key=lambda move: move[2]):
        if member == project and at <= moment:
            found = name
    return found


def _account_rate(line: dict[str, Any], project: str, moment: dt.datetime,
                  terms: AccountTerms, moves: list[tuple[str, str, dt.datetime]]
                  ) -> Decimal | None:
    """The rate drawn account terms give ``line`` at ``moment`` (None: none do)."""
    name = _account_at(moves, project, moment)
    term = terms.get((line["price_list_version"], name or ""))
    if term is None or not term[0] <= moment or (term[1] is not None and moment >= term[1]):
        return None
    rtype = line["resource_type"]
    if rtype not in term[2] or _own_override(line["price_list_version"], project, rtype,
                                             moment):
        return None
    entry = term[2][rtype]
    if rtype != "instance":
        return Decimal(entry["rate"])
    size = line["size"] or {}
    if size.get("flavor") in entry["by_flavor"]:
        return Decimal(entry["by_flavor"][size["flavor"]])
    return Decimal(entry["by_resources"]["vcpus"]) * size["vcpus"]


def _check_account_rates(session: Session, terms: AccountTerms,
                         moves: list[tuple[str, str, dt.datetime]]) -> None:
    """Every line of p1 and p2 is priced at the rate the drawn account terms give it
    where they do, the same at both its ends (a line is cut where they change)."""
    for period in ("2026-10", "2026-11", "2026-12"):
        for project in ("p1", "p2"):
            document = json.loads(service.statement_text(session, "c1", project, period, NOW))
            for line in document["lines"]:
                start, end = _instant(line["start"]), _instant(line["end"])
                expected = _account_rate(line, project, start, terms, moves)
                last = max(start, end - dt.timedelta(microseconds=1))
                assert expected == _account_rate(line, project, last, terms, moves), line
                if expected is not None and line["rate"] is not None:
                    assert Decimal(line["rate"]) == expected, line


def register_share(session: Session) -> None:
    """Register the share's size schema (a version pricing shares needs it)."""
    writes.of(session).upsert_resource_type(session, "openstack", "share", SHARE_SCHEMA, NOW)


def _fact(rtype: str, rid: str, verb: str, stamp: str, **payload: Any) -> dict[str, Any]:
    return event(f"{KINDS[rtype][0]}.{verb}", rid, stamp, resource_type=rtype, **payload)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    items = []
    for number in range(draw(st.integers(1, 4))):
        rtype = draw(st.sampled_from(sorted(KINDS)))
        _name, states, sizes = KINDS[rtype]
        rid = f"r{number}"
        home = draw(st.sampled_from(["p1", "p2", "p-free"]))
        for _ in range(draw(st.integers(1, 6))):
            when = START + dt.timedelta(hours=draw(st.integers(0, 24 * 45)))
            stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            kind = draw(st.sampled_from(["create", "state", "move", "resize", "delete"]))
            project = draw(st.sampled_from(["p1", "p2", "p-free"]))
            payload: dict[str, Any] = {"project_id": home}
            verb = "update"
            if kind == "create":
                verb = "create.end"
                payload = {"project_id": project, "state": states[0],
                           "size": draw(st.sampled_from(sizes))}
            elif kind == "state":
                payload["state"] = draw(st.sampled_from(states))
            elif kind == "move":
                payload["project_id"] = project
            elif kind == "resize":
                payload["size"] = draw(st.sampled_from(sizes))
            else:
                verb, payload = "delete.end", {"project_id": ""}
            items.append(_fact(rtype, rid, verb, stamp, **payload))
    return draw(st.permutations(items))


ACCOUNTS = ("a", "b")


def _instant(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def _cut(line: dict[str, Any], stretches: list[accounts.Stretch]) -> list[tuple[Any, ...]]:
    """Where ``line`` of a project's statement belongs on account statements: its part
    within each stretch of a membership."""
    start, end = _instant(line["start"]), _instant(line["end"])
    found = []
    for stretch in stretches:
        piece = (max(start, stretch.start), min(end, stretch.end))
        if piece[0] < piece[1] or (start == end and stretch.start <= start < stretch.end):
            found.append((line["resource_id"], line["event_id"], *piece,
                          line["price_list_version"], line["rate"], line["modifier"]))
    return found


def _check_accounts(session: Session, period: str,
                    closed_accounts: dict[tuple[str, str], str]) -> None:
    start, end = statements.period_bounds(period)
    documents = {name: account_statements.document(session, name, period, NOW)
                 for name in ACCOUNTS}
    for name, document in documents.items():
        if (name, period) in closed_accounts:
            text = json.dumps(document, separators=(",", ":"))
            assert text == closed_accounts[(name, period)]
        # Totals: the sections', less the discount in force at the period's start
        # (rounded once), topped up to the commitment in force then (in its currency),
        # plus the credits and charges, exactly, per currency.
        committed = commitments.in_force(session, name, start)
        discount = discounts.in_force(session, name, start)
        for total in document["totals"]:
            code = total["currency"]
            sections = [x for x in document["projects"] if x["currency"] == code]
            booked = [Decimal(x["amount"]) for x in document["manual_lines"]
                      if x["currency"] == code]
            assert Decimal(total["manual_total"]) == money.total(booked)
            usage = money.total(Decimal(x["total"]) for x in sections)
            off = Decimal(0)
            if discount is not None:
                off = -(usage * discount.percent).scaleb(-2).quantize(
                    Decimal("0.01"), rounding=ROUND_HALF_EVEN)
                assert total["discount"] == {
                    "effective_from": discount.effective_from.strftime(
                        "%Y-%m-%dT%H:%M:%S.000000Z"),
                    "percent": format(discount.percent.normalize(), "f"),
                    "amount": money.money(off, 2)}
            else:
                assert "discount" not in total
            usage += off
            shortfall = Decimal(0)
            if committed is not None and committed.currency == code:
                shortfall = max(Decimal(0), committed.minimum - usage)
                assert total["commitment"] == {
                    "effective_from": committed.effective_from.strftime(
                        "%Y-%m-%dT%H:%M:%S.000000Z"),
                    "minimum": money.money(committed.minimum, 2),
                    "shortfall": money.money(shortfall, 2)}
            else:
                assert "commitment" not in total
            assert Decimal(total["total"]) == money.total([usage, shortfall, *booked])
    for project in ("p1", "p2"):
        stretches = [s for name in ACCOUNTS for s in accounts.stretches(session, name, start, end)
                     if s.project_id == project]
        whole = json.loads(service.statement_text(session, "c1", project, period, NOW))
        expected = sorted(piece for line in whole["lines"] for piece in _cut(line, stretches))
        pieces = [(line["resource_id"], line["event_id"], _instant(line["start"]),
                   _instant(line["end"]), line["price_list_version"], line["rate"],
                   line["modifier"])
                  for document in documents.values() for section in document["projects"]
                  if section["project_id"] == project for line in section["lines"]]
        assert sorted(pieces) == expected
        unsplit = {(x["resource_id"], x["start"], x["end"]): x["amount"] for x in whole["lines"]}
        for document in documents.values():
            for section in document["projects"]:
                if section["project_id"] != project:
                    continue
                for line in section["lines"]:
                    key = (line["resource_id"], line["start"], line["end"])
                    if key in unsplit:
                        assert line["amount"] == unsplit[key]
                # The adjustments and the tier lines go to the account holding the
                # project at the start.
                at_start = section["from"] == whole["period"] + "-01T00:00:00.000000Z"
                assert section["adjustments"] == (whole["adjustments"] if at_start else [])
                assert section.get("tiers") == (whole.get("tiers") if at_start else None)


def _check(factory: sessionmaker[Session], frozen_before: dict[str, dict[str, Any]],
           closed_accounts: dict[tuple[str, str], str], terms: AccountTerms,
           moves: list[tuple[str, str, dt.datetime]]) -> None:
    with factory() as session:
        for period in ("2026-10", "2026-11", "2026-12"):
            _check_accounts(session, period, closed_accounts)
        _check_account_rates(session, terms, moves)
        closed = statements.closed_periods(session, "c1")
        timeline = versions.timeline(session, "c1")
        pending: dict[str, dict[str, Decimal]] = collections.defaultdict(
            lambda: collections.defaultdict(lambda: Decimal(0)))
        everyone = adjustments.pending(session, "c1", "2026-12", closed, timeline, NOW)
        for adjustment in everyone:
            pending[adjustment.source_period][adjustment.project_id] += adjustment.amount
        # One project's statement reads only its own facts, and finds the same.
        for project in ("p1", "p2", "p-free", ""):
            assert adjustments.pending(session, "c1", "2026-12", closed, timeline, NOW,
                                       project) == [a for a in everyone
                                                    if a.project_id == project]
        for period, row in closed.items():
            frozen = truth.frozen(session, "c1", period)
            assert {p: body for p, (_s, body) in frozen.items()} == frozen_before[period]
            at_cutoff = truth.recomputed(session, "c1", period, NOW, row.cutoff_seq)
            assert truth.nonzero({p: s for p, (s, _b) in frozen.items()}) == truth.nonzero(
                at_cutoff)
            whole = truth.recomputed(session, "c1", period, NOW)
            booked = truth.booked(session, "c1", period)
            projects = set(whole) | set(frozen) | set(booked) | set(pending[period])
            assert truth.nonzero({
                p: (frozen[p][0] if p in frozen else Decimal(0)) + booked.get(p, Decimal(0))
                + pending[period][p]
                for p in projects
            }) == truth.nonzero(whole)


# Every table a price list or a close writes, beside the history's.
_TABLES = ("rejected_events", "price_list_versions", "billing_periods", "closed_statements",
           "closed_kinds", "closed_resource_amounts", "billing_adjustments", "sync_runs",
           "billing_accounts", "account_memberships", "account_lines", "account_commitments",
           "account_discounts")


@contextmanager
def _sqlite_database(template: Path, path: Path) -> Iterator[sessionmaker[Session]]:
    shutil.copy(template, path)
    engine = db_engine.make_engine(f"sqlite:///{path}")
    try:
        yield db_engine.make_sessionmaker(engine)
    finally:
        engine.dispose()
        path.unlink()


@contextmanager
def _emptied(factory: sessionmaker[Session]) -> Iterator[sessionmaker[Session]]:
    with factory() as session:
        empty_history(session, *_TABLES)
    yield factory


def _example(factory: sessionmaker[Session], history: list[dict[str, Any]],
             data: st.DataObject) -> None:
    # Drawn tiers: the volumes' GB-hours (each volume type drawn its own rate or tiers
    # apart), and the m1.small instances' hours of default/1
    # and /2 (p1's own instance rates inside default/1 price its instances without
    # them), the shares' hours from the later version on (p1's own volume rate there).
    volume_tiers = _tiers(data, "volume", [30, 300, 3000, 30000],
                          ["0.00010", "0.00004", "0.00025", "0"])
    volume_types = _volume_types(data)
    flavor_tiers = _tiers(data, "m1.small", [10, 100, 1000], ["0.020", "0.010", "0.030"])
    later_prices = _tiered(LATER, "share", _tiers(data, "share", [10, 100, 1000],
                                           ["0.0125", "0.005", "0.02"]))
    terms: AccountTerms = {}
    with factory() as session:
        register_share(session)
        for name in ACCOUNTS:  # before the versions naming them in their account terms
            accounts.add(session, {"account_id": name}, "test", NOW)
        for number, document in enumerate(SIZED_PRICES, 1):
            versions.add(session, "default", {**_flavor_tiered(_volume_typed(
                _tiered(document, "volume", volume_tiers), volume_types), flavor_tiers),
                "account_terms": _account_terms(
                    data, f"default/{number}",
                    dt.datetime.strptime(document["effective_from"], "%Y-%m-%dT%H:%M:%SZ"),
                    terms)},
                "test", NOW)
        # Observed since before October (the property is about arrival orders and close
        # points, not where the history begins: test_close_acceptance.py is).
        moves = [("a", "p1", dt.datetime(2026, 9, 1)),
                 ("b", "p1", START + dt.timedelta(
                     hours=data.draw(st.integers(0, 24 * 80), label="p1 moves (h)"))),
                 ("b", "p2", START + dt.timedelta(
                     hours=data.draw(st.integers(0, 24 * 80), label="p2 joins (h)")))]
        for name, project, at in moves:
            accounts.add_membership(session, name, {
                "cloud": "c1", "project_id": project,
                "effective_from": _stamp(at)}, "test", NOW)
        session.add(SyncRun(id="run-0", cloud="c1", status="completed",
                            started_at=dt.datetime(2026, 9, 30),
                            completed_at=dt.datetime(2026, 9, 30, 0, 5), stats={}))
        session.commit()
    first = data.draw(st.integers(0, len(history)))
    second = data.draw(st.integers(first, len(history)))
    later = data.draw(st.none() | st.integers(0, 24 * 44), label="later version (h)")
    frozen_before: dict[str, dict[str, Any]] = {}
    closed_accounts: dict[tuple[str, str], str] = {}
    for chunk, period in ((history[:first], "2026-10"), (history[first:second], "2026-11")):
        if chunk:
            seed(factory, chunk)
        _book_drawn(factory, period, data)
        _commit_drawn(factory, period, data)
        _discount_drawn(factory, period, data)
        closing.close(factory, "c1", period, "test", NOW, ACCEPT_ALL)
        with factory() as session, pytest.raises(manual_lines.LineRefused,
                                                 match="is closed"):
            manual_lines.book(session, "a", _line("charge", "1.00", period), "test", NOW)
        with factory() as session:
            frozen_before[period] = {
                p: body for p, (_s, body) in truth.frozen(session, "c1", period).items()}
            for name in ACCOUNTS:
                document = account_statements.document(session, name, period, NOW)
                closed_accounts[(name, period)] = json.dumps(document, separators=(",", ":"))
                if document["status"] == "closed":
                    # In force at the closed period's start: refused (its instant is
                    # taken, or it would change the closed statement), nothing stored.
                    with pytest.raises(commitments.CommitmentRefused):
                        commitments.add(session, name, {
                            "effective_from": f"{period}-01T00:00:00Z", "currency": "EUR",
                            "minimum": "1000"}, "test", NOW)
                    with pytest.raises(discounts.DiscountRefused):
                        discounts.add(session, name, {
                            "effective_from": f"{period}-01T00:00:00Z", "percent": "50",
                            "reason": "too late"}, "test", NOW)
            session.rollback()
        _check(factory, frozen_before, closed_accounts, terms, moves)
        if period == "2026-10" and data.draw(st.booleans(), label="reverse on November"):
            with factory() as session:
                first_line = manual_lines.listed(session, "a", cloud="c1", period="2026-10",
                                                 after=None, limit=1)
                if first_line:
                    manual_lines.book(session, "a", {
                        "reverses": first_line[0][0].number, "reason": "reversed later",
                        "period": "2026-11", "effective_at": "2026-11-02T00:00:00Z"},
                        "test", NOW)
                    session.commit()
        if period == "2026-10" and later is not None:
            effective = dt.datetime(2026, 11, 1) + dt.timedelta(hours=later)
            with factory() as session:
                versions.add(session, "default", {
                    **later_prices, "effective_from": _stamp(effective),
                    "account_terms": _account_terms(data, "default/3", effective, terms,
                                                    ("instance", "volume"))},
                    "test", NOW)
                session.commit()
    if history[second:]:
        seed(factory, history[second:])
    _check(factory, frozen_before, closed_accounts, terms, moves)


def _line(kind: str, amount: str, period: str) -> dict[str, Any]:
    return {"kind": kind, "cloud": "c1", "period": period, "amount": amount,
            "reason": "drawn", "effective_at": f"{period}-10T00:00:00Z"}


def _book_drawn(factory: sessionmaker[Session], period: str, data: st.DataObject) -> None:
    """Book 0 to 3 drawn credits and charges of whole cents on account a's ``period``."""
    drawn = data.draw(st.lists(st.tuples(st.sampled_from(manual_lines.KINDS),
                                         st.integers(1, 100_000)), max_size=3),
                      label=f"lines of {period}")
    with factory() as session:
        for kind, cents in drawn:
            manual_lines.book(session, "a", _line(kind, money.text(money.minor(cents, 2)),
                                                  period), "test", NOW)
        session.commit()


def _commit_drawn(factory: sessionmaker[Session], period: str, data: st.DataObject) -> None:
    """Maybe a drawn minimum of whole cents on account a from ``period``'s start."""
    cents = data.draw(st.none() | st.integers(0, 2_000), label=f"minimum of {period}")
    if cents is None:
        return
    with factory() as session:
        commitments.add(session, "a", {"effective_from": f"{period}-01T00:00:00Z",
                                       "currency": "EUR",
                                       "minimum": money.text(money.minor(cents, 2))},
                        "test", NOW)
        session.commit()


def _discount_drawn(factory: sessionmaker[Session], period: str, data: st.DataObject) -> None:
    """Maybe a drawn percent (hundredths, 0 to 100) off account a from ``period``'s
    start."""
    hundredths = data.draw(st.none() | st.integers(0, 10_000), label=f"discount of {period}")
    if hundredths is None:
        return
    with factory() as session:
        discounts.add(session, "a", {"effective_from": f"{period}-01T00:00:00Z",
                                     "percent": money.text(money.minor(hundredths, 2)),
                                     "reason": "drawn"}, "test", NOW)
        session.commit()


@pytest.mark.parametrize(("backend", "examples"), [("sqlite", 60), ("postgresql", 25)])
def test_frozen_plus_adjustments_is_the_truth(backend: str, examples: int, tmp_path: Path,
                                              request: pytest.FixtureRequest) -> None:
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_migrated_template")  # copied, never written
        runs = iter(range(1_000_000))

        def fresh() -> Any:
            return _sqlite_database(template, tmp_path / f"run-{next(runs)}.sqlite")
    else:
        engine = db_engine.make_engine(request.getfixturevalue("pg_migrated_database"))
        request.addfinalizer(engine.dispose)
        factory = db_engine.make_sessionmaker(engine)

        def fresh() -> Any:
            return _emptied(factory)

    @given(history=histories(), data=st.data())
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]], data: st.DataObject) -> None:
        with fresh() as factory:
            _example(factory, history, data)

    run()
