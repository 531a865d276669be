"""A sync run works in a process of its own (reporting.sync.run_process): the serving
process is untouched by it, a process that answered does the next run too, and an
overrun process is killed, the run failed and its lease released."""

from __future__ import annotations

import datetime as dt
import gc
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from reporting.db.models import SyncLock
from reporting.db.session import ENGINE_KEY
from reporting.sync.api import SERVICE_KEY
from reporting.sync.child_job import Job, snapshot
from reporting.sync.clouds import CloudEntry
from reporting.sync.run_process import CHILD_MODULE, KILL_GRACE_S, start_child
from tests.functional.sync.conftest import START, Syncer
from tests.functional.sync.test_failures import failed_run, other_syncer

T1 = START + dt.timedelta(hours=6)


def run_processes() -> list[int]:
    """Pids of this process's children running a sync run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if ppid == os.getpid() and CHILD_MODULE.encode() in command:
            found.append(int(entry.name))
    return found


def test_a_run_changes_nothing_in_the_serving_process(syncer: Syncer) -> None:
    syncer.advance(T1)
    syncer.world.world.faults.set("compute", delay_s=0.3)  # a run long enough to watch
    seen: dict[str, set] = {"gc": set(), "children": set()}
    before = set(run_processes())  # idle ones of earlier tests' apps
    threads_before = {t.ident for t in threading.enumerate()}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen["gc"].add(gc.isenabled())
            seen["children"].update(set(run_processes()) - before)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        summary = syncer.sync_ok(T1)
    finally:
        done.set()
        watcher.join()
    assert summary["stats"]["created"] > 0
    assert seen["gc"] == {True}  # the collector stayed on here throughout
    assert len(seen["children"]) == 1  # the run was done by a process of its own
    new_threads = {t.ident for t in threading.enumerate()} - threads_before
    assert new_threads == set()
    # The process stays for the next run, which it does too.
    processes = syncer.app.extensions[SERVICE_KEY].processes
    kept = processes.idle_pids()
    assert len(kept) == 1 and kept[0] in seen["children"] and kept[0] != os.getpid()
    syncer.world.world.faults.set("compute")
    syncer.sync_ok(T1 + dt.timedelta(minutes=10))
    assert processes.idle_pids() == kept
    # Let go (as when the app goes), it ends.
    processes.close()
    deadline = time.monotonic() + 120  # only a guard against a hang
    while kept[0] in run_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kept[0] not in run_processes()


def change_entry(clouds_yaml: Path, entry: str) -> None:
    """Change the clouds.yaml entry ``entry`` (a key no client reads)."""
    document = yaml.safe_load(clouds_yaml.read_text())
    document["clouds"][entry]["tally_test_revision"] = uuid.uuid4().hex
    clouds_yaml.write_text(yaml.safe_dump(document))


def issued_tokens(syncer: Syncer, monkeypatch: pytest.MonkeyPatch) -> list:
    """The tokens the simulated keystone issues from now on (appended as issued)."""
    identity = syncer.world.identity
    issued: list = []
    authenticate = identity.authenticate

    def recording(body):
        token = authenticate(body)
        issued.append(token)
        return token

    monkeypatch.setattr(identity, "authenticate", recording)
    return issued


def test_an_overrun_process_is_killed_the_run_failed_and_the_lease_released(
        syncer: Syncer, tmp_path: Path) -> None:
    # keystoneauth blocks on its own plugin lock when the identity endpoint answers
    # its version document 401: the run's process never returns by itself.  A first
    # run warms the process in a budget a cold process fits however loaded the machine
    # is (it imports before it lists; a run that overruns is killed, so a tight budget
    # would never leave a warm one), and only then does the budget shrink to 5 s, so
    # the stuck run sends its first request at once; the clouds.yaml entry then
    # changes, so the stuck run cannot reuse the warm run's session
    # (reporting.openstack.kept_session) and authenticates afresh.
    short = other_syncer(syncer, tmp_path, {"os_cloud": "sim-admin"}, budget_s=300)
    try:
        syncer.advance(T1)
        syncer.sync_ok(T1)  # the cloud's first booking
        short.sync_ok(T1)
        short.app.config["TALLY_CONF"].set_override("budget_s", 5, group="sync")
        warm = short.app.extensions[SERVICE_KEY].processes.idle_pids()
        assert len(warm) == 1
        syncer.world.world.faults.set("identity", status=401)
        change_entry(Path(os.environ["OS_CLIENT_CONFIG_FILE"]), "sim-admin")
        before = set(run_processes()) - set(warm)
        run = failed_run(short, short.sync(T1 + dt.timedelta(minutes=10)))
        # Stopped by the serving process when its answer did not come by the deadline
        # plus KILL_GRACE_S (run_process.RunProcesses.run), not by the child's alarm.
        assert run.stats["errors"] == [
            "the run did not fit its budget of 5 s: its process was stopped"]
        assert warm[0] not in run_processes()
        assert set(run_processes()) <= before and short.app.extensions[
            SERVICE_KEY].processes.idle_pids() == []  # killed, not kept
        with short.factory() as session:
            assert session.execute(sa.select(SyncLock)).scalars().all() == []
        syncer.world.world.faults.set("identity")
        # Nothing left holding the cloud (the same database, the default budget: a cold
        # run process on a loaded machine may not start within the 5 s of ``short``).
        assert syncer.sync_ok(T1 + dt.timedelta(minutes=20))["status"] == "completed"
    finally:
        short.app.extensions[ENGINE_KEY].dispose()


def test_a_run_process_ends_by_itself_when_nobody_kills_it(syncer: Syncer) -> None:
    # Started as the service starts it, but never killed: the stuck run (identity
    # 401, as above) ends by the process's own alarm, 2 x KILL_GRACE_S past its deadline.
    syncer.advance(T1)
    conf = syncer.app.config["TALLY_CONF"]
    entry = CloudEntry("sim", "openstack", "openstack", {"os_cloud": "sim-admin"})
    child = start_child()
    assert child.stdin is not None and child.stdout is not None
    try:
        # A first run warms the process (its imports done), so the stuck run sends its
        # first request at once, however loaded the machine is; the entry then changes,
        # so the stuck run authenticates afresh rather than with the warm run's session.
        warm = Job(snapshot(conf), entry, "warm", T1.replace(tzinfo=None),
                   time.monotonic() + 120)
        child.stdin.write(warm.to_json() + b"\n")
        child.stdin.flush()
        assert child.stdout.readline()  # its answer
        syncer.world.world.faults.set("identity", status=401)
        change_entry(Path(os.environ["OS_CLIENT_CONFIG_FILE"]), "sim-admin")
        left = 5.0
        started = time.monotonic()
        job = Job(snapshot(conf), entry, "alone", T1.replace(tzinfo=None), started + left)
        out, _ = child.communicate(job.to_json() + b"\n", timeout=120)
    finally:
        child.kill()
        child.wait()
    took = time.monotonic() - started
    # Ended by its alarm (SIGALRM), not before the deadline and its grace were spent.
    assert (child.returncode, out) == (-signal.SIGALRM, b"")
    assert took >= left + 2 * KILL_GRACE_S, took


def test_the_run_process_keeps_its_token_between_runs_and_replaces_a_revoked_one(
        syncer: Syncer, monkeypatch: pytest.MonkeyPatch) -> None:
    issued = issued_tokens(syncer, monkeypatch)
    at = T1
    for _ in range(3):
        syncer.advance(at)
        syncer.sync_ok(at)
        at += dt.timedelta(minutes=10)
    assert len(issued) == 1  # one token for the three runs of one run process
    assert syncer.world.identity.revoke(issued[0].value)
    syncer.advance(at)
    summary = syncer.sync_ok(at)  # nova's 401 on the kept token: a new one, same run
    assert summary["status"] == "completed" and summary["stats"]["errors"] == []
    assert len(issued) == 2
