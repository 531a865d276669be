"""The hand-off on close (SQLite and PostgreSQL): a close writes its signed notice in
its own transaction, the delivery worker posts it to a real receiver on 127.0.0.1 and
retries with backoff (seen through the recorded attempts, on an injected clock), two
workers never post one row at once, and the export of a closed period answers the
same bytes whatever arrives later."""

from __future__ import annotations

import concurrent.futures
import csv
import datetime as dt
import io
import itertools
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.app import create_app
from reporting.billing import billing_metrics, closing, delivery, handoff
from reporting.db import engine as db_engine
from reporting.db.billing_models import BillingPeriod
from reporting.db.handoff_models import WebhookAttempt, WebhookDelivery
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from tests.functional.billing.history import ACCEPT, ACCEPT_ALL, PRICES, SMALL, event, october, seed
from tests.functional.billing.receiver import Receiver, receiving
from tests.functional.reporting.fixtures import ConfFactory, auth, start_server, write_config

ADMIN, READ = auth("admin"), auth("read")
SECRET = "s3cret-of-the-invoicing-system"


@pytest.fixture
def hooked(make_conf: ConfFactory, db_url: str) -> Iterator[tuple[Flask, Receiver]]:
    """An app whose closes notify a receiver that fails twice, then accepts; the
    delivery worker is driven by the tests (``deliver = false``)."""
    with receiving(SECRET, [500, 503, 204]) as receiver:
        conf = make_conf(db_url, handoff={
            "webhook_url": receiver.url, "webhook_secret": SECRET, "retry_base_s": 10.0,
            "retry_max_s": 25.0, "max_attempts": 5, "deliver": False,
            "webhook_timeout_s": 5.0})
        app = create_app(conf)
        app.config["TESTING"] = True
        try:
            yield app, receiver
        finally:
            app.extensions[ENGINE_KEY].dispose()


def _factory(app: Flask) -> sessionmaker[Session]:
    return app.extensions[SESSIONMAKER_KEY]  # type: ignore[no-any-return]


def _october(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document,
                          headers=ADMIN).status_code == 201
    seed(factory, october())


def _close(client: FlaskClient, period: str = "2026-10") -> Any:
    response = client.post(f"/v1/periods/c1/{period}/close", headers=ADMIN, json=ACCEPT)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _deliveries(factory: sessionmaker[Session]) -> list[WebhookDelivery]:
    with factory() as session:
        return list(session.execute(sa.select(WebhookDelivery)
                                    .order_by(WebhookDelivery.id)).scalars())


class Clock:
    def __init__(self, at: dt.datetime) -> None:
        self.at = at

    def __call__(self) -> dt.datetime:
        return self.at


def _worker(conf: Any, factory: sessionmaker[Session],
            row: WebhookDelivery) -> tuple[delivery.Deliverer, Clock]:
    """A delivery worker (driven by hand) on a clock standing at ``row``'s creation."""
    clock = Clock(row.created_at)
    config = delivery.settings(conf)
    assert config is not None
    return delivery.Deliverer(factory, config, clock=clock), clock


def test_a_close_notifies_signed_and_retries_with_backoff(
        hooked: tuple[Flask, Receiver]) -> None:
    app, receiver = hooked
    client, factory = app.test_client(), _factory(app)
    _october(client, factory)
    closed = _close(client)
    (row,) = _deliveries(factory)
    assert (row.cloud, row.period, row.event, row.status, row.attempts) == (
        "c1", "2026-10", "period.closed", "pending", 0)
    summaries = client.get("/v1/statements?cloud=c1&period=2026-10",
                           headers=READ).get_json()["items"]
    worker, clock = _worker(app.config["TALLY_CONF"], factory, row)
    assert worker.run_once() == 1  # 500
    assert worker.run_once() == 0  # not due before retry_base_s
    clock.at += dt.timedelta(seconds=9.999)
    assert worker.run_once() == 0
    clock.at += dt.timedelta(milliseconds=1)
    assert worker.run_once() == 1  # 503, then twice the wait
    clock.at += dt.timedelta(seconds=19)
    assert worker.run_once() == 0
    clock.at += dt.timedelta(seconds=1)
    assert worker.run_once() == 1  # 204: delivered
    clock.at += dt.timedelta(days=1)
    assert worker.run_once() == 0  # never again
    got = receiver.wait_for(3)
    assert [r.answered for r in got] == [500, 503, 204] and all(r.signed for r in got)
    assert {r.body for r in got} == {row.body.encode()}  # the same bytes every attempt
    assert all(r.headers["X-Tally-Delivery"] == str(row.id)
               and r.headers["X-Tally-Event"] == "period.closed"
               and r.headers["Content-Type"] == "application/json" for r in got)
    notice = json.loads(got[0].body)
    assert (notice["event"], notice["cloud"], notice["period"], notice["closed_at"],
            notice["closed_by"], notice["currency"]) == (
        "period.closed", "c1", "2026-10", closed["closed_at"], closed["closed_by"], "EUR")
    assert [(s["project_id"], s["number"], s["subtotal"], s["adjustments_total"], s["total"],
             s["unrated_lines"]) for s in notice["statements"]] == [
        (s["project_id"], s["number"], s["subtotal"], s["adjustments_total"], s["total"],
         s["unrated_lines"]) for s in summaries]
    assert [s["number"] for s in notice["statements"]] == [1, 2, 3, 4]
    assert notice["export"]["csv"] == "/v1/periods/c1/2026-10/export?format=csv"

    listed = client.get("/v1/periods/c1/2026-10/deliveries", headers=ADMIN)
    assert listed.status_code == 200, listed.get_json()
    (item,) = listed.get_json()["items"]
    start = row.created_at
    assert item["status"] == "delivered" and item["next_attempt_at"] is None
    assert [(a["number"], a["status_code"], a["error"]) for a in item["attempts"]] == [
        (1, 500, "HTTP 500"), (2, 503, "HTTP 503"), (3, 204, None)]
    # the backoff, by the recorded instants: 10 s, then 20 s (retry_base_s doubled)
    attempted = [dt.datetime.fromisoformat(a["attempted_at"].rstrip("Z"))
                 for a in item["attempts"]]
    assert [t - start for t in attempted] == [dt.timedelta(0), dt.timedelta(seconds=10),
                                              dt.timedelta(seconds=30)]
    assert item["delivered_at"] == item["attempts"][2]["attempted_at"]
    # closing again writes no second notice
    _close(client)
    assert len(_deliveries(factory)) == 1
    assert client.get("/v1/periods/c1/2026-10/deliveries", headers=READ).status_code == 403
    assert client.get("/v1/periods/c1/2026-11/deliveries",
                      headers=ADMIN).get_json()["items"] == []
    assert client.get("/v1/periods/nowhere/2026-10/deliveries",
                      headers=ADMIN).status_code == 404
    assert client.get("/v1/periods/c1/2026-13/deliveries", headers=ADMIN).status_code == 400


def _attempts_counted(result: str) -> float:
    counter = billing_metrics.WEBHOOK_ATTEMPTS.labels(cloud="c1", result=result)
    return float(counter._value.get())


def test_the_backoff_is_capped_and_a_delivery_fails_after_max_attempts(
        make_conf: ConfFactory, db_url: str) -> None:
    with receiving(SECRET, [502]) as receiver:
        conf = make_conf(db_url, handoff={
            "webhook_url": receiver.url, "webhook_secret": SECRET, "retry_base_s": 10.0,
            "retry_max_s": 25.0, "max_attempts": 5, "deliver": False})
        app = create_app(conf)
        try:
            client, factory = app.test_client(), _factory(app)
            _october(client, factory)
            _close(client)
            (row,) = _deliveries(factory)
            worker, clock = _worker(conf, factory, row)
            before = {result: _attempts_counted(result) for result in ("retried", "failed")}
            made = 0
            for _step in range(20):  # 100 s in steps of 5 s
                made += worker.run_once()
                clock.at += dt.timedelta(seconds=5)
            assert made == 5 and len(receiver.wait_for(5)) == 5
            with factory() as session:
                attempts = list(session.execute(sa.select(WebhookAttempt.attempted_at)
                                                .order_by(WebhookAttempt.number)).scalars())
                assert session.get(WebhookDelivery, row.id).status == "failed"
            gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(attempts)]
            assert gaps == [10, 20, 25, 25]  # doubled, at most retry_max_s
            # four retried, the fifth failed for good (TallyWebhookDeliveryFailed)
            assert {result: _attempts_counted(result) - before[result]
                    for result in before} == {"retried": 4, "failed": 1}
        finally:
            app.extensions[ENGINE_KEY].dispose()


def test_an_unreachable_receiver_is_recorded_as_an_error(
        make_conf: ConfFactory, db_url: str) -> None:
    with receiving(SECRET, [200]) as receiver:
        url = receiver.url  # closed when the block ends: nothing listens there
    conf = make_conf(db_url, handoff={"webhook_url": url, "webhook_secret": SECRET,
                                      "deliver": False})
    app = create_app(conf)
    try:
        client, factory = app.test_client(), _factory(app)
        _october(client, factory)
        _close(client)
        config = delivery.settings(conf)
        assert config is not None
        assert delivery.Deliverer(factory, config).run_once() == 1
        (item,) = client.get("/v1/periods/c1/2026-10/deliveries",
                             headers=ADMIN).get_json()["items"]
        (attempt,) = item["attempts"]
        assert item["status"] == "pending" and attempt["status_code"] is None
        assert attempt["error"].startswith("ConnectionError")
    finally:
        app.extensions[ENGINE_KEY].dispose()


def test_a_close_rolled_back_leaves_no_notice(hooked: tuple[Flask, Receiver]) -> None:
    app, _receiver = hooked
    client, factory = app.test_client(), _factory(app)
    _october(client, factory)
    # refused (unrated lines not accepted): nothing stored, no notice
    refused = client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                          json={"accept_partial_history": True})
    assert refused.status_code == 409 and _deliveries(factory) == []
    write = app.extensions[handoff.NOTICE_KEY]

    def then_fail(session: Session, closed: BillingPeriod) -> None:
        write(session, closed)  # the notice is written, then the close fails
        assert len(session.execute(sa.select(WebhookDelivery)).all()) == 1
        raise RuntimeError("the close fails after its notice")

    with pytest.raises(RuntimeError):
        closing.close(factory, "c1", "2026-10", "t", dt.datetime(2026, 12, 1), ACCEPT_ALL,
                      then_fail)
    assert _deliveries(factory) == []
    with factory() as session:
        assert session.get(BillingPeriod, ("c1", "2026-10")) is None
    closing.close(factory, "c1", "2026-10", "t", dt.datetime(2026, 12, 1), ACCEPT_ALL, write)
    assert [d.period for d in _deliveries(factory)] == ["2026-10"]


def test_without_a_webhook_url_a_close_writes_no_delivery(client: FlaskClient,
                                                         session_factory: Any) -> None:
    _october(client, session_factory)
    _close(client)
    assert _deliveries(session_factory) == []
    assert client.get("/v1/periods/c1/2026-10/deliveries",
                      headers=ADMIN).get_json()["items"] == []


def test_a_webhook_url_without_a_secret_stops_the_start(make_conf: ConfFactory,
                                                       db_url: str) -> None:
    conf = make_conf(db_url, handoff={"webhook_url": "http://127.0.0.1:9/h"})
    with pytest.raises(ValueError, match="webhook_secret is not"):
        create_app(conf)


def _pending(factory: sessionmaker[Session], count: int, at: dt.datetime) -> list[int]:
    with factory.begin() as session:
        rows = [WebhookDelivery(cloud="c1", period=f"20{n // 12 + 10:02d}-{n % 12 + 1:02d}",
                                event="period.closed", body=json.dumps({"n": n}),
                                created_at=at, status="pending", attempts=0, retry_from=0,
                                next_attempt_at=at) for n in range(count)]
        session.add_all(rows)
        session.flush()
        return [row.id for row in rows]


def test_two_workers_never_post_one_delivery_twice(db_url: str) -> None:
    """Two delivery workers, each on an engine of its own (two reporting instances),
    racing over the same due deliveries: each is posted exactly once."""
    engines = [db_engine.make_engine(db_url, pool_size=2, max_overflow=2) for _ in range(2)]
    try:
        factories = [db_engine.make_sessionmaker(engine) for engine in engines]
        at = dt.datetime(2026, 12, 1)
        ids = _pending(factories[0], 40, at)
        posted: list[int] = []
        lock = threading.Lock()

        def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
            time.sleep(0.005)  # both workers hold a claim at once
            with lock:
                posted.append(int(headers["X-Tally-Delivery"]))
            return 200

        config = delivery.Settings("http://127.0.0.1:9/h", SECRET)
        workers = [delivery.Deliverer(f, config, clock=lambda: at, post=post)
                   for f in factories]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            made = [f.result(120) for f in [pool.submit(w.run_once) for w in workers]]
        assert sorted(posted) == sorted(ids) and sum(made) == len(ids)
        assert all(m > 0 for m in made)  # both took part
        with factories[0]() as session:
            rows = session.execute(sa.select(WebhookDelivery.status, WebhookDelivery.attempts,
                                             WebhookDelivery.leased_by)).all()
            assert {tuple(r) for r in rows} == {("delivered", 1, None)}
            assert session.execute(sa.select(sa.func.count())
                                   .select_from(WebhookAttempt)).scalar_one() == len(ids)
    finally:
        for engine in engines:
            engine.dispose()


def test_a_live_lease_keeps_other_workers_off(db_url: str) -> None:
    engine = db_engine.make_engine(db_url, pool_size=2, max_overflow=2)
    try:
        factory = db_engine.make_sessionmaker(engine)
        at = dt.datetime(2026, 12, 1)
        (held,) = _pending(factory, 1, at)
        with factory.begin() as session:
            session.execute(sa.update(WebhookDelivery).values(
                lease_until=at + dt.timedelta(minutes=1), leased_by="another-worker"))
        posted: list[str] = []
        clock = Clock(at)
        worker = delivery.Deliverer(
            factory, delivery.Settings("http://127.0.0.1:9/h", SECRET), clock=clock,
            post=lambda url, body, headers, timeout: posted.append(
                headers["X-Tally-Delivery"]) or 200)
        assert worker.run_once() == 0 and posted == []
        clock.at += dt.timedelta(minutes=1, microseconds=1)  # the holder died: it expired
        assert worker.run_once() == 1 and posted == [str(held)]
    finally:
        engine.dispose()


def _export(client: FlaskClient, fmt: str, period: str = "2026-10") -> bytes:
    response = client.get(f"/v1/periods/c1/{period}/export?format={fmt}", headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == ("text/csv" if fmt == "csv" else "application/json")
    return response.get_data()


def test_the_export_is_the_closed_statements_and_never_changes(
        client: FlaskClient, session_factory: Any) -> None:
    _october(client, session_factory)
    closed = _close(client)
    exported = _export(client, "json")
    document = json.loads(exported)
    assert {k: document[k] for k in ("cloud", "period", "closed_at", "closed_by",
                                     "cutoff_seq", "currency")} == {
        "cloud": "c1", "period": "2026-10", "closed_at": closed["closed_at"],
        "closed_by": closed["closed_by"], "cutoff_seq": closed["cutoff_seq"],
        "currency": "EUR"}
    numbered = [(s["number"], s["statement"]["project_id"]) for s in document["statements"]]
    assert numbered == [(1, "p-free"), (2, "p1"), (3, "p2"), (4, "p3")]
    for item in document["statements"]:  # each one the statement's own exact text
        text = client.get(f"/v1/statements?cloud=c1&period=2026-10&project_id="
                          f"{item['statement']['project_id']}", headers=READ).get_data()
        assert f'"statement":{text.decode()}}}'.encode() in exported
    p1 = document["statements"][1]["statement"]
    assert p1["total"] == "1.90" and p1["status"] == "closed"
    table = _export(client, "csv")
    rows = list(csv.DictReader(io.StringIO(table.decode())))
    assert table.startswith(b"number,project_id,currency,record,resource_type,")
    lines = [r for r in rows if r["record"] == "line"]
    assert len(lines) == sum(len(s["statement"]["lines"]) for s in document["statements"])
    assert {(r["number"], r["project_id"]) for r in lines} == {("1", "p-free"), ("2", "p1"),
                                                               ("3", "p2"), ("4", "p3")}
    totals = {r["number"]: r["total"] for r in rows if r["record"] == "statement"}
    assert totals == {str(s["number"]): s["statement"]["total"]
                      for s in document["statements"]}
    first = next(r for r in lines if r["project_id"] == "p1")
    assert (first["resource_id"], first["amount"], first["currency"]) == ("inst-a", "0.20",
                                                                          "EUR")
    # late facts about October: a power-off of inst-b, a new instance; November open
    seed(session_factory, [
        event("compute.instance.power_off.end", "inst-b", "2026-10-15T12:00:00Z",
              state="shutoff"),
        event("compute.instance.create.end", "late", "2026-10-09T00:00:00Z", state="active",
              size=SMALL)])
    assert _export(client, "json") == exported and _export(client, "csv") == table
    november = client.get("/v1/statements?cloud=c1&period=2026-11&project_id=p1",
                          headers=READ).get_json()
    assert november["adjustments"]  # they went where late facts go


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_export_gives_its_connection_back(client: FlaskClient, session_factory: Any,
                                             fmt: str) -> None:
    """Streamed after the request's teardown, an export reads on a transaction of its
    own: its connection goes back to the pool when the last piece is sent, or when the
    client goes away before it."""
    _october(client, session_factory)
    _close(client)
    assert client.application is not None
    pool = client.application.extensions[ENGINE_KEY].pool
    url = f"/v1/periods/c1/2026-10/export?format={fmt}"
    with client.get(url, headers=READ) as whole:
        assert whole.status_code == 200 and whole.get_data()
    assert pool.checkedout() == 0
    with client.get(url, headers=READ, buffered=False) as cut_short:
        assert next(iter(cut_short.response))  # the first piece, then the client goes
    assert pool.checkedout() == 0


@pytest.mark.parametrize(("path", "status", "code"), [
    ("/v1/periods/c1/2026-11/export?format=json", 409, "period_open"),
    ("/v1/periods/c1/2026-11/export", 409, "period_open"),
    ("/v1/periods/nowhere/2026-10/export?format=json", 404, "unknown_cloud"),
    ("/v1/periods/c1/2026-10/export?format=xml", 400, "bad_request"),
    ("/v1/periods/c1/2026-10/export?format=json&page=2", 400, "bad_request"),
    ("/v1/periods/c1/2026-1/export?format=json", 400, "bad_request"),
])
def test_export_refusals(client: FlaskClient, session_factory: Any, path: str, status: int,
                         code: str) -> None:
    _october(client, session_factory)
    _close(client)
    response = client.get(path, headers=READ)
    assert response.status_code == status and response.get_json()["error"]["code"] == code
    assert client.get("/v1/periods/c1/2026-10/export", headers=READ).status_code == 200


def test_tally_reporting_delivers_from_its_workers(db_url: str, tokens_file: str,
                                                  tmp_path: Path) -> None:
    """The real service: its gunicorn workers run the delivery worker; a close through
    the API reaches the receiver, signed, and is listed delivered."""
    with receiving(SECRET, [503, 200]) as receiver:
        config = write_config(tmp_path / "reporting.conf", db_url, tokens_file, handoff={
            "webhook_url": receiver.url, "webhook_secret": SECRET, "retry_base_s": 0.2,
            "poll_interval_s": 0.2})
        server = start_server(config, tmp_path / "reporting.log")
        engine = db_engine.make_engine(db_url, pool_size=1, max_overflow=1)
        try:
            seed(db_engine.make_sessionmaker(engine), october())
            base = server.base_url
            for document in PRICES:
                assert requests.put(f"{base}/v1/price-lists/default", json=document,
                                    headers=ADMIN, timeout=30).status_code == 201
            closed = requests.post(f"{base}/v1/periods/c1/2026-10/close", json=ACCEPT,
                                   headers=ADMIN, timeout=60)
            assert closed.status_code == 200, closed.text
            got = receiver.wait_for(2)
            assert [r.answered for r in got[:2]] == [503, 200] and all(r.signed for r in got)
            assert json.loads(got[1].body)["closed_at"] == closed.json()["closed_at"]
            deadline = time.monotonic() + 60
            while True:
                (item,) = requests.get(f"{base}/v1/periods/c1/2026-10/deliveries",
                                       headers=ADMIN, timeout=30).json()["items"]
                if item["status"] == "delivered" or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert item["status"] == "delivered", item
            assert [a["status_code"] for a in item["attempts"]] == [503, 200]
            assert len(receiver.received) == 2
        finally:
            engine.dispose()
            server.stop()


def test_redeliver_starts_a_new_round(make_conf: ConfFactory, db_url: str) -> None:
    """A failed delivery, redelivered, gets max_attempts more with the backoff from the
    start; a delivered one is posted again (same id, same bytes); one being posted now
    is 409; another period's delivery is 404."""
    with receiving(SECRET, [500, 500, 200]) as receiver:
        conf = make_conf(db_url, handoff={
            "webhook_url": receiver.url, "webhook_secret": SECRET, "retry_base_s": 10.0,
            "max_attempts": 2, "deliver": False})
        app = create_app(conf)
        try:
            client, factory = app.test_client(), _factory(app)
            _october(client, factory)
            _close(client)
            (row,) = _deliveries(factory)
            worker, clock = _worker(conf, factory, row)
            assert worker.run_once() == 1
            clock.at += dt.timedelta(seconds=10)
            assert worker.run_once() == 1
            assert _deliveries(factory)[0].status == "failed"
            clock.at += dt.timedelta(days=1)
            assert worker.run_once() == 0
            url = f"/v1/periods/c1/2026-10/deliveries/{row.id}/redeliver"
            again = client.post(url, headers=ADMIN)
            assert again.status_code == 200, again.get_json()
            assert again.get_json()["status"] == "pending"
            assert len(again.get_json()["attempts"]) == 2
            clock.at = dt.datetime.fromisoformat(
                again.get_json()["next_attempt_at"].rstrip("Z"))
            assert worker.run_once() == 1  # the third POST: 200
            (done,) = client.get("/v1/periods/c1/2026-10/deliveries",
                                 headers=ADMIN).get_json()["items"]
            assert done["status"] == "delivered"
            assert [a["status_code"] for a in done["attempts"]] == [500, 500, 200]
            assert client.post(url, headers=ADMIN).status_code == 200  # delivered: again
            clock.at = dt.datetime(2099, 1, 1)
            assert worker.run_once() == 1
            assert {r.body for r in receiver.wait_for(4)} == {row.body.encode()}
            # held by a worker now: 409; another period's or an unknown id: 404
            with factory.begin() as session:
                session.execute(sa.update(WebhookDelivery).values(
                    lease_until=dt.datetime(2999, 1, 1), leased_by="busy"))
            assert client.post(url, headers=ADMIN).status_code == 409
            assert client.post(f"/v1/periods/c1/2026-09/deliveries/{row.id}/redeliver",
                               headers=ADMIN).status_code == 404
            # Not a delivery id: letters, a digit Python's int() refuses, past 64 bits.
            for bad in ("x1", "\u00b2", "9" * 20):
                assert client.post(f"/v1/periods/c1/2026-10/deliveries/{bad}/redeliver",
                                   headers=ADMIN).status_code == 404, bad
            assert client.post(url, headers=READ).status_code == 403
        finally:
            app.extensions[ENGINE_KEY].dispose()
