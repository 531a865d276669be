"""The delivery worker's arithmetic: the signature and the backoff."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

from reporting.billing.delivery import Settings, signature


def test_the_signature_is_the_hmac_sha256_of_the_body_bytes() -> None:
    # RFC 4231, test case 2
    assert signature("Jefe", b"what do ya want for nothing?") == (
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    body = '{"project_id":"pé"}'.encode()
    assert signature("k", body) == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
    assert signature("k", body) != signature("k", body + b" ")


def test_the_backoff_doubles_up_to_its_maximum() -> None:
    config = Settings("http://127.0.0.1:9/h", "k", base_s=30.0, max_s=3600.0)
    waits = [config.delay(n).total_seconds() for n in range(1, 10)]
    assert waits == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert config.delay(100_000) == dt.timedelta(hours=1)  # never overflows
    assert Settings("u", "k", timeout_s=10.0).lease == dt.timedelta(seconds=80)
