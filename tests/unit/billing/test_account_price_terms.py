"""A billing account's dated rates in a price version (``account_terms``): every
project priced with them for the time its memberships put it in the account,
hand-computed, cutting lines where they begin or stop pricing it; a project's own
override beats its account's; what is refused and why."""

from __future__ import annotations

import copy
import datetime as dt
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from reporting.billing import kinds, pricelist, rating, tiers
from reporting.billing.pricelist import Membership
from tests.unit.billing.test_rating import AFTER, OCT, SMALL, V1, at, item
from tests.unit.billing.test_sized_types import SIZED

ACME: dict[str, Any] = {"acme": [
    {"from": "2026-10-10T00:00:00Z", "until": "2026-10-20T00:00:00Z",
     "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.012"}},
               "floating_ip": {"per": "hour", "rate": "0.004"}}}]}
WITH_ACME: dict[str, Any] = {**V1, "account_terms": ACME}
# p1 is in acme from the 5th to the 15th, then in beta (no terms); p2 in acme throughout
MEMBERS = (Membership("p1", "acme", at(5), at(15)), Membership("p1", "beta", at(15), None),
           Membership("p2", "acme", at(1), None))


def timeline(*documents: dict[str, Any], members: tuple[Membership, ...] = MEMBERS
             ) -> list[pricelist.PriceVersion]:
    return pricelist.expand([pricelist.parse(d, f"default/{n}")
                             for n, d in enumerate(documents, 1)], members)


def rated(*items: rating.RatedInterval, docs: tuple[dict[str, Any], ...] = (WITH_ACME,),
          members: tuple[Membership, ...] = MEMBERS) -> list[rating.Line]:
    return rating.rate_intervals(items, timeline(*docs, members=members), *OCT, AFTER)


def shown(lines: list[rating.Line]) -> list[tuple[str, ...]]:
    return [(x["resource_id"], x["start"][:10], x["end"][:10], x["quantity"], x["rate"],
             x["modifier"], x["amount"]) for x in (line.as_dict() for line in lines)]


def test_the_version_is_cut_where_the_account_rates_begin_or_stop_pricing_a_member() -> None:
    pieces = timeline(WITH_ACME)
    # p1: [5th, 15th) in acme within the term [10th, 20th): 10th and 15th; p2: 10th, 20th
    assert [(p.effective_from, sorted(p.terms)) for p in pieces] == [
        (at(1), []), (at(10), ["p1", "p2"]), (at(15), ["p2"]), (at(20), [])]
    assert pieces[1].terms["p1"].rates["instance"].by_flavor == {"m1.small": Decimal("0.012")}
    assert pieces[1].terms["p1"].discount_percent == 0


def test_without_members_the_account_terms_cut_nothing() -> None:
    assert [p.effective_from for p in timeline(WITH_ACME, members=())] == [at(1)]
    # nor do members of an account without terms
    assert [p.effective_from for p in timeline(
        WITH_ACME, members=(Membership("p1", "beta", at(12), None),))] == [at(1)]


def test_a_member_is_priced_at_its_account_rate_only_while_it_is_a_member() -> None:
    found = rated(item("instance", at(8), at(22), SMALL, project="p1"),
                  item("instance", at(8), at(22), SMALL, project="p3", rid="r3"))
    assert shown(found) == [
        # before the term: 48 h x 0.020 = 0.96
        ("r1", "2026-10-08", "2026-10-10", "48", "0.020", "1", "0.96"),
        # in acme, under its term: 120 h x 0.012 = 1.44
        ("r1", "2026-10-10", "2026-10-15", "120", "0.012", "1", "1.44"),
        # moved to beta on the 15th: the version's rate again, 120 h x 0.020 = 2.40
        ("r1", "2026-10-15", "2026-10-20", "120", "0.020", "1", "2.40"),
        ("r1", "2026-10-20", "2026-10-22", "48", "0.020", "1", "0.96"),
        # a project in no account: the version's rate, in lines cut at the same instants
        ("r3", "2026-10-08", "2026-10-10", "48", "0.020", "1", "0.96"),
        ("r3", "2026-10-10", "2026-10-15", "120", "0.020", "1", "2.40"),
        ("r3", "2026-10-15", "2026-10-20", "120", "0.020", "1", "2.40"),
        ("r3", "2026-10-20", "2026-10-22", "48", "0.020", "1", "0.96")]
    assert rating.subtotal(found[:4]) == Decimal("5.76")  # 6.72 at the version's rate


def test_state_modifiers_still_multiply_the_account_rate_rounded_once_per_line() -> None:
    found = rated(item("instance", at(11), at(11, 7), SMALL, state="shutoff", project="p2"),
                  item("floating_ip", at(12), at(12, 9), {}, project="p2", rid="f"))
    assert [(x.rate, x.modifier, x.exact_amount, x.amount) for x in found] == [
        # 9 h x 0.004 = 0.036 -> 0.04
        (Decimal("0.004"), Decimal("1"), Fraction("0.036"), Decimal("0.04")),
        # 7 h x 0.012 x 0.5 = 0.042 -> 0.04
        (Decimal("0.012"), Decimal("0.5"), Fraction("0.042"), Decimal("0.04"))]


OWN: dict[str, Any] = {"p2": [
    {"from": "2026-10-12T00:00:00Z", "until": "2026-10-14T00:00:00Z", "discount_percent": "10",
     "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.030"}}}}]}


def test_a_projects_own_override_beats_its_accounts_and_its_discount_multiplies_either(
        ) -> None:
    document = {**WITH_ACME, "project_terms": OWN}
    found = rated(item("instance", at(11), at(15), SMALL, project="p2"),
                  item("floating_ip", at(11), at(15), {}, project="p2", rid="f"),
                  docs=(document,))
    assert shown(found) == [
        # the account's 0.004: 24 h x 0.004 = 0.096 -> 0.10
        ("f", "2026-10-11", "2026-10-12", "24", "0.004", "1", "0.10"),
        # p2's own term overrides no floating IP: the account's rate, p2's 10 % off:
        # 48 h x 0.004 x 0.90 = 0.1728 -> 0.17
        ("f", "2026-10-12", "2026-10-14", "48", "0.004", "0.90", "0.17"),
        ("f", "2026-10-14", "2026-10-15", "24", "0.004", "1", "0.10"),
        # 24 h x 0.012 = 0.288 -> 0.29
        ("r1", "2026-10-11", "2026-10-12", "24", "0.012", "1", "0.29"),
        # p2's own instance rate beats acme's: 48 h x 0.030 x 0.90 = 1.296 -> 1.30
        ("r1", "2026-10-12", "2026-10-14", "48", "0.030", "0.90", "1.30"),
        ("r1", "2026-10-14", "2026-10-15", "24", "0.012", "1", "0.29")]


def test_zero_rated_wins_and_the_terms_end_with_their_version() -> None:
    later = {**V1, "effective_from": "2026-10-13T00:00:00Z", "zero_rated_projects": ["p2"]}
    found = rated(item("instance", at(11), at(15), SMALL, project="p2"),
                  docs=(WITH_ACME, later))
    assert [(x["start"][:10], x["price_list_version"], x["rate"], x["zero_rated"], x["amount"])
            for x in (line.as_dict() for line in found)] == [
        ("2026-10-11", "default/1", "0.012", False, "0.58"),  # 48 h x 0.012 = 0.576
        # default/2 has no account terms, and zero-rates p2
        ("2026-10-13", "default/2", "0.020", True, "0.00")]


def test_an_account_rate_takes_its_lines_out_of_the_tiers_of_the_version() -> None:
    tiered = {**V1, "rates": {**V1["rates"], "floating_ip": {
        "per": "hour", "mode": "volume",
        "tiers": [{"up_to": "10", "rate": "0.010"}, {"up_to": None, "rate": "0.001"}]}},
        "account_terms": ACME}
    versions = timeline(tiered)
    lines = rating.rate_intervals(
        [item("floating_ip", at(9), at(11), {}, project="p2", rid="f")], versions, *OCT, AFTER)
    # 24 h in the tiers (0.010 each, then the tier line), 24 h at acme's 0.004
    assert [(x.rate, x.amount) for x in lines] == [(Decimal("0.010"), Decimal("0.24")),
                                                    (Decimal("0.004"), Decimal("0.10"))]
    (tier,) = tiers.tier_lines(lines, versions)
    # the group is the 24 h the version priced: volume mode, all at 0.001: 0.024 - 0.24
    assert (tier.quantity, tier.amount) == (Fraction(24), Decimal("-0.22"))


def test_kinds_price_each_member_with_its_accounts_rates() -> None:
    ranges = kinds.ranges(timeline(WITH_ACME), *OCT)
    found = kinds.price([("instance", False, "active", "{}", SMALL, ""),
                         ("instance", False, "active", "{}", SMALL, "p1")], ranges)
    assert [(k.number, k.project, k.price.rate) for k in found] == [
        (1, "", Decimal("0.020")), (2, "", Decimal("0.020")), (2, "p1", Decimal("0.012")),
        (3, "", Decimal("0.020")), (4, "", Decimal("0.020"))]


def _account(*terms: Any, base: dict[str, Any] = V1, name: str = "acme") -> dict[str, Any]:
    return {**copy.deepcopy(base), "account_terms": {name: list(terms)}}


_RATE = {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.01"}}}


@pytest.mark.parametrize(("document", "reason"), [
    ({**V1, "account_terms": []}, "account_terms must be an object"),
    ({**V1, "account_terms": {"acme": []}},
     "account_terms.acme must be a non-empty list of terms"),
    (_account({"rates": _RATE}, name="a b"),
     "a key of account_terms ('a b') must be an account id: 1 to 255 letters"),
    (_account({"from": "2026-10-02T00:00:00Z"}),
     "account_terms.acme[0].rates must name at least one type of rates to override"),
    (_account({"rates": {}}),
     "account_terms.acme[0].rates must name at least one type of rates to override"),
    (_account({"rates": _RATE, "discount_percent": "5"}),
     "account_terms.acme[0].discount_percent: an account's terms give rates only; its "
     "percentage discount is POST /v1/accounts/{id}/discounts"),
    (_account({"rates": _RATE, "percent": "2"}),
     "account_terms.acme[0] has unknown member(s): percent"),
    (_account({"rates": _RATE, "from": "2026-09-30T00:00:00Z"}),
     "account_terms.acme[0].from falls before the version's effective_from"),
    (_account({"rates": _RATE, "until": "2026-10-05"}),
     "account_terms.acme[0].until must be an RFC 3339 timestamp"),
    (_account({"rates": _RATE, "from": "2026-10-05T00:00:00Z", "until": "2026-10-05T00:00:00Z"}),
     "account_terms.acme[0].until must be after its from"),
    (_account({"rates": _RATE}, {"rates": _RATE, "from": "2026-10-05T00:00:00Z"}),
     "account_terms.acme has terms that overlap; each instant has one"),
    (_account({"rates": {"router": {"per": "hour", "rate": "1"}}}),
     "account_terms.acme[0].rates.router: the version has no rates.router to override"),
    (_account({"rates": {"instance": {"per": "hour"}}}),
     "account_terms.acme[0].rates.instance needs by_flavor or by_resources"),
    (_account({"rates": {"volume": {"per": "hour", "rate": "1"}}}),
     'account_terms.acme[0].rates.volume.per must be "gb_hour"'),
    (_account({"rates": {"floating_ip": {"per": "hour", "rate": 1}}}),
     "account_terms.acme[0].rates.floating_ip.rate must be a non-negative decimal string"),
    (_account({"rates": {"floating_ip": {"per": "hour", "mode": "graduated", "tiers": [
        {"up_to": None, "rate": "0.01"}]}}}),
     "account_terms.acme[0].rates.floating_ip.tiers: an account's terms give a rate, not "
     "tiers"),
    (_account({"rates": {"share": {"per": "hour", "rate": "1"}}}, base=SIZED),
     "account_terms.acme[0].rates.share.size must be 'size_gb' as in rates.share: an override "
     "changes prices, not what a line counts"),
])
def test_invalid_account_terms_say_why(document: Any, reason: str) -> None:
    with pytest.raises(pricelist.PriceListError) as raised:
        pricelist.parse(document)
    assert reason in str(raised.value)


def test_account_terms_in_an_offset_are_read_in_utc() -> None:
    version = pricelist.parse(_account({"rates": _RATE, "from": "2026-10-05T02:00:00+02:00"}))
    (term,) = version.account_terms["acme"]
    assert (term.start, term.end) == (dt.datetime(2026, 10, 5), None)
