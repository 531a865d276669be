"""tally-sync against a served Reporting API, and the lock across two processes."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import sqlalchemy as sa

from mapping.event import format_timestamp
from reporting.cmd import sync as sync_cmd
from reporting.db.models import SyncLock
from tests.functional.sync.conftest import START, Syncer
from tests.functional.sync.held_service import held_service

T1 = START + dt.timedelta(hours=6)


@pytest.fixture
def config_file(syncer: Syncer, served: str, tmp_path: Path) -> Path:
    conf = syncer.app.config["TALLY_CONF"]
    token = tmp_path / "admin.token"
    token.write_text("tok-admin\n")
    path = tmp_path / "tally.conf"
    path.write_text(textwrap.dedent(f"""\
        [database]
        connection = {conf.database.connection}
        [api]
        tokens_file = {conf.api.tokens_file}
        [sync]
        clouds_file = {conf.sync.clouds_file}
        api_url = {served}
        token_file = {token}
        """))
    return path


def test_tally_sync_runs_every_cloud_and_exits_0(syncer, config_file, capsys):
    syncer.advance(T1)
    assert sync_cmd.main(["--config-file", str(config_file), "--at", format_timestamp(T1)]) == 0
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first == f"Reporting API: {config_file.read_text().split('api_url = ')[1].split()[0]}; told instant {format_timestamp(T1)}"
    assert second.startswith("sim: run ") and " completed: created " in second
    # deferred counts read as words, never a Python dict
    assert "{" not in out and "deferred " in second
    assert syncer.last_run().started_at == T1.replace(tzinfo=None)


def test_tally_sync_exits_1_when_a_run_fails_or_a_cloud_is_unknown(syncer, config_file, capsys):
    syncer.advance(T1)
    syncer.world.world.faults.set("block-storage", status=503)
    assert sync_cmd.main(["--config-file", str(config_file), "sim", "nope"]) == 1
    lines = capsys.readouterr().out.splitlines()[1:]
    # the failed run's reasons, read back from the run list: the 503 of block-storage
    assert lines[0].startswith("sim: run ") and " failed: " in lines[0], lines
    assert "503" in lines[0] and "GET /v1/sync-runs" not in lines[0], lines
    assert lines[1].startswith("nope: HTTP 404")


def test_tally_sync_refuses_a_bad_instant(config_file, capsys):
    assert sync_cmd.main(["--config-file", str(config_file), "--at", "noon"]) == 2
    assert "--at" in capsys.readouterr().err


def test_a_second_process_gets_409_while_the_first_holds_the_cloud(syncer, config_file,
                                                                    capsys, monkeypatch):
    syncer.advance(T1)
    # The first run waits at its floating IP listing until this test lets it go: it
    # holds the cloud's lock throughout, however long its process takes to get there.
    with held_service(monkeypatch, "network") as network:
        # The first run: another process with its own app and engine on the same database.
        holder = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(f"""\
                import sys
                from reporting.cmd import load_conf
                from reporting.app import create_app
                conf = load_conf(["--config-file", {str(config_file)!r}], prog="holder")
                client = create_app(conf).test_client()
                response = client.post("/internal/sync/sim?at={format_timestamp(T1)}",
                                       headers={{"Authorization": "Bearer tok-admin"}})
                print(response.status_code)
                """)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            network.wait_entered()
            with syncer.factory() as session:
                assert session.execute(sa.select(SyncLock)).first() is not None
            assert sync_cmd.main(["--config-file", str(config_file), "sim"]) == 1
            assert "sim: HTTP 409" in capsys.readouterr().out
        finally:
            network.release()
            out, err = holder.communicate(timeout=120)
    assert out.strip() == "200", err
    syncer.world.world.faults.clear()
    assert sync_cmd.main(["--config-file", str(config_file), "sim",
                          "--at", format_timestamp(T1)]) == 0
