"""A cloud that is collected but not reconciled: a clouds-file entry without
``os_cloud`` accepts its events, is skipped by tally-sync (what the CronJob runs)
without an error, records no run and moves no metric TallySyncErrors reads."""

from __future__ import annotations

import datetime as dt
import textwrap
import threading
from pathlib import Path

import sqlalchemy as sa
import yaml
from prometheus_client import REGISTRY
from werkzeug.serving import make_server

from mapping.event import format_timestamp
from reporting.cmd import sync as sync_cmd
from reporting.db.models import CurrentResource, SyncRun
from simcloud.server import SimCloudServer
from tests.functional.sync.conftest import ADMIN, START, collector_create, running_syncer

ONLY = "notifications-only"
T1 = START + dt.timedelta(hours=6)


def _clouds(tmp_path: Path) -> Path:
    path = tmp_path / "tally-clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": [
        {"name": "sim", "platform": "openstack", "adapter": "openstack",
         "adapter_config": {"os_cloud": "sim-admin"}},
        {"name": ONLY, "platform": "openstack", "adapter": "openstack"},
    ]}))
    return path


def _sync_runs_metric(cloud: str) -> float:
    return sum(REGISTRY.get_sample_value("tally_sync_runs_total",
                                         {"cloud": cloud, "status": status}) or 0.0
               for status in ("completed", "failed"))


def test_a_cloud_without_os_cloud_is_collected_and_never_synced(
        world: SimCloudServer, migrated_db: str, tmp_path: Path, capsys) -> None:
    with running_syncer(world, migrated_db, tmp_path, _clouds(tmp_path)) as syncer:
        event = {**collector_create("volume", "vol-only", START), "cloud": ONLY}
        syncer.ingest(event)  # accepted: the clouds file names the cloud
        with syncer.factory() as session:
            assert session.get(CurrentResource, ("openstack", ONLY, "volume", "vol-only"))

        response = syncer.sync(T1, cloud=ONLY)
        assert response.status_code == 409, response.get_json()
        assert response.get_json()["error"]["code"] == "not_reconciled"

        server = make_server("127.0.0.1", 0, syncer.app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            token = tmp_path / "admin.token"
            token.write_text(ADMIN["Authorization"].split()[1] + "\n")
            conf = syncer.app.config["TALLY_CONF"]
            config = tmp_path / "tally.conf"
            config.write_text(textwrap.dedent(f"""\
                [database]
                connection = {conf.database.connection}
                [api]
                tokens_file = {conf.api.tokens_file}
                [sync]
                clouds_file = {conf.sync.clouds_file}
                api_url = http://127.0.0.1:{server.server_address[1]}
                token_file = {token}
                """))
            syncer.advance(T1)
            # Every cloud of the clouds file, as the CronJob runs it, and named alone.
            assert sync_cmd.main(["--config-file", str(config),
                                  "--at", format_timestamp(T1)]) == 0
            lines = capsys.readouterr().out.splitlines()[1:]
            assert lines[0] == (f"{ONLY}: skipped: collected but not reconciled (its "
                                "clouds-file entry names no os_cloud)"), lines
            assert lines[1].startswith("sim: run ") and " completed: " in lines[1], lines
            assert sync_cmd.main(["--config-file", str(config), ONLY,
                                  "--at", format_timestamp(T1)]) == 0
        finally:
            server.shutdown()
            thread.join(10)
        with syncer.factory() as session:
            clouds = set(session.execute(sa.select(SyncRun.cloud)).scalars())
            row = session.get(CurrentResource, ("openstack", ONLY, "volume", "vol-only"))
        assert clouds == {"sim"}
        assert row is not None and row.live  # never absence-deleted
        assert _sync_runs_metric(ONLY) == 0.0  # TallySyncErrors has no series to fire on
