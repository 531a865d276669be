"""/metrics under a real tally-reporting with 2 gunicorn workers: counters incremented
in different worker processes all show up, whichever worker answers the scrape."""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import signal
import time
import uuid
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.functional.reporting.fixtures import auth, start_server, write_config

_ids = itertools.count()


def _event(cloud: str) -> dict[str, object]:
    return {
        "event_id": f"metrics-{cloud}-{next(_ids)}", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": cloud, "resource_type": "instance",
        "resource_id": uuid.uuid4().hex, "project_id": "p", "timestamp": "2026-01-01T00:00:00Z",
        "source": "collector", "payload": {"state": "active"},
    }


def _post_one(base_url: str, cloud: str) -> int:
    # A new connection per request, so the workers' accept() calls share them out.
    response = requests.post(base_url + "/v1/events", json={"events": [_event(cloud)]},
                             headers={**auth("ingest"), "Connection": "close"}, timeout=30)
    assert response.status_code == 200
    return int(response.json()["stored"])


def _stored(base_url: str, cloud: str) -> float:
    text = requests.get(base_url + "/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        if family.name == "tally_ingest_events":
            return sum(s.value for s in family.samples if s.name.endswith("_total")
                       and s.labels == {"cloud": cloud, "source": "collector",
                                        "outcome": "stored"})
    return 0.0


def _worker_files(tmp: Path, master_pid: int) -> set[str]:
    """Per-process counter files of the workers (the master serves no request)."""
    files = set()
    for directory in tmp.glob("tally-reporting-metrics-*"):
        for path in directory.glob("counter_*.db"):
            if path.stem != f"counter_{master_pid}":
                files.add(path.stem)
    return files


def test_counters_of_every_worker_are_exposed(db_url: str, tokens_file: str,
                                              tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    server = start_server(
        write_config(tmp_path / "reporting.conf", db_url, tokens_file, api={"workers": 2}),
        tmp_path / "reporting.log", env={"TMPDIR": str(tmp)},
    )
    cloud = "metrics-" + uuid.uuid4().hex[:8]
    stored = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            # Bounded: rounds of concurrent requests until both workers have counted.
            for _round in range(50):
                stored += sum(pool.map(lambda _: _post_one(server.base_url, cloud), range(32)))
                if len(_worker_files(tmp, server.process.pid)) >= 2:
                    break
        assert len(_worker_files(tmp, server.process.pid)) >= 2, "one worker took every request"
        # Each scrape may be answered by either worker: every one sees the total.
        for _scrape in range(8):
            assert _stored(server.base_url, cloud) == stored
    finally:
        server.stop()


def _samples(base_url: str, name: str) -> list[tuple[dict[str, str], float]]:
    text = requests.get(base_url + "/metrics", timeout=30).text
    return [(sample.labels, sample.value) for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == name]


def test_a_server_that_only_served_queries_shows_build_info_and_requests(
        db_url: str, tokens_file: str, tmp_path: Path) -> None:
    server = start_server(
        write_config(tmp_path / "reporting.conf", db_url, tokens_file, api={"workers": 2}),
        tmp_path / "reporting.log")
    try:
        for _ in range(3):
            listed = requests.get(server.base_url + "/v1/resources", headers=auth("read"),
                                  timeout=30)
            assert listed.status_code == 200, listed.text
        missing = f"/v1/resources/openstack/c1/instance/{uuid.uuid4().hex}"
        assert requests.get(server.base_url + missing, headers=auth("read"),
                            timeout=30).status_code == 404
        assert requests.get(f"{server.base_url}/no/{uuid.uuid4().hex}",
                            timeout=30).status_code == 404
        (build, value), = _samples(server.base_url, "tally_build_info")
        assert value == 1 and build["version"] and build["python"], build
        counts = {(labels["route"], labels["method"], labels["status"]): value for labels, value
                  in _samples(server.base_url, "tally_http_request_duration_seconds_count")}
        assert counts[("/v1/resources", "GET", "200")] == 3, counts
        # The route is the URL rule, never the path a client sent: bounded labels.
        rule = "/v1/resources/<platform>/<cloud>/<resource_type>/<resource_id>"
        assert counts[(rule, "GET", "404")] == 1, counts
        assert counts[("(unmatched)", "GET", "404")] == 1, counts
        assert not [route for route, _m, _s in counts if "c1" in route], counts
    finally:
        server.stop()


def _children(pid: int) -> set[int]:
    return {int(child) for child in
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def test_a_worker_that_exits_leaves_every_other_workers_metrics(
        db_url: str, tokens_file: str, tmp_path: Path) -> None:
    # A worker leaves by SystemExit (a restart, max_requests, a signal): it once
    # unwound through tally-reporting's clean-up and removed the shared directory.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    server = start_server(
        write_config(tmp_path / "reporting.conf", db_url, tokens_file, api={"workers": 2}),
        tmp_path / "reporting.log", env={"TMPDIR": str(tmp)},
    )
    cloud = "metrics-" + uuid.uuid4().hex[:8]
    stored = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            for _round in range(50):
                stored += sum(pool.map(lambda _: _post_one(server.base_url, cloud), range(32)))
                if len(_worker_files(tmp, server.process.pid)) >= 2:
                    break
        workers = _children(server.process.pid)
        assert len(workers) == 2, workers
        leaving = min(workers)
        os.kill(leaving, signal.SIGTERM)
        # gunicorn starts a replacement; wait for it (bounded, not timed).
        deadline = time.monotonic() + 120
        while (leaving in _children(server.process.pid)
               or len(_children(server.process.pid)) < 2):
            assert time.monotonic() < deadline, "gunicorn started no replacement worker"
            time.sleep(0.1)
        directories = list(tmp.glob("tally-reporting-metrics-*"))
        assert len(directories) == 1 and directories[0].is_dir(), directories
        for _ in range(16):
            stored += _post_one(server.base_url, cloud)
        for _scrape in range(8):
            assert _stored(server.base_url, cloud) == stored
    finally:
        server.stop()
    assert "Traceback" not in (tmp_path / "reporting.log").read_text(errors="replace")
