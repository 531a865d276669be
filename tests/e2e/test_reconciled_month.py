"""End to end: a simulated month, a lossy collector, a sync every 30 virtual minutes.

The simulated cloud publishes its notifications to the real RabbitMQ with 10% loss,
2% duplicates and reordering; the real tally-collector delivers what arrives to the
real tally-reporting, which a sync corrects every INTERVAL (30 virtual minutes; the
service's own schedule is 10, but every rule checked here is stated in sync
intervals, so the month checks the same rules with a third of the syncs;
docs/developer.md, "Running the tests").  At the end
the projection equals the platform's truth for every resource, every instance
delete is dated at nova's own instant, every other delete a collector lost is
dated within one sync interval (plus the settle window) of the truth, and a further
sync books nothing.

Then the month is billed: a price list pricing every resource type, every project's
summary and statement of the month, compared resource by resource with a bill
computed independently from the simulated cloud's own ground truth
(``simcloud.billing_check``).  The rule:

- every statement line equals the independent rating of Tally's own lifecycle of the
  resource, and each summary its statement's totals;
- where Tally's lifecycle of a resource is the truth's (the same intervals, project,
  state and size), its amount on each project's statement equals the truth's bill to
  the cent;
- elsewhere Tally learnt a change at a sync's poll instead of from a notification (one
  lost, or one the collector does not book, or a create dated at the platform's
  creation instant before the truth's ready instant). Each stretch of time over which
  the two lifecycles disagree lasts at most two sync intervals plus the settle window
  beyond the time the resource spent in transition within it (the first run after the
  change sees it, or defers it as recent and the next one books it; a run defers a
  resource in transition until it settles), and per project the amounts differ by at most the larger hourly price of
  the two records times the length of every such stretch, plus half a cent per line of
  either bill (lines are rounded one by one).

The close of the month then freezes exactly the summaries computed.

Bounded for CI: a small world (TALLY_E2E_SCALE, default 30) over TALLY_E2E_DAYS
(default 30) days.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from mapping.event import format_timestamp, parse_timestamp
from simcloud.billing_check import DEMO_PRICES, check_month
from simcloud.config import STOCK_EXCHANGES, WorldConfig
from simcloud.server import SimCloudServer
from tests.e2e.harness import Collector, Reporting, wait_until
from tests.functional.collector.harness import consumed

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.rabbit]

CLOUD = "e2e"
INTERVAL = dt.timedelta(minutes=30)
SETTLE = dt.timedelta(seconds=60)


def naive(value: str) -> dt.datetime:
    return parse_timestamp(value).replace(tzinfo=None)


def _rows(engine: sa.Engine) -> dict[tuple[str, str], sa.Row]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT resource_type, resource_id, project_id, state, size, live, deleted_at "
            "FROM current_resources WHERE cloud = :c"), {"c": CLOUD})
        return {(r.resource_type, r.resource_id): r for r in rows}


def _collector_events(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text(
            "SELECT count(*) FROM events WHERE cloud = :c AND source = 'collector'"),
            {"c": CLOUD}).scalar_one())


def _wait_for_collector_to_settle(engine: sa.Engine) -> None:
    last = [-1, time.monotonic()]

    def settled() -> bool:
        count = _collector_events(engine)
        if count != last[0]:
            last[:] = [count, time.monotonic()]
            return False
        return time.monotonic() - last[1] > 3

    wait_until(settled, 120, "the collector to deliver everything")


def _bill_the_month(reporting: Reporting, world: SimCloudServer, config: WorldConfig,
                    final: dt.datetime) -> None:
    put = reporting.send("PUT", f"/v1/price-lists/{CLOUD}", DEMO_PRICES)
    assert put.status_code == 201, put.text
    period_start = config.start.replace(tzinfo=None)
    period = f"{period_start:%Y-%m}"
    assert period_start.day == 1 and period_start.time() == dt.time(0)
    period_end = (period_start + dt.timedelta(days=32)).replace(day=1)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    check = check_month(reporting.get, CLOUD, world.world, period, period_start,
                        min(period_end, now), final.replace(tzinfo=None),
                        2 * INTERVAL + SETTLE)
    print(f"e2e billing of {period}: {check.describe()}")
    assert not check.problems, "\n".join(check.problems[:20])
    assert check.billed and check.exact and check.total > 0
    summaries = reporting.get("/v1/statements", cloud=CLOUD, period=period, limit=1000)
    assert summaries["next_marker"] is None
    # Tally's history of the simulated cloud begins inside the month: its first
    # completed sync runs one interval after the month's start, so the first interval
    # is known from the collector and what that sync dated back only.  The close says
    # so explicitly, as an operator starting Tally mid-month would (check_month above
    # compared that history with the world's truth); it accepts the unrated lines
    # (an image without a size has no price) only if the summaries show some.
    refused = reporting.send("POST", f"/v1/periods/{CLOUD}/{period}/close")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "partial_history", refused.text
    unrated = sum(item["unrated_lines"] for item in summaries["items"])
    accept = {"accept_partial_history": True, "accept_unrated_lines": unrated > 0}
    closed = reporting.send("POST", f"/v1/periods/{CLOUD}/{period}/close", accept)
    assert closed.status_code == 200, closed.text
    assert closed.json()["accepted_partial_history_from"] == format_timestamp(
        config.start + INTERVAL)
    assert closed.json()["accepted_unrated_lines"] == (unrated or None)
    # The close freezes the summaries as computed and numbers each statement.
    frozen = reporting.get("/v1/statements", cloud=CLOUD, period=period, limit=1000)
    assert all(item["number"] is None for item in summaries["items"])
    numbers = [item.pop("number") for item in frozen["items"]]
    assert all(isinstance(n, int) and n > 0 for n in numbers)
    assert len(set(numbers)) == len(numbers)
    for item in summaries["items"]:
        del item["number"]
    assert frozen == summaries


def test_a_reconciled_month_equals_the_truth(pg_database: str, rabbit_url: str,
                                             tmp_path: Path):
    scale = int(os.environ.get("TALLY_E2E_SCALE", "30"))
    days = int(os.environ.get("TALLY_E2E_DAYS", "30"))
    tag = uuid.uuid4().hex[:8]
    exchanges = {service: f"e2e-{tag}-{service}" for service in STOCK_EXCHANGES}
    config = WorldConfig(seed=2026, scale=scale, days=days, loss=0.10, duplicate=0.02,
                         reorder=True, transport_url=rabbit_url, exchanges=exchanges)
    world = SimCloudServer(config)
    world.start()
    clouds_yaml = world.write_clouds_yaml(tmp_path / "clouds.yaml")
    reporting = Reporting(tmp_path, pg_database, CLOUD, "sim-admin", clouds_yaml)
    pool = f"tally-e2e-{tag}"
    collector = Collector(tmp_path, CLOUD, rabbit_url, reporting.url, pool,
                          list(exchanges.values()))
    engine = sa.create_engine(pg_database)
    try:
        # The collector declares and binds its queue before anything is published.
        wait_until(lambda: consumed(rabbit_url, pool), 120, "the collector to consume")
        start = config.start
        end = config.end + dt.timedelta(hours=1)  # transitions under way at the end finish
        at = start + INTERVAL
        syncs = 0
        while at <= end:
            world.world.advance_to(at)
            response = reporting.sync(CLOUD, format_timestamp(at))
            assert response.status_code == 200, (at, response.text)
            syncs += 1
            at += INTERVAL
        final = at - INTERVAL
        _wait_for_collector_to_settle(engine)
        response = reporting.sync(CLOUD, format_timestamp(final))
        assert response.status_code == 200, response.text

        truth = world.world.truth(final)
        rows = _rows(engine)
        live_truth = [r for r in truth if r["live"]]
        assert live_truth and syncs >= days * (dt.timedelta(days=1) // INTERVAL)
        # 1. the projection equals the truth for every resource
        for record in truth:
            row = rows.get((record["resource_type"], record["resource_id"]))
            if not record["live"]:
                assert row is None or not row.live, record
                continue
            assert row is not None and row.live, record
            assert (row.project_id, row.state, row.size) == (
                record["project_id"], record["state"], record["size"]), record
        # 2. deletes: instances at nova's instant, the rest within one interval (+ settle)
        deleted = [r for r in truth if r["deleted_at"] is not None
                   and (r["resource_type"], r["resource_id"]) in rows]
        assert any(r["resource_type"] == "instance" for r in deleted)
        for record in deleted:
            row = rows[(record["resource_type"], record["resource_id"])]
            real = naive(record["deleted_at"])
            if record["resource_type"] == "instance":
                assert row.deleted_at == real, record
            else:
                assert real <= row.deleted_at <= real + INTERVAL + SETTLE, record
        # 3. a further sync books nothing
        again = reporting.sync(CLOUD, format_timestamp(final)).json()["stats"]
        assert (again["created"], again["updated"], again["deleted"]) == (0, 0, 0)
        # 4. the month billed against the truth's bill
        _bill_the_month(reporting, world, config, final)
    finally:
        collector.stop()
        reporting.stop()
        world.stop()
        engine.dispose()
