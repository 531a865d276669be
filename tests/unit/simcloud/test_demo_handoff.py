"""The demo's invoicing receiver keeps only notices signed with the shared secret."""

from __future__ import annotations

import hashlib
import hmac
from decimal import Decimal

import requests

from simcloud.demo_handoff import InvoicingReceiver, commitment_above, discount_off


def _post(receiver: InvoicingReceiver, body: bytes, signature: str) -> int:
    return requests.post(receiver.url, data=body, timeout=10, headers={
        "Content-Type": "application/json", "X-Tally-Signature": signature}).status_code


def test_a_notice_is_kept_only_with_the_bodys_signature() -> None:
    receiver = InvoicingReceiver("s3cret")
    try:
        body = b'{"event": "period.closed", "statements": []}'
        good = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert _post(receiver, body, "sha256=" + "0" * 64) == 401
        assert _post(receiver, body + b" ", good) == 401  # other bytes, same signature
        assert receiver.received == [] and receiver.bad_signatures == 2
        assert not receiver.wait(0.1)
        assert _post(receiver, body, good) == 204
        assert receiver.wait(5)
        assert receiver.received == [{"event": "period.closed", "statements": []}]
    finally:
        receiver.stop()


def test_the_demos_commitment_is_the_next_hundred_above_the_usage() -> None:
    assert commitment_above(Decimal("376.03")) == Decimal("400")
    assert commitment_above(Decimal("400.00")) == Decimal("500")
    assert commitment_above(Decimal("0.82")) == Decimal("100")


def test_the_demos_discount_is_rounded_once_half_even_to_the_usages_places() -> None:
    assert discount_off(Decimal("376.03"), "10") == Decimal("-37.60")  # 37.603
    assert discount_off(Decimal("0.25"), "10") == Decimal("-0.02")  # 0.025: to the even 2
    assert discount_off(Decimal("0.35"), "10") == Decimal("-0.04")  # 0.035: to the even 4
    assert discount_off(Decimal("1200"), "12.5") == Decimal("-150")  # no minor unit
