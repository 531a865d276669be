"""Hold one service of the simulated cloud: its requests wait until the test lets
them go, so a test can act while a run (in another process) is caught mid-way,
however slowly the machine runs, instead of hoping a delay is long enough."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from simcloud.api import common

# Only guards against a test that never lets go: a held request answers after this.
HOLD_LIMIT_S = 300.0


class Held:
    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def wait_entered(self, timeout: float = 120.0) -> None:
        """Until a request to the held service arrived (a generous bound: a hang)."""
        if not self.entered.wait(timeout):
            raise AssertionError(f"no request reached the held service within {timeout:g} s")

    def release(self) -> None:
        self.released.set()


@contextmanager
def held_service(monkeypatch: pytest.MonkeyPatch, service: str) -> Iterator[Held]:
    """Requests to ``service`` (a catalog type, e.g. "network") wait in the simulated
    cloud until ``release`` (or the end of the block)."""
    held = Held()
    guard = common.guard

    def holding(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == service:
            held.entered.set()
            held.released.wait(HOLD_LIMIT_S)
        return guard(name, *args, **kwargs)

    monkeypatch.setattr(common, "guard", holding)
    try:
        yield held
    finally:
        held.release()
        monkeypatch.setattr(common, "guard", guard)
