"""One keystone for every xdist worker of a pytest run.

Starting keystone costs most of this tier's setup, so the workers of one run share a
server: under an exclusive ``fcntl.flock`` on a file in the run's shared directory
(``tmp_path_factory.getbasetemp().parent`` under xdist, the basetemp itself without
it), the first worker starts keystone, bootstraps the accounts (``bootstrap``) and
writes the server's port, gunicorn pid and what ``bootstrap`` returned to a JSON
state file; the others wait on the lock and read it. The state counts the workers
using the server: each adds one when it takes the server and removes one when its
session ends, and the worker that brings the count to zero stops it, so no worker
stops it while another still uses it. A worker that starts after the count reached
zero starts a new one (correct, only slower). A failure to install or start keystone
fails every worker's tests: the state is written only once the server is up.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.functional.keystone.server import KeystoneServer, keystone_venv

STATE = "keystone-shared.json"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def shared_keystone(
    root: Path, bootstrap: Callable[[KeystoneServer], dict[str, Any]]
) -> Iterator[tuple[KeystoneServer, dict[str, Any]]]:
    """The run's keystone and its bootstrap data; stopped when its last user is done."""
    state_file = root / STATE
    lock = root / "keystone-shared.lock"
    workdir = root / "keystone-shared"
    with _locked(lock):
        if state_file.exists():
            state = json.loads(state_file.read_text())
            state["users"] += 1
        else:
            if workdir.exists():  # left by a server whose users all finished
                workdir = root / f"keystone-shared-{len(list(root.glob('keystone-shared*')))}"
            workdir.mkdir()
            started = KeystoneServer(keystone_venv(), workdir)
            started.setup()
            started.start()
            try:
                data = bootstrap(started)
            except BaseException:
                started.stop()
                raise
            state = {"port": started.port, "pid": started.pid, "workdir": str(workdir),
                     "users": 1, "data": data}
        state_file.write_text(json.dumps(state))
    server = KeystoneServer(keystone_venv(), Path(state["workdir"]), port=state["port"],
                            pid=state["pid"])
    try:
        yield server, state["data"]
    finally:
        with _locked(lock):
            state = json.loads(state_file.read_text())
            state["users"] -= 1
            if state["users"] == 0:
                server.stop()
                state_file.unlink()
            else:
                state_file.write_text(json.dumps(state))
