"""A webhook receiver on 127.0.0.1 for the hand-off tests: a tiny http.server in a
thread that checks each POST's signature with the secret and answers the statuses it
was given in turn (the last one from then on)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@dataclasses.dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    signed: bool  # the X-Tally-Signature matched the body's HMAC with the secret
    answered: int


class Receiver:
    def __init__(self, secret: str, statuses: list[int]) -> None:
        self.secret = secret
        self.statuses = list(statuses)
        self.received: list[Received] = []
        self.arrived = threading.Condition()
        self.url = ""

    def answer(self, headers: dict[str, str], body: bytes) -> int:
        expected = "sha256=" + hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        signed = hmac.compare_digest(headers.get("X-Tally-Signature", ""), expected)
        with self.arrived:
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            self.received.append(Received(headers, body, signed, status))
            self.arrived.notify_all()
        return status

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Received]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.received) >= count, timeout), \
                f"{len(self.received)} of {count} requests arrived"
            return list(self.received)


@contextmanager
def receiving(secret: str, statuses: list[int]) -> Iterator[Receiver]:
    receiver = Receiver(secret, statuses)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = receiver.answer(dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/tally"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
