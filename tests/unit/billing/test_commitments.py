"""A minimum commitment applied to an account's totals, computed by hand: the top-up
to the minimum, none above it, credits and charges after it, and no commitment
leaving the totals as they were (docs/statements.md, "Minimum commitments")."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from reporting.billing import account_statements, commitments
from reporting.db.account_models import AccountCommitment, AccountLine

AT = dt.datetime(2026, 10, 1)


def _section(subtotal: str, adjustments: str, currency: str = "EUR") -> dict[str, Any]:
    total = str(Decimal(subtotal) + Decimal(adjustments))
    return {"currency": currency, "places": 2, "subtotal": subtotal,
            "adjustments_total": adjustments, "total": total, "unrated_lines": 0}


def _commitment(minimum: str, currency: str = "EUR", places: int = 2) -> AccountCommitment:
    return AccountCommitment(account_id="acme", effective_from=AT, currency=currency,
                             minimum=Decimal(minimum), minor_units=places, created_at=AT,
                             created_by="t")


def _credit(amount: str) -> AccountLine:
    return AccountLine(account_id="acme", number=1, cloud="c1", period="2026-10",
                       project_id=None, kind="credit", amount=Decimal(amount), currency="EUR",
                       minor_units=2, reason="r", effective_at=AT, reverses=None,
                       created_at=AT, created_by="t")


def test_usage_below_the_minimum_is_topped_up_then_credited() -> None:
    # Usage 37.00 + 0.60 = 37.60 under 50.00: 12.40 short; a credit of 5.00 after it.
    sections = [_section("30.00", "0.60"), _section("7.00", "0.00")]
    (total,) = account_statements._totals(sections, [_credit("5.00")], _commitment("50.00"))
    assert total == {
        "currency": "EUR", "subtotal": "37.00", "adjustments_total": "0.60",
        "commitment": {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "50.00",
                       "shortfall": "12.40"},
        "manual_total": "-5.00", "total": "45.00", "unrated_lines": 0}


def test_usage_above_the_minimum_has_no_shortfall() -> None:
    (total,) = account_statements._totals([_section("61.25", "-1.25")], [],
                                          _commitment("50.00"))
    assert (total["commitment"]["shortfall"], total["total"]) == ("0.00", "60.00")
    # Usage exactly the minimum: nothing to top up either.
    (total,) = account_statements._totals([_section("50.00", "0.00")], [],
                                          _commitment("50"))
    assert (total["commitment"]["shortfall"], total["total"]) == ("0.00", "50.00")


def test_no_commitment_leaves_the_totals_as_they_were() -> None:
    (total,) = account_statements._totals([_section("37.00", "0.60")], [_credit("5.00")],
                                          None)
    assert total == {"currency": "EUR", "subtotal": "37.00", "adjustments_total": "0.60",
                     "manual_total": "-5.00", "total": "32.60", "unrated_lines": 0}


def test_a_commitment_applies_to_its_currency_only() -> None:
    totals = account_statements._totals([_section("10.00", "0.00")], [],
                                        _commitment("1000", "JPY", 0))
    assert [(t["currency"], t.get("commitment"), t["total"]) for t in totals] == [
        ("EUR", None, "10.00"),
        ("JPY", {"effective_from": "2026-10-01T00:00:00.000000Z", "minimum": "1000",
                 "shortfall": "1000"}, "1000")]


def test_apply_is_the_difference_or_nothing() -> None:
    assert commitments.apply(_commitment("50.00"), Decimal("37.60")).shortfall == Decimal(
        "12.40")
    assert commitments.apply(_commitment("50.00"), Decimal("50.01")).shortfall == 0
    # Negative usage (adjustments above the subtotal) is topped up to the minimum too.
    assert commitments.apply(_commitment("50.00"), Decimal("-2.00")).shortfall == Decimal(
        "52.00")
