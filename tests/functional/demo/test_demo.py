"""The README's demo command, on embedded defaults and on the real services."""

from __future__ import annotations

import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sqlalchemy as sa

HANDED_OFF = ("webhook period.closed received by the invoicing receiver, signature "
              "verified; its statements match the export")


def _run_demo(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simcloud.demo", "--workdir", str(tmp_path / "demo"),
         "--hours", "4", "--scale", "25", *extra],
        capture_output=True, text=True, timeout=600, check=False)


def test_demo_on_embedded_defaults(tmp_path: Path) -> None:
    result = _run_demo(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "transport fake:// (in-process)" in result.stdout
    assert "sqlite:///" in result.stdout
    assert "RESULT: Tally's projection equals the simulated cloud's truth" in result.stdout
    assert "the last sync booked 0 corrections" in result.stdout
    assert (tmp_path / "demo" / "tally.sqlite").exists()
    # The month's hand-off (the simulated month, November 2026, has ended).
    assert "credits and charges -5.00" in result.stdout
    assert "minimum commitment " in result.stdout and "(shortfall " in result.stdout
    assert "discount 10 % -" in result.stdout
    assert "(as computed by hand)" in result.stdout
    assert "with a closed statement name exported statements (yes)" in result.stdout
    assert HANDED_OFF in result.stdout, result.stdout
    exported = (tmp_path / "demo" / "statements-sim-2026-11.csv").read_text()
    assert exported.splitlines()[0].startswith("number,project_id,currency,record")


def test_demo_on_rabbitmq_and_postgresql(tmp_path: Path, rabbit_url: str, pg_database: str) -> None:
    result = _run_demo(tmp_path, "--transport-url", rabbit_url,
                       "--database-connection", pg_database,
                       "--cloud", f"demo-{uuid.uuid4().hex[:8]}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "transport rabbit://" in result.stdout
    assert "RESULT: Tally's projection equals the simulated cloud's truth" in result.stdout
    assert HANDED_OFF in result.stdout, result.stdout
    engine = sa.create_engine(pg_database)
    with engine.connect() as conn:
        assert conn.scalar(sa.text("SELECT count(*) FROM events")) > 0
        assert conn.scalar(sa.text(
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'")) == 1
    engine.dispose()


def test_two_demos_on_one_broker_keep_to_their_own_notifications(
        tmp_path: Path, rabbit_url: str, pg_database: str) -> None:
    """Two demos of the same seed at once on one RabbitMQ, their virtual clocks at
    different paces: each cloud publishes on exchanges of its own and its collector
    listens there, so neither Tally books the other's notifications (on the stock
    exchanges each collector took both clouds' and the lifecycles disagreed: seen
    with three suites on one machine)."""
    clouds = [f"demo-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(_run_demo, tmp_path / "pg", "--transport-url", rabbit_url,
                            "--database-connection", pg_database, "--cloud", clouds[0]),
                pool.submit(_run_demo, tmp_path / "sqlite", "--transport-url", rabbit_url,
                            "--cloud", clouds[1], "--sync-every-min", "20")]
        results = [run.result() for run in runs]
    for cloud, result in zip(clouds, results, strict=True):
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"exchanges tally-demo-{cloud}-{{nova,cinder," in result.stdout
        assert "RESULT: Tally's projection equals the simulated cloud's truth" in result.stdout


def test_demo_refuses_a_database_that_already_holds_the_cloud(tmp_path: Path) -> None:
    first = _run_demo(tmp_path, "--hours", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    kept = tmp_path / "kept.sqlite"
    # The database file and its write-ahead log (SQLite in WAL mode: what a run's
    # process wrote may not be checkpointed into the main file yet).
    for suffix in ("", "-wal"):
        source = tmp_path / "demo" / f"tally.sqlite{suffix}"
        if source.exists():
            Path(f"{kept}{suffix}").write_bytes(source.read_bytes())
    second = _run_demo(tmp_path, "--hours", "1", "--database-connection", f"sqlite:///{kept}")
    assert second.returncode != 0
    assert "already holds" in second.stdout + second.stderr


def test_a_resource_still_in_transition_at_the_end_is_shown_not_failed(tmp_path: Path) -> None:
    """Seed 7, scale 40, one hour: a volume is still creating when the run ends; its
    create notification was lost and a sync defers a resource in transition."""
    result = _run_demo(tmp_path, "--hours", "1", "--scale", "40", "--seed", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Not compared: 1 resources still in transition at the end" in result.stdout
    assert "tally=absent truth=live/" in result.stdout
    assert "; 1 in transition not compared)." in result.stdout
