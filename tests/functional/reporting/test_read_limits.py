"""``reporting.api.read_limits`` in the app, on SQLite and PostgreSQL: an expensive
read finding every read slot of its worker taken is refused at once while probes and
cheap reads are served; on SQLite a statement past ``[api] read_statement_timeout_s``
is interrupted by the progress handler (PostgreSQL's statement_timeout is proven
through a real server in test_read_load.py); limits that cannot work stop the start."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

from reporting.api.read_limits import EXTENSION_KEY, ReadLimits
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth
from tests.functional.reporting.query_fixtures import SMALL, at, event, seed

USAGE = f"/v1/usage?from={at(0)}&to={at(24)}".replace("+", "%2B")


@pytest.fixture
def built(make_conf: ConfFactory, db_url: str,
          request: pytest.FixtureRequest) -> Iterator[Flask]:
    api = {"threads": 4, **getattr(request, "param", {})}
    application = create_app(make_conf(db_url, api=api))
    application.config["TESTING"] = True
    yield application
    application.extensions[ENGINE_KEY].dispose()


@pytest.mark.parametrize("built", [{"read_threads": 1}], indirect=True)
def test_an_expensive_read_finding_every_read_slot_taken_is_refused_at_once(
        built: Flask) -> None:
    client = built.test_client()
    limits: ReadLimits = built.extensions[EXTENSION_KEY]
    assert limits.try_acquire()  # what one reader in flight holds
    try:
        for path in (USAGE, "/v1/resources", "/v1/statements?cloud=c1&period=2026-01",
                     "/v1/resources/openstack/c1/instance/i1/events"):
            refused = client.get(path, headers=auth("read"))
            assert refused.status_code == 503, (path, refused.text)
            assert refused.json["error"]["code"] == "read_capacity_exhausted"
            assert refused.headers["Retry-After"] == "1"
        # What the reserved threads are for is served.
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/v1/resources/openstack/c1/instance/i1",
                          headers=auth("read")).status_code == 404
        # Credentials are checked before a slot is wanted.
        assert client.get(USAGE).status_code == 401
    finally:
        limits.release()
    assert client.get(USAGE, headers=auth("read")).status_code == 200
    # A refused or failed read gives its slot back: the one slot serves read after read.
    for _ in range(3):
        assert client.get("/v1/resources?limit=x", headers=auth("read")).status_code == 400
    assert client.get(USAGE, headers=auth("read")).status_code == 200


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("built", [{"read_statement_timeout_s": 1e-6}], indirect=True)
def test_sqlite_a_statement_past_the_timeout_is_interrupted(built: Flask) -> None:
    # Enough intervals that the usage statement runs far beyond the progress handler's
    # first call (every 1000 virtual machine steps), by which 1 us has always passed.
    seed(built.extensions[SESSIONMAKER_KEY], [
        event("compute.instance.create.end", f"vm-{n}", at(0), state="active", size=SMALL)
        for n in range(500)])
    client = built.test_client()
    answer = client.get(USAGE, headers=auth("read"))
    assert answer.status_code == 503, answer.text
    assert answer.json["error"]["code"] == "query_too_expensive"
    assert "read_statement_timeout_s" in answer.json["error"]["message"]
    # The connection went back to the pool without the handler: reads that are not
    # limited, and the probes, work on it.
    assert client.get("/readyz").status_code == 200
    assert client.get("/v1/clouds", headers=auth("read")).status_code == 200


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("api", "named"), [
    ({"threads": 4, "read_threads": 5}, "[api] read_threads = 5 is more than [api] threads = 4"),
    ({"timeout": 60, "read_statement_timeout_s": 60},
     "[api] read_statement_timeout_s = 60 must be below [api] timeout = 60"),
])
def test_limits_that_cannot_work_stop_the_start(
        make_conf: ConfFactory, db_url: str, api: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError) as refused:
        create_app(make_conf(db_url, api=api))
    assert named in str(refused.value)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("threads", "read_threads"), [(4, 2), (5, 2), (2, 1), (1, 1)])
def test_read_threads_default_to_half_the_threads(
        make_conf: ConfFactory, db_url: str, threads: int, read_threads: int) -> None:
    app = create_app(make_conf(db_url, api={"threads": threads}))
    try:
        assert app.extensions[EXTENSION_KEY].threads == read_threads
    finally:
        app.extensions[ENGINE_KEY].dispose()
