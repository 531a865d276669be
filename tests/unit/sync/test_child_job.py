"""What a sync run's process is handed and hands back (reporting.sync.child_job,
reporting.sync.child_metrics), without starting one."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from oslo_config import cfg
from prometheus_client import REGISTRY

from reporting import metrics, opts
from reporting.sync import child_metrics
from reporting.sync.child_job import Job, Outcome, restore, snapshot
from reporting.sync.clouds import CloudEntry
from reporting.sync.run_process import RunProcesses
from reporting.sync.stats import empty_stats
from tally_common import logs

ENTRY = CloudEntry("sim", "openstack", "openstack", {"os_cloud": "sim-admin"},
                   clock="simulated", clock_url="http://127.0.0.1:1/_sim/clock")


def _service_conf(tmp_path: Path) -> cfg.ConfigOpts:
    config = tmp_path / "tally.conf"
    config.write_text("[DEFAULT]\ndebug = true\n[sync]\nsettle_s = 5\n"
                      "[database]\nconnection = sqlite:////var/lib/tally/tally.sqlite\n")
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logs.register_options(conf)
    conf(["--config-file", str(config)], project="tally", default_config_files=[])
    conf.set_override("budget_s", 7.5, group="sync")  # as an environment alias does
    conf.set_override("default_log_levels", ["sqlalchemy=WARN", "tally=DEBUG"])
    return conf


def test_the_child_gets_every_value_as_the_service_resolved_it(tmp_path: Path) -> None:
    service = _service_conf(tmp_path)
    job = Job(snapshot(service), ENTRY, "run-1", dt.datetime(2026, 11, 3, 6, 0, 1, 5),
              time.monotonic() + 7.5)
    handed = Job.from_json(job.to_json())
    assert handed == job
    child = restore(handed.options)
    assert child.sync.budget_s == 7.5 and child.sync.settle_s == 5.0
    assert child.database.connection == "sqlite:////var/lib/tally/tally.sqlite"
    assert child.debug is True
    assert child.default_log_levels == ["sqlalchemy=WARN", "tally=DEBUG"]
    assert child.ingest.require_size_schema == service.ingest.require_size_schema
    # Which files the service parsed is not handed: the child reads no file.
    assert child.config_file == []
    handed_names = {(group, name) for group, name, _ in handed.options}
    assert ("sync", "clouds_file") in handed_names and (None, "config_file") not in handed_names


def test_options_the_service_never_registered_keep_their_defaults() -> None:
    service = cfg.ConfigOpts()
    service.register_opts([cfg.FloatOpt("budget_s", default=3.0)], group="sync")
    service([], project="tally", default_config_files=[])
    child = restore(snapshot(service))
    assert child.sync.budget_s == 3.0 and child.sync.settle_s == 60.0


def test_an_outcome_carries_stats_and_metric_samples() -> None:
    stats = {**empty_stats(), "created": 3}
    sample = ("tally_ingest_events", {"cloud": "c", "source": "reconciliation",
                                      "outcome": "stored"}, 3.0)
    assert Outcome.from_json(Outcome(stats, [sample]).to_json()) == Outcome(stats, [sample])


def test_the_child_s_ingest_counts_are_added_to_the_service_s() -> None:
    labels = {"cloud": "carried-home", "source": "reconciliation", "outcome": "stored"}
    metrics.INGEST_EVENTS.labels(**labels).inc(2)
    metrics.EVENTS_LAST_RECEIVED.labels(cloud="carried-home").set(1_700_000_000)
    collected = child_metrics.collect()
    assert ("tally_ingest_events", labels, 2.0) in collected
    assert ("tally_events_last_received_timestamp", {"cloud": "carried-home"},
            1_700_000_000.0) in collected
    assert not any(name.startswith("tally_sync_") for name, _, _ in collected)
    child_metrics.add([("tally_ingest_events", labels, 3.0),
                       ("tally_events_last_received_timestamp", {"cloud": "carried-home"},
                        1_800_000_000.0)])
    assert REGISTRY.get_sample_value("tally_ingest_events_total", labels) == 5.0
    assert REGISTRY.get_sample_value("tally_events_last_received_timestamp",
                                     {"cloud": "carried-home"}) == 1_800_000_000.0


def test_a_long_lived_run_process_hands_back_only_what_moved_since_its_last_run() -> None:
    labels = {"cloud": "moved-since", "source": "reconciliation", "outcome": "stored"}
    tally = child_metrics.Tally()
    metrics.INGEST_EVENTS.labels(**labels).inc(4)
    first = [s for s in tally.since_last() if s[1].get("cloud") == "moved-since"]
    assert first == [("tally_ingest_events", labels, 4.0)]
    assert [s for s in tally.since_last() if s[1].get("cloud") == "moved-since"] == []
    metrics.INGEST_EVENTS.labels(**labels).inc(1)
    assert [s for s in tally.since_last() if s[1].get("cloud") == "moved-since"] == [
        ("tally_ingest_events", labels, 1.0)]


def test_an_in_memory_database_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    conf = _service_conf(tmp_path)
    conf.set_override("connection", "sqlite://", group="database")
    stats = RunProcesses().run(conf, ENTRY, "run-2", dt.datetime(2026, 11, 3),
                               time.monotonic() + 5)
    assert stats["errors"] == ["a sync run needs a database its own process can open; "
                               "[database] connection names an in-memory SQLite database"]
    assert set(stats) == set(empty_stats())
