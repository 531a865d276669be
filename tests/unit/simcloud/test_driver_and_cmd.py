"""The driver loop and the tally-simcloud command line."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qs, urlsplit

import pytest
import requests_mock
import yaml

from simcloud import cmd, driver
from simcloud.config import WorldConfig
from simcloud.server import running_simcloud
from simcloud.world import World
from tests.oslo_log_lines import messages

REPORTING = "http://reporting.invalid:8779"


def test_drive_steps_the_clock_and_tells_each_sync_its_instant(tmp_path) -> None:
    with running_simcloud(WorldConfig(seed=5, scale=40)) as sim, \
            requests_mock.Mocker(real_http=True) as mock:
        mock.post(f"{REPORTING}/internal/sync/sim", [
            {"json": {"status": "completed"}}, {"status_code": 500, "json": {"id": "r2"}},
            {"json": {"status": "completed"}}])
        clock = driver.HttpClock(sim.base_url)
        sync = driver.http_sync(REPORTING, "sim", token="s3cret")
        until = sim.world.config.start + dt.timedelta(minutes=25)
        steps = list(driver.drive(clock, sync, until=until))
        assert [s.at for s in steps] == [sim.world.config.start + dt.timedelta(minutes=m)
                                         for m in (10, 20, 25)]
        assert [s.sync.status for s in steps if s.sync] == [200, 500, 200]
        assert sim.world.clock == until
        told = [parse_qs(urlsplit(r.url).query)["at"][0] for r in mock.request_history
                if r.url.startswith(REPORTING)]
        assert told == ["2026-11-01T00:10:00.000000Z", "2026-11-01T00:20:00.000000Z",
                        "2026-11-01T00:25:00.000000Z"]
        assert all(r.headers["Authorization"] == "Bearer s3cret" for r in mock.request_history
                   if r.url.startswith(REPORTING))


def test_drive_in_process_without_syncs() -> None:
    world = World(WorldConfig(seed=5, scale=40))
    steps = list(driver.drive(driver.WorldClock(world), None,
                              until=world.config.start + dt.timedelta(hours=1),
                              step=dt.timedelta(minutes=30)))
    assert len(steps) == 2 and steps[-1].sync is None
    with pytest.raises(ValueError, match="positive"):
        list(driver.drive(driver.WorldClock(world), None, until=world.config.end,
                          step=dt.timedelta(0)))


def test_drive_command_exit_code(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    with running_simcloud(WorldConfig(seed=5, scale=20)) as sim, \
            requests_mock.Mocker(real_http=True) as mock:
        mock.post(f"{REPORTING}/internal/sync/sim", json={"status": "completed"})
        args = ["drive", "--sim-url", sim.base_url, "--reporting-url", REPORTING,
                "--cloud", "sim", "--token-file", str(token), "--step-s", "3600",
                "--until", "2026-11-01T03:00:00Z"]
        assert cmd.main(args) == 0
        # At start it names what it drives and the API it syncs, in oslo.log's lines.
        logged = messages([line for line in capsys.readouterr().out.splitlines()
                           if " INFO simcloud " in line])
        assert logged[:2] == [
            f"simulated cloud: {sim.base_url} (clock at 2026-11-01T00:00:00.000000Z); driving "
            "it to 2026-11-01T03:00:00.000000Z in steps of 3600s",
            f"Reporting API: {REPORTING} (syncing cloud sim after each step)"]
        assert sum(r.url.startswith(REPORTING) for r in mock.request_history) == 3
        mock.post(f"{REPORTING}/internal/sync/sim", status_code=500, json={"id": "x"})
        assert cmd.main(args[:-1] + ["2026-11-01T04:00:00Z"]) == 1
    assert cmd.main(["drive", "--sim-url", "http://x.invalid", "--reporting-url",
                     REPORTING]) == 2


@pytest.mark.parametrize("argv", [
    ["serve", "--loss", "2"],
    ["serve", "--bind", "localhost"],
    ["serve", "--start", "2026-11-01"],
    ["serve", "--scale", "ten"],
    ["serve", "--page-cap", "network"],
    ["serve", "--page-cap", "network=0"],
    ["serve", "--page-latency", "compute"],
    ["serve", "--page-latency", "compute=fast"],
    ["serve", "--page-latency", "compute=-5+1"],
    ["serve", "--page-latency", "=5+1"],
])
def test_serve_refuses_bad_options(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cmd.main(argv)
    assert exc.value.code == 2


@pytest.mark.parametrize("argv, message", [
    (["serve", "--page-cap", "swift=10"], "page_caps: unknown APIs ['swift']"),
    (["serve", "--nova-max-microversion", "2.105"], "within 2.1-2.104"),
    (["serve", "--page-latency", "swift=5+1"], "page_latencies: unknown APIs ['swift']"),
])
def test_serve_refuses_a_world_it_cannot_build(argv: list[str], message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert cmd.main(argv) == 2
    assert message in capsys.readouterr().err


def test_serve_page_caps_and_nova_microversion_reach_the_world() -> None:
    args = cmd.build_parser().parse_args(
        ["serve", "--page-cap", "network=500", "--page-cap", "compute=200",
         "--nova-max-microversion", "2.38"])
    config = cmd.world_config(args)
    assert config.page_caps == {"network": 500, "compute": 200}
    assert config.page_cap("network") == 500 and config.page_cap("image") == 1000
    assert config.nova_max_version == (2, 38)


def test_serve_page_latencies_reach_the_world() -> None:
    args = cmd.build_parser().parse_args(
        ["serve", "--page-latency", "compute=40+0.5", "--page-latency", "network=12"])
    config = cmd.world_config(args)
    assert config.page_latencies == {"compute": (0.04, 0.0005), "network": (0.012, 0.0)}
    assert config.page_latency("compute", 1000) == pytest.approx(0.54)
    assert config.page_latency("network", 1000) == pytest.approx(0.012)
    assert config.page_latency("image", 1000) == 0.0


def test_each_listing_page_spends_what_the_model_says(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path) -> None:
    import openstack.config
    from keystoneauth1.adapter import Adapter

    from simcloud.api import common

    slept: list[float] = []
    monkeypatch.setattr(common.time, "sleep", slept.append)
    latencies = {service: (0.001 * (index + 1), 0.0001)
                 for index, service in enumerate(
                     ("compute", "block-storage", "network", "image", "load-balancer"))}
    with running_simcloud(WorldConfig(seed=5, scale=20, page_latencies=latencies)) as sim:
        region = openstack.config.OpenStackConfig(
            config_files=[str(sim.write_clouds_yaml(tmp_path / "clouds.yaml"))],
            load_envvars=False).get_one("sim-admin")
        session = region.get_session()
        for service, path, key in (
                ("compute", "servers/detail?all_tenants=1", "servers"),
                ("block-storage", "volumes/detail?all_tenants=1", "volumes"),
                ("network", "v2.0/floatingips", "floatingips"),
                ("image", "v2/images", "images"),
                ("load-balancer", "v2/lbaas/loadbalancers", "loadbalancers")):
            slept.clear()
            items = Adapter(session, service_type=service).get(path).json()[key]
            per_page, per_item = latencies[service]
            assert slept == [pytest.approx(per_page + per_item * len(items))], service


def test_clouds_yaml_entries(tmp_path) -> None:
    with running_simcloud(WorldConfig(seed=5, scale=20)) as sim:
        path = sim.write_clouds_yaml(tmp_path / "deep" / "clouds.yaml")
        clouds = yaml.safe_load(path.read_text())["clouds"]
        assert set(clouds) == {"sim-admin", "sim-member", "sim-admin-readonly",
                               "sim-tally-service"}
        assert clouds["sim-admin"]["auth"]["auth_url"] == f"{sim.base_url}/identity/v3"
        assert clouds["sim-member"]["auth"]["project_name"] == "demo"
        assert clouds["sim-admin-readonly"]["auth_type"] == "v3applicationcredential"
        assert path.stat().st_mode & 0o777 == 0o600
