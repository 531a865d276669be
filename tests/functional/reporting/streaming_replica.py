"""A private PostgreSQL primary and its hot standby, streaming, for the replica tests.

The machine's PostgreSQL server has no replication grants, so each test module that
needs a replica builds its own pair from the installed server's binaries
(``pg_config --bindir``): ``initdb`` a primary on a free loopback port, take a base
backup with ``-R`` (a standby that streams from it) and start that on another port.
PostgreSQL refuses to run as root: as root, every command runs as the ``postgres``
user.  Missing binaries are a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa


def _bindir() -> Path:
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        raise AssertionError("pg_config not found: the replica tests need PostgreSQL's "
                             "server binaries (Debian: postgresql)")
    return Path(subprocess.run([pg_config, "--bindir"], check=True, capture_output=True,
                               text=True).stdout.strip())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StreamingPair:
    """``primary_url`` and ``replica_url`` (the ``postgres`` database of each)."""

    def __init__(self) -> None:
        self.bindir = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="tally-replica-"))
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, user="postgres")
        self.ports = {"primary": _free_port(), "standby": _free_port()}
        self.primary_url = self._url("primary")
        self.replica_url = self._url("standby")

    def _url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.ports[name]}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise AssertionError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}")

    def _start(self, name: str) -> None:
        options = (f"-p {self.ports[name]} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off")
        self._run("pg_ctl", "-D", str(self.root / name), "-o", options,
                  "-l", str(self.root / f"{name}.log"), "-w", "start")

    def start(self) -> StreamingPair:
        primary = self.root / "primary"
        self._run("initdb", "-D", str(primary), "-A", "trust", "-U", "postgres")
        with (primary / "pg_hba.conf").open("a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        self._start("primary")
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.ports["primary"]),
                  "-U", "postgres", "-D", str(self.root / "standby"), "-R")
        self._start("standby")
        return self

    def stop_standby(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "standby"), "-m", "immediate", "stop")

    def start_standby(self) -> None:
        self._start("standby")

    def stop(self) -> None:
        for name in ("standby", "primary"):
            command = [str(self.bindir / "pg_ctl"), "-D", str(self.root / name),
                       "-m", "immediate", "stop"]
            if self._as_postgres:
                command = ["runuser", "-u", "postgres", "--", *command]
            subprocess.run(command, capture_output=True)  # already stopped is fine
        shutil.rmtree(self.root, ignore_errors=True)

    def execute_on_standby(self, statement: str) -> object:
        engine = sa.create_engine(self.replica_url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text(statement)).scalar()
        finally:
            engine.dispose()

    def wait_replayed(self, timeout_s: float = 120.0) -> None:
        """Until the standby has replayed everything the primary has written so far
        (a condition, polled; the timeout only bounds a broken pair)."""
        primary = sa.create_engine(self.primary_url, poolclass=sa.pool.NullPool)
        try:
            with primary.connect() as conn:
                target = str(conn.execute(sa.text("SELECT pg_current_wal_lsn()")).scalar())
        finally:
            primary.dispose()
        deadline = time.monotonic() + timeout_s
        while True:
            replayed = self.execute_on_standby(
                f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn")
            if replayed:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the standby never replayed up to {target}")
            time.sleep(0.05)
