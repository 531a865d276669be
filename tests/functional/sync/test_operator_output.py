"""What an operator sees of sync runs: a simulated cloud cannot be synced at wall
time, runs told the same instant list in the order they ran, a failed run's reasons
reach the API's log, ``tally-sync`` and ``tally sync-runs``."""

from __future__ import annotations

import datetime as dt
import logging
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mapping.event import format_timestamp
from reporting.cmd import sync as sync_cmd
from reporting.sync.run_ids import new_run_id
from reporting.sync.stats import describe_deferred
from simcloud.cmd import write_tally_clouds
from tallyclient.cli import main as cli
from tests.functional.sync.conftest import ADMIN, READ, START, Syncer, running_syncer

T1 = START + dt.timedelta(hours=6)


@pytest.fixture
def simulated(world, migrated_db: str, tmp_path: Path) -> Iterator[Syncer]:
    """The API with the clouds file tally-simcloud writes (clock: simulated)."""
    clouds = write_tally_clouds(str(tmp_path / "tally-clouds.yaml"), "sim", world.base_url)
    with running_syncer(world, migrated_db, tmp_path, clouds) as running:
        yield running


def test_a_simulated_cloud_is_never_synced_at_wall_time(simulated: Syncer, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    document = yaml.safe_load((tmp_path / "tally-clouds.yaml").read_text())
    assert document["clouds"][0]["clock"] == "simulated"
    refused = simulated.sync()
    assert refused.status_code == 400
    assert "simulated clock" in refused.get_json()["error"]["message"]
    assert "?at=" in refused.get_json()["error"]["message"]
    conf = simulated.app.config["TALLY_CONF"]
    config = tmp_path / "tally.conf"
    config.write_text(f"[sync]\nclouds_file = {conf.sync.clouds_file}\n"
                      "api_url = http://127.0.0.1:1\n")
    assert sync_cmd.main(["--config-file", str(config)]) == 2
    assert "pass --at T" in capsys.readouterr().err
    simulated.advance(T1)
    assert simulated.sync(T1).status_code == 200


def _runs(syncer: Syncer) -> list[dict[str, object]]:
    return list(syncer.client.get("/v1/sync-runs", headers=READ).get_json()["items"])


def test_a_told_instant_beyond_the_simulated_clock_is_refused(
        simulated: Syncer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tally-simcloud's clouds file names its clock (clock_url): --at 2027-06-01 against
    a month standing at 2026-11-01T06:00 would otherwise complete and top the run list."""
    document = yaml.safe_load((tmp_path / "tally-clouds.yaml").read_text())
    assert document["clouds"][0]["clock_url"] == f"{simulated.world.base_url}/_sim/clock"
    simulated.advance(T1)
    now = format_timestamp(T1)
    refused = simulated.sync(dt.datetime(2027, 6, 1, tzinfo=dt.UTC))
    assert refused.status_code == 400
    message = refused.get_json()["error"]["message"]
    assert message.startswith("at: 2027-06-01T00:00:00.000000Z is after the simulated clock "
                              f"of cloud 'sim', which stands at {now}"), message
    assert f"tell it {now} or earlier" in message
    assert simulated.sync(T1 + dt.timedelta(seconds=1)).status_code == 400
    before = simulated.sync(START - dt.timedelta(days=1))
    assert before.status_code == 400
    assert "before the simulated month of cloud 'sim', which starts at " \
        f"{format_timestamp(START)}" in before.get_json()["error"]["message"]
    assert _runs(simulated) == []  # nothing booked, nothing on the run list

    conf = simulated.app.config["TALLY_CONF"]
    config = tmp_path / "tally.conf"
    config.write_text(f"[sync]\nclouds_file = {conf.sync.clouds_file}\n"
                      "api_url = http://127.0.0.1:1\n")  # never called: refused first
    assert sync_cmd.main(["--config-file", str(config), "--at", "2027-06-01"]) == 2
    assert sync_cmd.main(["--config-file", str(config), "--at", "2027-06-01T00:00:00Z"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "tally-sync: configuration error: --at: timestamp '2027-06-01' is not " \
        "RFC 3339 with an offset (e.g. 2026-01-31T12:00:00Z)"
    assert len(err) == 2 and err[1].startswith(
        "tally-sync: configuration error: --at 2027-06-01T00:00:00.000000Z is after the "
        f"simulated clock of cloud 'sim', which stands at {now}"), err

    assert simulated.sync(T1).status_code == 200  # the clock's own instant
    assert simulated.sync(T1 - dt.timedelta(hours=1)).status_code == 200  # a late run


def test_a_simulated_clock_that_does_not_answer_books_nothing(
        world, migrated_db: str, tmp_path: Path) -> None:
    clouds = write_tally_clouds(str(tmp_path / "tally-clouds.yaml"), "sim", "http://127.0.0.1:1")
    with running_syncer(world, migrated_db, tmp_path, clouds) as syncer:
        answer = syncer.sync(T1)
        assert answer.status_code == 503
        assert answer.get_json()["error"] == {
            "code": "clock_unavailable",
            "message": "the simulated clock of cloud 'sim' did not answer: "
                       "http://127.0.0.1:1/_sim/clock: connection refused by 127.0.0.1:1 "
                       "(is the simulated cloud running there?)"}
        assert _runs(syncer) == []


def test_runs_told_the_same_instant_list_in_the_order_they_ran(syncer: Syncer) -> None:
    syncer.advance(T1)
    ran = [syncer.sync_ok(T1)["id"] for _ in range(4)]
    listed = syncer.client.get("/v1/sync-runs?limit=10", headers=READ).get_json()["items"]
    assert [run["id"] for run in listed] == list(reversed(ran))


def test_the_api_logs_a_run_in_words_as_tally_sync_prints_it(
        syncer: Syncer, caplog: pytest.LogCaptureFixture) -> None:
    syncer.advance(T1)
    with caplog.at_level(logging.INFO, logger="reporting.sync.runner"):
        run = syncer.sync_ok(T1)
    lines = [r.getMessage() for r in caplog.records if r.name == "reporting.sync.runner"]
    stats = run["stats"]
    assert lines == [f"sync run {run['id']} of sim completed: created {stats['created']} "
                     f"(restated {stats['restated']}), "
                     f"updated {stats['updated']}, deleted {stats['deleted']}, "
                     f"deferred {describe_deferred(stats['deferred'])}, errors 0"]
    assert "{" not in lines[0]
    assert describe_deferred({"transition": 0, "recent": 0}) == "0"
    assert describe_deferred({"transition": 1, "recent": 2}) == "3 (recent 2, transition 1)"


def test_run_ids_sort_in_the_order_they_were_made() -> None:
    ids = [new_run_id() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(len(run_id) == 36 and run_id[14] == "7" for run_id in ids)


def test_a_failed_run_shows_its_reasons_everywhere(
        syncer: Syncer, served: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    syncer.advance(T1)
    syncer.world.world.faults.set("block-storage", status=503)
    with caplog.at_level(logging.WARNING, logger="reporting.sync.api"):
        response = syncer.sync(T1)
    assert response.status_code == 500
    run_id = response.get_json()["run_id"]
    logged = [r.getMessage() for r in caplog.records if r.name == "reporting.sync.api"]
    assert len(logged) == 1 and logged[0].startswith(f"sync run {run_id} of sim failed: ")
    assert "503" in logged[0]

    token = tmp_path / "read.token"
    token.write_text(READ["Authorization"].split()[1] + "\n")
    assert cli.main(["--url", served, "--token-file", str(token), "sync-runs"]) == 0
    table = capsys.readouterr().out
    assert "errors" in table.splitlines()[0]
    assert "503" in table

    admin = tmp_path / "admin.token"
    admin.write_text(ADMIN["Authorization"].split()[1] + "\n")
    conf = syncer.app.config["TALLY_CONF"]
    config = tmp_path / "tally.conf"
    config.write_text(textwrap.dedent(f"""\
        [sync]
        clouds_file = {conf.sync.clouds_file}
        api_url = {served}/
        token_file = {admin}
        """))
    later = format_timestamp(T1 + dt.timedelta(minutes=10))
    assert sync_cmd.main(["--config-file", str(config), "--at", later]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Reporting API: {served}; told instant {later}"
    assert out[1].startswith("sim: run ") and " failed: " in out[1] and "503" in out[1]


@pytest.mark.parametrize(("api_url", "message"), [
    ("127.0.0.1:8779", "has no http:// or https:// scheme"),
    ("http://127.0.0.1:8779/v1", "without /v1"),
])
def test_tally_sync_checks_api_url_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            api_url: str, message: str) -> None:
    config = tmp_path / "tally.conf"
    config.write_text(f"[sync]\napi_url = {api_url}\n")
    assert sync_cmd.main(["--config-file", str(config), "sim"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[sync] api_url" in err[0] and message in err[0], err


def test_tally_sync_says_when_the_host_is_unknown(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tally.conf"
    config.write_text("[sync]\napi_url = http://no-such-host.invalid:8779\n"
                      "auth_strategy = noauth\n")
    assert sync_cmd.main(["--config-file", str(config), "sim"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("sim: the Reporting API did not answer: unknown host "
                      "'no-such-host.invalid' (check the URL's host name or DNS)")
