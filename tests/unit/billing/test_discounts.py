"""A percentage discount applied to an account's totals, computed by hand: rounded
once to the minor unit, before the minimum commitment (which tops up the discounted
usage) and the credits and charges, on every currency, and no discount leaving the
totals as they were (docs/statements.md, "Discounts")."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from reporting.billing import account_statements, discounts
from reporting.db.account_models import AccountCommitment, AccountDiscount, AccountLine

AT = dt.datetime(2026, 10, 1)
APPLIED_AT = "2026-10-01T00:00:00.000000Z"


def _section(subtotal: str, adjustments: str, currency: str = "EUR",
             places: int = 2) -> dict[str, Any]:
    total = str(Decimal(subtotal) + Decimal(adjustments))
    return {"currency": currency, "places": places, "subtotal": subtotal,
            "adjustments_total": adjustments, "total": total, "unrated_lines": 0}


def _discount(percent: str) -> AccountDiscount:
    return AccountDiscount(account_id="acme", effective_from=AT, percent=Decimal(percent),
                           reason="framework agreement", created_at=AT, created_by="t")


def _commitment(minimum: str) -> AccountCommitment:
    return AccountCommitment(account_id="acme", effective_from=AT, currency="EUR",
                             minimum=Decimal(minimum), minor_units=2, created_at=AT,
                             created_by="t")


def _credit(amount: str) -> AccountLine:
    return AccountLine(account_id="acme", number=1, cloud="c1", period="2026-10",
                       project_id=None, kind="credit", amount=Decimal(amount), currency="EUR",
                       minor_units=2, reason="r", effective_at=AT, reverses=None,
                       created_at=AT, created_by="t")


def test_the_discount_comes_off_the_usage_before_the_commitment_tops_it_up() -> None:
    # 376.03 × 12.5 % = 47.00375 → 47.00 off: 329.03, which a minimum of 400.00 tops up
    # by 70.97 to 400.00; a credit of 5.00 counts after both: 395.00.
    sections = [_section("300.00", "0.00"), _section("76.03", "0.00")]
    (total,) = account_statements._totals(sections, [_credit("5.00")], _commitment("400.00"),
                                          _discount("12.5"))
    assert total == {
        "currency": "EUR", "subtotal": "376.03", "adjustments_total": "0.00",
        "discount": {"effective_from": APPLIED_AT, "percent": "12.5", "amount": "-47.00"},
        "commitment": {"effective_from": APPLIED_AT, "minimum": "400.00",
                       "shortfall": "70.97"},
        "manual_total": "-5.00", "total": "395.00", "unrated_lines": 0}


def test_the_discount_of_usage_above_the_minimum_leaves_no_shortfall() -> None:
    # Usage 37.00 + 0.60 = 37.60; 20 % is 7.52 off: 30.08, above a minimum of 30.00.
    (total,) = account_statements._totals([_section("37.00", "0.60")], [],
                                          _commitment("30.00"), _discount("20"))
    assert (total["discount"]["amount"], total["commitment"]["shortfall"], total["total"]) == (
        "-7.52", "0.00", "30.08")


def test_rounding_is_once_and_half_even() -> None:
    # 0.10 × 12.5 % = 0.0125 → 0.01; 0.30 × 12.5 % = 0.0375 → 0.04; the ties go to the
    # even cent: 0.20 → 0.025 → 0.02, 1.00 → 0.125 → 0.12, 0.60 → 0.075 → 0.08.
    for usage, off in (("0.10", "-0.01"), ("0.30", "-0.04"), ("0.20", "-0.02"),
                       ("1.00", "-0.12"), ("0.60", "-0.08"), ("376.03", "-47.00")):
        (total,) = account_statements._totals([_section(usage, "0.00")], [], None,
                                              _discount("12.5"))
        assert total["discount"]["amount"] == off, usage
        assert Decimal(total["total"]) == Decimal(usage) + Decimal(off)


def test_one_rounding_of_the_account_not_one_per_section() -> None:
    # Three sections of 0.10 at 12.5 %: 0.0375 off the account (→ 0.04), where a
    # rounding per section would take 0.01 three times (0.03).
    (total,) = account_statements._totals([_section("0.10", "0.00")] * 3, [], None,
                                          _discount("12.5"))
    assert (total["discount"]["amount"], total["total"]) == ("-0.04", "0.26")


def test_every_currency_gets_the_percent_in_its_own_minor_unit() -> None:
    # JPY has no decimals: 1234 × 12.5 % = 154.25 → 154; KWD three: 10.005 × 12.5 % =
    # 1.250625 → 1.251.
    totals = account_statements._totals(
        [_section("40.00", "0.00"), _section("1234", "0", "JPY", 0),
         _section("10.005", "0.000", "KWD", 3)], [], None, _discount("12.5"))
    assert [(t["currency"], t["discount"]["amount"], t["total"]) for t in totals] == [
        ("EUR", "-5.00", "35.00"), ("JPY", "-154", "1080"), ("KWD", "-1.251", "8.754")]


def test_adjustments_are_usage_and_negative_usage_is_discounted_too() -> None:
    # Usage 10.00 - 2.00 = 8.00 at 50 %: 4.00 off.  Usage -4.00 (a refund above the
    # period's usage) at 50 %: the refund is halved, +2.00.
    (total,) = account_statements._totals([_section("10.00", "-2.00")], [], None,
                                          _discount("50"))
    assert (total["discount"]["amount"], total["total"]) == ("-4.00", "4.00")
    (total,) = account_statements._totals([_section("1.00", "-5.00")], [], None,
                                          _discount("50"))
    assert (total["discount"]["amount"], total["total"]) == ("2.00", "-2.00")


def test_a_hundred_percent_leaves_only_the_commitment_and_the_lines() -> None:
    (total,) = account_statements._totals([_section("37.00", "0.60")], [_credit("1.00")],
                                          _commitment("5.00"), _discount("100"))
    assert (total["discount"]["amount"], total["commitment"]["shortfall"],
            total["total"]) == ("-37.60", "5.00", "4.00")


def test_no_discount_leaves_the_totals_as_they_were() -> None:
    (total,) = account_statements._totals([_section("37.00", "0.60")], [_credit("5.00")],
                                          None, None)
    assert total == {"currency": "EUR", "subtotal": "37.00", "adjustments_total": "0.60",
                     "manual_total": "-5.00", "total": "32.60", "unrated_lines": 0}


@pytest.mark.parametrize(("text", "stored", "shown"), [
    ("12.5", "12.50", "12.5"), ("12.50", "12.50", "12.5"), ("100", "100.00", "100"),
    ("100.00", "100.00", "100"), ("0", "0.00", "0"), ("0.01", "0.01", "0.01"),
    ("7.500", "7.50", "7.5")])
def test_percents_kept_to_hundredths(text: str, stored: str, shown: str) -> None:
    percent = discounts._percent(text)
    assert (str(percent), discounts.percent_text(percent)) == (stored, shown)


@pytest.mark.parametrize(("value", "message"), [
    ("100.01", "above 100"), ("101", "above 100"), ("12.345", "more than 2 decimals"),
    ("-1", "from 0 to 100"), ("", "from 0 to 100"), ("ten", "from 0 to 100"),
    (12.5, "JSON numbers are refused"), (None, "from 0 to 100"), ("1e2", "from 0 to 100")])
def test_bad_percents_are_refused(value: object, message: str) -> None:
    with pytest.raises(discounts.DiscountError, match=message):
        discounts._percent(value)
