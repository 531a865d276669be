"""An account's write asked for while October is being closed (PostgreSQL, two
transactions): it must wait for the close, then be judged against the closed month."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.orm import Session

from reporting.billing import accounts, closing, versions
from reporting.db import engine as db_engine
from tests.functional.billing.history import ACCEPT_ALL, PRICES, october, seed

NOW = dt.datetime(2026, 12, 15)


def add_during_the_close(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                         add: Callable[[Session, dt.datetime], Any],
                         stored: Callable[[Session], Any], *, holding_p2: bool = True,
                         what: str = "the write") -> tuple[BaseException | None, Any]:
    """Seed October (account acme, holding project p2 of cloud c1 from October's start
    if ``holding_p2``), close it in one transaction and, once the close is inside, call
    ``add(session, now)`` in another.  Asserts the add waited for the close; returns
    what it raised (None when it returned) and ``stored(session)`` afterwards."""
    engine = db_engine.make_engine(pg_url, pool_size=4)
    factory = db_engine.make_sessionmaker(engine)
    try:
        with factory() as session:
            for prices in PRICES:
                versions.add(session, "default", prices, "test", NOW)
            accounts.add(session, {"account_id": "acme"}, "test", NOW)
            if holding_p2:
                accounts.add_membership(session, "acme", {
                    "cloud": "c1", "project_id": "p2",
                    "effective_from": "2026-10-01T00:00:00Z"}, "test", NOW)
            session.commit()
        seed(factory, october())
        inside, release = threading.Event(), threading.Event()
        original = closing._close_in

        def slow_close(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            inside.set()
            release.wait(120)  # only a guard against a hang
            return result

        monkeypatch.setattr(closing, "_close_in", slow_close)

        def adding_now() -> Any:
            with factory() as session, session.begin():
                return add(session, NOW)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            closing_now = pool.submit(closing.close, factory, "c1", "2026-10", "test", NOW,
                                      ACCEPT_ALL)
            try:
                assert inside.wait(120)
                adding = pool.submit(adding_now)
                time.sleep(0.5)
                assert not adding.done(), f"{what} must wait for the close in flight"
            finally:
                release.set()
            assert closing_now.result(60).created
            raised = adding.exception(60)
        with factory() as session:
            return raised, stored(session)
    finally:
        engine.dispose()
