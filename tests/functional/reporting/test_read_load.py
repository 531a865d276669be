"""Read load against a real tally-reporting (2 gunicorn workers x 4 threads) on
PostgreSQL, through the nginx configuration shipped in deploy/nginx/ (as
test_slow_clients.py runs it): expensive readers never take the threads that answer
``/healthz``, ``/readyz`` and ingest, and a statement running past ``[api]
read_statement_timeout_s`` is a JSON 503 after which the worker goes on serving.

A reader is made slow deterministically: a transaction of the test holds an ACCESS
EXCLUSIVE lock on the table the read needs (``billing_periods`` for statements,
``resource_intervals`` for usage), so the read's statement waits until the lock is
released or its statement timeout cancels it.  Ingest writes ``resource_intervals``,
so the saturation test, which must see ingest answered, locks ``billing_periods``
only (neither ingest nor the probes read it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
import sqlalchemy as sa

from tests.functional.reporting.fixtures import RunningServer, auth, start_server, write_config
from tests.functional.reporting.test_slow_clients import event, running_nginx

READERS = 16
WORKERS, THREADS = 2, 4
READ_THREADS = THREADS // 2  # the default of [api] read_threads
HANG_GUARD_S = 60.0  # no answer within this is a hang, not slowness
STATEMENTS = "/v1/statements?cloud=c1&period=2026-01"
USAGE = "/v1/usage?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z"


def serve(database: str, tokens_file: str, tmp_path: Path, **api: object
          ) -> Iterator[RunningServer]:
    config = write_config(tmp_path / "reporting.conf", database, tokens_file,
                          api={"workers": WORKERS, "threads": THREADS, **api})
    running = start_server(config, tmp_path / "reporting.log")
    yield running
    running.stop()


@pytest.fixture
def server(pg_migrated_database: str, tokens_file: str,
           tmp_path: Path) -> Iterator[RunningServer]:
    yield from serve(pg_migrated_database, tokens_file, tmp_path)


@pytest.fixture
def short_timeout_server(pg_migrated_database: str, tokens_file: str,
                         tmp_path: Path) -> Iterator[RunningServer]:
    yield from serve(pg_migrated_database, tokens_file, tmp_path, read_statement_timeout_s=1)


@contextmanager
def locked(database: str, *tables: str) -> Iterator[sa.Engine]:
    """``tables`` locked ACCESS EXCLUSIVE by a transaction of the test until the block
    ends; yields an engine to watch the database with."""
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as holder:
            holder.exec_driver_sql(
                f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
            yield engine
            holder.rollback()
    finally:
        engine.dispose()


def waiting_on_locks(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()").scalar_one())


def get(url: str, role: str | None = None) -> requests.Response:
    return requests.get(url, headers=auth(role) if role else {}, timeout=HANG_GUARD_S)


def error_code(response: requests.Response) -> str:
    assert response.headers["Content-Type"].startswith("application/json"), response.text
    return str(response.json()["error"]["code"])


def test_probes_and_ingest_are_answered_while_readers_hold_every_read_thread(
        server: RunningServer, pg_migrated_database: str, tmp_path: Path) -> None:
    upstream = urlsplit(server.base_url).netloc
    with running_nginx(tmp_path / "nginx", upstream) as proxy, \
            ThreadPoolExecutor(max_workers=READERS) as pool, \
            locked(pg_migrated_database, "billing_periods") as watch:
        readers: list[Future[requests.Response]] = [
            pool.submit(get, proxy + STATEMENTS, "read") for _ in range(READERS)]
        # Every reader is either refused at once or waiting in the database on the lock.
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            waiting = waiting_on_locks(watch)
            refused = sum(reader.done() for reader in readers)
            if waiting and waiting + refused == READERS:
                break
            assert time.monotonic() < deadline, (
                f"{waiting} readers waiting and {refused} answered: the others are queued")
            time.sleep(0.1)
        assert waiting <= WORKERS * READ_THREADS
        for reader in readers:
            if reader.done():
                answer = reader.result()
                assert answer.status_code == 503, answer.text
                assert error_code(answer) == "read_capacity_exhausted"
                assert answer.headers["Retry-After"] == "1"

        # The read threads are all busy; probes (through the proxy, and straight to
        # gunicorn as Kubernetes' probes reach it) and ingest are answered.
        with ThreadPoolExecutor(max_workers=4) as probes:
            health = list(probes.map(
                get, [proxy + "/healthz", server.base_url + "/healthz"] * 2))
        assert [answer.status_code for answer in health] == [200] * 4
        assert get(server.base_url + "/readyz").status_code == 200
        posted = requests.post(f"{proxy}/v1/events", json={"events": [event()]},
                               headers=auth("ingest"), timeout=HANG_GUARD_S)
        assert posted.status_code == 200, posted.text
        assert posted.json()["stored"] == 1, posted.text
        # Nothing was answered to a waiting reader while the lock was held.
        assert waiting_on_locks(watch) == waiting

    # The lock released, the waiting readers finish, and reads are served again.
    answers = [reader.result() for reader in readers]
    assert sum(answer.status_code == 200 for answer in answers) == waiting
    assert get(server.base_url + STATEMENTS, "read").status_code == 200


def test_a_statement_over_the_timeout_is_a_json_503_and_the_worker_goes_on(
        short_timeout_server: RunningServer, pg_migrated_database: str,
        tmp_path: Path) -> None:
    server = short_timeout_server
    upstream = urlsplit(server.base_url).netloc
    # One notification observes the cloud from the month's start, so the month is
    # billable (an unobserved cloud's statement is 409 before_history).
    posted = requests.post(f"{server.base_url}/v1/events", json={"events": [event()]},
                           headers=auth("ingest"), timeout=HANG_GUARD_S)
    assert posted.status_code == 200, posted.text
    with running_nginx(tmp_path / "nginx", upstream) as proxy:
        with locked(pg_migrated_database, "billing_periods", "resource_intervals"):
            for path in (STATEMENTS, USAGE):
                answer = get(proxy + path, "read")
                assert answer.status_code == 503, answer.text
                assert error_code(answer) == "query_too_expensive"
                assert "read_statement_timeout_s" in answer.json()["error"]["message"]
                assert get(proxy + "/healthz").status_code == 200
        # The same workers serve the same reads once they are cheap again.
        for path in (STATEMENTS, USAGE):
            answer = get(proxy + path, "read")
            assert answer.status_code == 200, answer.text
        metrics = get(server.base_url + "/metrics").text
        assert 'tally_read_refusals_total{reason="query_too_expensive"} 2.0' in metrics
    assert server.process.poll() is None
    assert "read_statement_timeout_s" in server.log.read_text()
