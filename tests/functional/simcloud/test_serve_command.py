"""``tally-simcloud serve`` as a process: clouds.yaml, the APIs and the clock."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import openstack
import requests
import yaml

REPO = Path(__file__).resolve().parents[3]


def _wait_for(clouds: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        if clouds.exists():
            url = yaml.safe_load(clouds.read_text())["clouds"]["sim-admin"]["auth"]["auth_url"]
            base = url.rsplit("/identity", 1)[0]
            try:
                requests.get(f"{base}/_sim/clock", timeout=5)
                return base
            except requests.ConnectionError:
                pass
        time.sleep(0.2)
    raise AssertionError("tally-simcloud serve did not come up")


def test_serve_writes_clouds_yaml_and_answers(tmp_path: Path, monkeypatch) -> None:
    clouds = tmp_path / "clouds.yaml"
    process = subprocess.Popen(
        [sys.executable, "-m", "simcloud.cmd", "serve", "--seed", "3", "--scale", "40",
         "--bind", "127.0.0.1:0", "--write-clouds-yaml", str(clouds),
         "--write-tally-clouds", str(tmp_path / "tally-clouds.yaml"),
         "--start", "2026-10-01T00:00:00Z", "--days", "5"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = _wait_for(clouds, process)
        tally_clouds = yaml.safe_load((tmp_path / "tally-clouds.yaml").read_text())["clouds"]
        assert tally_clouds[0]["clock"] == "simulated"
        assert tally_clouds[0]["clock_url"] == f"{base}/_sim/clock"
        clock = requests.get(f"{base}/_sim/clock", timeout=10).json()
        assert (clock["start"], clock["end"]) == ("2026-10-01T00:00:00.000000Z",
                                                  "2026-10-06T00:00:00.000000Z")
        moved = requests.post(f"{base}/_sim/clock", json={"at": "2026-10-03T00:00:00Z"},
                              timeout=30).json()
        assert moved["at"] == "2026-10-03T00:00:00.000000Z"
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
        conn = openstack.connect(cloud="sim-admin")
        try:
            servers = {s.id for s in conn.compute.servers(all_projects=True)}
        finally:
            conn.close()
        truth = requests.get(f"{base}/_sim/truth", timeout=30,
                             params={"resource_type": "instance", "live": "true"}).json()
        assert servers and servers == {r["resource_id"] for r in truth["resources"]}
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "simcloud.cmd", "serve", "--scale", "5", "--bind",
             f"127.0.0.1:{port}"], cwd=REPO, capture_output=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"tally-simcloud: --bind '127.0.0.1:{port}': cannot listen there: address already in use"]
