"""The demo's invoicing receiver keeps only notices signed with the shared secret."""

from __future__ import annotations

import hashlib
import hmac
from decimal import Decimal

import requests

from simcloud.demo_handoff import InvoicingReceiver, commitment_above


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
