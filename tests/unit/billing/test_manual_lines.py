"""A manual line's amount in its currency's minor unit, and its sign
(docs/statements.md, "Credits and charges")."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from reporting.billing import manual_lines
from reporting.db.account_models import AccountLine


@pytest.mark.parametrize(("text", "code", "places", "stored"), [
    ("1.5", "EUR", 2, "1.50"), ("1.50", "EUR", 2, "1.50"), ("1.500", "EUR", 2, "1.50"),
    ("2", "EUR", 2, "2.00"), ("150", "JPY", 0, "150"), ("150.0", "JPY", 0, "150"),
    ("0.125", "KWD", 3, "0.125"), ("0.0001", "CLF", 4, "0.0001"),
])
def test_amounts_within_the_minor_unit(text: str, code: str, places: int,
                                       stored: str) -> None:
    assert str(manual_lines.in_minor_units(Decimal(text), code, places)) == stored


@pytest.mark.parametrize(("text", "code", "places"), [
    ("1.005", "EUR", 2), ("1.5", "JPY", 0), ("0.1255", "KWD", 3), ("0.00001", "CLF", 4),
])
def test_amounts_finer_than_the_minor_unit_are_refused(text: str, code: str,
                                                       places: int) -> None:
    with pytest.raises(manual_lines.LineError, match=f"more decimals than {code}'s minor unit"):
        manual_lines.in_minor_units(Decimal(text), code, places)


def _row(kind: str, amount: str, places: int) -> AccountLine:
    at = dt.datetime(2026, 10, 20)
    return AccountLine(account_id="acme", number=1, cloud="c1", period="2026-10",
                       project_id=None, kind=kind, amount=Decimal(amount), currency="KWD",
                       minor_units=places, reason="r", effective_at=at, reverses=None,
                       created_at=at, created_by="t")


def test_a_credit_is_negative_a_charge_positive() -> None:
    assert manual_lines.signed(_row("credit", "0.125", 3)) == Decimal("-0.125")
    assert manual_lines.signed(_row("charge", "0.125", 3)) == Decimal("0.125")
    rendered = manual_lines.render(_row("credit", "1.5", 3))
    assert (rendered["amount"], rendered["effective_at"]) == (
        "-1.500", "2026-10-20T00:00:00.000000Z")


@pytest.mark.parametrize("value", ["0", "0.00", "-1", "1e3", "1,50", " 1", "", 1.5, 2, None,
                                   "1" * 19, "1." + "1" * 19])
def test_what_is_no_amount(value: object) -> None:
    with pytest.raises(manual_lines.LineError):
        manual_lines._amount(value)
