"""The independent rating of ``simcloud.billing_check`` prices lines by account terms
(and a project's own terms above them) by the rules of docs/statements.md, "Account
terms", with amounts computed by hand."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from fractions import Fraction
from typing import Any

from simcloud.billing_check import (
    DEMO_PRICES,
    Rating,
    bill,
    demo_prices,
    memberships_of,
    tier_amount,
    tiered_hours,
)

SMALL = {"flavor": "m1.small"}
TINY = {"flavor": "m1.tiny"}


def at(day: int, hour: int = 0, minute: int = 0, month: int = 10) -> Fraction:
    moment = dt.datetime(2026, month, day, hour, minute, tzinfo=dt.UTC)
    return Fraction(int(moment.timestamp()))


def document(**extra: Any) -> dict[str, Any]:
    return {"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
            "rates": {"instance": {"per": "hour",
                                   "by_flavor": {"m1.small": "0.020", "m1.tiny": "0.010"}},
                      "floating_ip": {"per": "hour", "rate": "0.005"}},
            "account_terms": {"acme": [
                {"from": "2026-10-10T00:00:00Z", "until": "2026-10-20T00:00:00Z",
                 "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.012"}},
                           "floating_ip": {"per": "hour", "rate": "0.004"}}}]},
            **extra}


def membership(project: str, account: str, day: int) -> dict[str, Any]:
    return {"cloud": "c1", "project_id": project, "account_id": account,
            "effective_from": f"2026-10-{day:02d}T00:00:00.000000Z"}


def test_a_member_is_priced_by_its_accounts_term_only_while_a_member() -> None:
    """p1 in acme from the 5th, moved to beta (no terms) on the 15th: an m1.small from
    the 8th to the 22nd is 48 h × 0.020 + 120 h × 0.012 + 168 h × 0.020."""
    members = memberships_of([membership("p1", "acme", 5), membership("p1", "beta", 15)], "c1")
    assert members == {"p1": [(at(5), at(15), "acme"), (at(15), None, "beta")]}
    rating = Rating(document(), members)
    piece = (at(8), at(22), "p1", "active", SMALL)
    assert bill("instance", [piece], rating) == {"p1": Decimal("5.76")}  # 0.96 + 1.44 + 3.36
    # A project in no account pays the version's rate: 336 h × 0.020.
    assert bill("instance", [(at(8), at(22), "p9", "active", SMALL)], rating) == {
        "p9": Decimal("6.72")}
    # Only the term's stretch within the membership cuts lines: the 10th and the 15th.
    assert rating.cuts == [at(10), at(15)]


def test_a_term_replaces_the_versions_entry_whole() -> None:
    """The term names m1.small only: an m1.tiny of a member is unrated under it."""
    rating = Rating(document(), memberships_of([membership("p1", "acme", 1)], "c1"))
    # 24 h before the term at 0.010, nothing for its 24 h under it.
    assert bill("instance", [(at(9), at(11), "p1", "active", TINY)], rating) == {
        "p1": Decimal("0.24")}


def test_every_projects_line_is_cut_where_an_accounts_term_begins_for_a_member() -> None:
    """An m1.tiny of p3 (in no account) from 23:45 on the 9th to 01:15 on the 10th:
    cut at the 10th (acme has a member then), 0.25 h × 0.010 = 0.0025 → 0.00 and
    1.25 h × 0.010 = 0.0125 → 0.01; uncut (acme without members), 0.015 → 0.02."""
    piece = (at(9, 23, 45), at(10, 1, 15), "p3", "active", TINY)
    with_member = Rating(document(), memberships_of([membership("p1", "acme", 1)], "c1"))
    assert bill("instance", [piece], with_member) == {"p3": Decimal("0.01")}
    assert bill("instance", [piece], Rating(document())) == {"p3": Decimal("0.02")}
    # A member joining on the 12th: the term prices it from then, not from the 10th.
    later = Rating(document(), memberships_of([membership("p4", "acme", 12)], "c1"))
    assert later.cuts == [at(12), at(20)]
    assert bill("instance", [piece], later) == {"p3": Decimal("0.02")}


def test_a_projects_own_term_beats_its_accounts_and_its_discount_multiplies_either() -> None:
    """p2 in acme, with a term of its own from the 12th to the 14th overriding instances
    with 0.030 at 10 % off: its m1.small 48 h × 0.030 × 0.90 = 1.296 → 1.30, its
    floating IP 48 h × 0.004 (acme's) × 0.90 = 0.1728 → 0.17."""
    own = {"p2": [{"from": "2026-10-12T00:00:00Z", "until": "2026-10-14T00:00:00Z",
                   "discount_percent": "10",
                   "rates": {"instance": {"per": "hour", "by_flavor": {"m1.small": "0.030"}}}}]}
    rating = Rating(document(project_terms=own),
                    memberships_of([membership("p2", "acme", 1)], "c1"))
    assert bill("instance", [(at(12), at(14), "p2", "active", SMALL)], rating) == {
        "p2": Decimal("1.30")}
    assert bill("floating_ip", [(at(12), at(14), "p2", None, {})], rating) == {
        "p2": Decimal("0.17")}
    assert rating.cuts == [at(10), at(12), at(14), at(20)]


def test_a_line_priced_by_an_accounts_rate_is_in_no_tier_group() -> None:
    """A floating IP of p2 (in acme) from the 8th to the 12th: 48 h at the version's
    entry (tiered), 48 h at acme's rate (0.24 + 0.192 → 0.19), out of the group."""
    tiered = document()
    tiered["rates"]["floating_ip"] = {"per": "hour", "mode": "graduated", "tiers": [
        {"up_to": "24", "rate": "0.005"}, {"up_to": None, "rate": "0.002"}]}
    rating = Rating(tiered, memberships_of([membership("p2", "acme", 1)], "c1"))
    pieces = [(at(8), at(12), "p2", None, {})]
    assert bill("floating_ip", pieces, rating) == {"p2": Decimal("0.43")}
    assert tiered_hours("floating_ip", pieces, rating) == {
        ("p2", "floating_ip", None): (Fraction(48), Fraction(48))}
    # The tier line over those 48 h: 24 × 0.005 + 24 × 0.002 = 0.168 against 0.24.
    assert tier_amount(Fraction(48), tiers=tiered["rates"]["floating_ip"]["tiers"]) == \
        Decimal("-0.07")


def test_a_discount_makes_the_tier_line_its_share_of_the_tiered_price() -> None:
    """DEMO_PRICES' tiers (48 h at 0.005, above at 0.003): Q = 100 h prices 0.396, so
    the tier line is (0.00396 − 0.005) × W: −0.104 → −0.10 with W = Q, −0.0936 →
    −0.09 with 10 % off (W = 90)."""
    assert tier_amount(Fraction(100)) == Decimal("-0.10")
    assert tier_amount(Fraction(100), Fraction(90)) == Decimal("-0.09")


def test_the_demos_account_terms() -> None:
    """demo_prices: sim-default's floating IPs at 0.004 from 02:00 on the 1st to the 3rd,
    its instances cheaper from the 10th to the 20th, by resources for a flavor the term
    does not name: a c1.scratch (4 vCPUs, 8 GiB, 140 GB) from the 9th to the 11th is
    24 h × 0.090 = 2.16 and 24 h × (0.032 + 0.032 + 0.014) = 1.872 → 1.87."""
    prices = demo_prices("sim-default", dt.datetime(2026, 11, 1))
    assert "account_terms" not in DEMO_PRICES
    rows = [{"cloud": "sim", "project_id": "p1", "account_id": "sim-default",
             "effective_from": "2026-11-01T00:00:00.000000Z"}]
    rating = Rating(prices, memberships_of(rows, "sim"))
    assert rating.cuts == [at(1, 2, month=11), at(3, month=11), at(10, month=11),
                           at(20, month=11)]
    scratch = {"flavor": "c1.scratch", "vcpus": 4, "ram_gb": 8.0, "disk_gb": 140}
    assert bill("instance", [(at(9, month=11), at(11, month=11), "p1", "active", scratch)],
                rating) == {"p1": Decimal("4.03")}
    # Shut off under the term: 10 h × 0.015 × 0.5 = 0.075 → 0.08 (half to even).
    assert bill("instance", [(at(12, month=11), at(12, 10, month=11), "p1", "shutoff",
                              SMALL)], rating) == {"p1": Decimal("0.08")}
    # A floating IP from 00:00 on the 1st to 03:00 on the 3rd: 2 h × 0.005 = 0.01,
    # 46 h × 0.004 = 0.184 → 0.18 out of the tiers, 3 h × 0.005 = 0.015 → 0.02; 5 h tiered.
    pieces = [(at(1, month=11), at(3, 3, month=11), "p1", None, {})]
    assert bill("floating_ip", pieces, rating) == {"p1": Decimal("0.21")}
    assert tiered_hours("floating_ip", pieces, rating) == {
        ("p1", "floating_ip", None): (Fraction(5), Fraction(5))}


def test_the_demos_m1_small_tiers_and_the_term_that_takes_a_members_out() -> None:
    """demo_prices tiers m1.small per project's month (0.020 up to 100 h, 0.012 above):
    an m1.small of p2 (in no account) active from the 1st to the 5th (96 h) and shut
    off (× 0.5) to the 6th (24 h) is Q = 120 h, W = 96 + 12 = 108; P(120) = 100 ×
    0.020 + 20 × 0.012 = 2.24, owed 2.24 / 120 × 108 = 2.016, lines 0.020 × 108 =
    2.16: tier line −0.144 → −0.14.  Of p1 (in sim-default), from the 9th to the 11th:
    24 h in the group, 24 h at the term's 0.015, out of it."""
    prices = demo_prices("sim-default", dt.datetime(2026, 11, 1))
    rows = [{"cloud": "sim", "project_id": "p1", "account_id": "sim-default",
             "effective_from": "2026-11-01T00:00:00.000000Z"}]
    rating = Rating(prices, memberships_of(rows, "sim"))
    pieces = [(at(1, month=11), at(5, month=11), "p2", "active", SMALL),
              (at(5, month=11), at(6, month=11), "p2", "shutoff", SMALL)]
    assert tiered_hours("instance", pieces, rating) == {
        ("p2", "instance", "m1.small"): (Fraction(120), Fraction(108))}
    assert bill("instance", pieces, rating) == {"p2": Decimal("2.16")}  # 1.92 + 0.24
    spec = prices["rates"]["instance"]["by_flavor"]["m1.small"]
    assert tier_amount(Fraction(120), Fraction(108), spec["tiers"]) == Decimal("-0.14")
    member = [(at(9, month=11), at(11, month=11), "p1", "active", SMALL)]
    assert tiered_hours("instance", member, rating) == {
        ("p1", "instance", "m1.small"): (Fraction(24), Fraction(24))}
    assert bill("instance", member, rating) == {"p1": Decimal("0.84")}  # 0.48 + 0.36
    # A flavor without tiers is in no group.
    assert tiered_hours("instance", [(at(1, month=11), at(2, month=11), "p2", "active",
                                      {"flavor": "m1.medium"})], rating) == {}


def test_volume_mode_prices_the_whole_quantity_at_the_tier_it_reaches() -> None:
    tiers = [{"up_to": "50", "rate": "0.08"}, {"up_to": None, "rate": "0.06"}]
    # An m1.large of 60 h by volume: 60 × 0.06 = 3.60 against 4.80 at the first rate.
    assert tier_amount(Fraction(60), tiers=tiers, mode="volume") == Decimal("-1.20")
    assert tier_amount(Fraction(50), tiers=tiers, mode="volume") == Decimal("0.00")
