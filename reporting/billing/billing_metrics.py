"""Prometheus metrics of billing (exported by ``/metrics`` with the others)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from prometheus_client import Counter

from reporting.billing.statements import Adjustment

STATEMENTS_COMPUTED = Counter(
    "tally_statements_computed",
    "Statements computed, by cloud and kind (project: one statement; summary: one per "
    "project of a summary page; closed: frozen by a close).",
    ["cloud", "kind"],
)


def statement_computed(cloud: str, kind: str, count: int, *, known: bool) -> None:
    """Count ``count`` statements of ``kind``.  Any reader may ask for any cloud name,
    and every label value is a series for ever: a cloud is a label value only once
    its statements have facts (lines or adjustments), else it counts under
    ``cloud=""``."""
    STATEMENTS_COMPUTED.labels(cloud=cloud if known else "", kind=kind).inc(count)


PERIODS_CLOSED = Counter("tally_periods_closed", "Periods closed, by cloud.", ["cloud"])
ADJUSTMENTS_BOOKED = Counter(
    "tally_adjustments_booked", "Adjustments booked by closes, by cloud.", ["cloud"]
)
ADJUSTMENTS_BOOKED_AMOUNT = Counter(
    "tally_adjustments_booked_amount",
    "Sum of the amounts of the adjustments booked, by cloud and direction (debit: the "
    "closed period billed too little; credit: too much), in currency units.",
    ["cloud", "direction"],
)
CLOSED_BILLED_AMOUNT = Counter(
    "tally_closed_billed_amount",
    "Sum of the totals of the statements frozen by closes (adjustments included), by "
    "cloud and currency (empty without a price list), in currency units.",
    ["cloud", "currency"],
)


def record_close(cloud: str, frozen: int, booked: Sequence[Adjustment],
                 billed: Decimal = Decimal("0"), currency: str | None = None) -> None:
    PERIODS_CLOSED.labels(cloud=cloud).inc()
    # inc() refuses a negative amount: a period of credits only bills nothing here.
    CLOSED_BILLED_AMOUNT.labels(cloud=cloud, currency=currency or "").inc(
        float(max(billed, Decimal("0"))))
    STATEMENTS_COMPUTED.labels(cloud=cloud, kind="closed").inc(frozen)
    if booked:
        ADJUSTMENTS_BOOKED.labels(cloud=cloud).inc(len(booked))
        for direction, sign in (("debit", 1), ("credit", -1)):
            total = sum(sign * a.amount for a in booked if sign * a.amount > 0)
            if total:
                ADJUSTMENTS_BOOKED_AMOUNT.labels(cloud=cloud, direction=direction).inc(
                    float(total))


WEBHOOK_ATTEMPTS = Counter(
    "tally_webhook_attempts",
    "Attempts to post a close's webhook delivery, by cloud and result (delivered: a "
    "2xx; retried: another answer or none, attempted again later; failed: the last "
    "attempt [handoff] max_attempts allows failed too).",
    ["cloud", "result"],
)
WEBHOOK_RESULTS = ("delivered", "retried", "failed")


def webhook_attempt(cloud: str, result: str) -> None:
    WEBHOOK_ATTEMPTS.labels(cloud=cloud, result=result).inc()
