"""A real keystone (30.x from PyPI) for the tests of this directory.

``keystone_venv`` installs ``keystone>=30,<31`` and gunicorn into a virtualenv of its
own, outside the checkout, keyed by keystone's requirement and Python's version
(``$TALLY_KEYSTONE_CACHE``, default ``/tmp/tally-keystone-cache``): the first run on a
machine installs it (a few minutes), later runs reuse it.  ``KeystoneServer`` then
serves it on a free loopback port with SQLite, fernet keys and a short token
expiration, after ``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup``
and ``bootstrap``.  Failing to install or start keystone fails the test; nothing here
skips.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from tests.service_venv import CONSTRAINTS, build_steps

REQUIREMENT = "keystone>=30,<31"
ADMIN_PASSWORD = "admin-secret"
# keystoneauth renews a token with less than 120 s left: a 60 s token is renewed at
# every use, and any run longer than a minute outlives several of them.
TOKEN_EXPIRATION_S = 60


def _cache_dir() -> Path:
    return Path(os.environ.get("TALLY_KEYSTONE_CACHE", "/tmp/tally-keystone-cache"))


def keystone_venv() -> Path:
    """The virtualenv holding keystone and gunicorn, installed once per machine."""
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    venv = _cache_dir() / f"keystone-30-{python}"
    ready = venv / ".installed"
    _cache_dir().mkdir(parents=True, exist_ok=True)
    with open(_cache_dir() / f"keystone-30-{python}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two xdist workers: one installs, one waits
        # What it was built from: another requirement or constraint builds it anew.
        built_from = f"{REQUIREMENT}\n{CONSTRAINTS.read_text()}"
        if ready.exists() and ready.read_text() == built_from:
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        for argv in build_steps(venv, REQUIREMENT, "gunicorn"):
            result = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
            if result.returncode != 0:
                raise RuntimeError(f"installing {REQUIREMENT!r} and gunicorn failed "
                                   f"({' '.join(argv[1:3])}):\n"
                                   f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        ready.write_text(built_from)
    return venv


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class KeystoneServer:
    """keystone under gunicorn on ``127.0.0.1:port``, its state in ``workdir``."""

    def __init__(self, venv: Path, workdir: Path, port: int | None = None,
                 pid: int | None = None) -> None:
        """A new server (``port`` None: a free one), or one another process started
        (``port`` and its gunicorn ``pid``: see tests/functional/keystone/shared.py)."""
        self.venv = venv
        self.workdir = workdir
        self.port = free_port() if port is None else port
        self._pid = pid
        self.url = f"http://127.0.0.1:{self.port}"
        self.auth_url = f"{self.url}/v3"
        self.config = workdir / "keystone.conf"
        self.log = workdir / "keystone.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def _env(self) -> dict[str, str]:
        return {"PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "HOME": str(self.workdir),
                "OS_KEYSTONE_CONFIG_FILES": str(self.config)}

    def _manage(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.venv / "bin" / "keystone-manage"), "--config-file", str(self.config),
             *args], capture_output=True, text=True, env=self._env(), timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"keystone-manage {' '.join(args)} failed:\n"
                               f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")

    def setup(self) -> None:
        keys = self.workdir / "fernet-keys"
        credential_keys = self.workdir / "credential-keys"
        for directory in (keys, credential_keys):
            directory.mkdir(mode=0o700)
        self.config.write_text(
            "[DEFAULT]\n"
            f"log_file = {self.log}\n"
            "[database]\n"
            # SQLite takes one writer at a time: a write waits for the lock (timeout)
            # rather than failing at once with "database is locked".
            f"connection = sqlite:///{self.workdir / 'keystone.sqlite'}?timeout=60\n"
            "[identity]\n"
            # bcrypt at its least cost (2^4 rounds, keystone's default 2^12): a 60 s
            # token is renewed at every use, each renewal a password check, and those
            # checks were most of the CPU of every keystone of a run; what a hash costs
            # is not what these tests test.
            "password_hash_rounds = 4\n"
            "[token]\n"
            "provider = fernet\n"
            f"expiration = {TOKEN_EXPIRATION_S}\n"
            "[fernet_tokens]\n"
            f"key_repository = {keys}\n"
            "[fernet_receipts]\n"
            f"key_repository = {keys}\n"
            "[credential]\n"
            f"key_repository = {credential_keys}\n"
            "[cache]\n"
            "enabled = false\n")
        user = ["--keystone-user", "root", "--keystone-group", "root"] \
            if os.geteuid() == 0 else []
        self._manage("db_sync")
        self._manage("fernet_setup", *user)
        self._manage("credential_setup", *user)
        self._manage("bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                     "--bootstrap-public-url", self.auth_url,
                     "--bootstrap-region-id", "RegionOne")

    def start(self) -> None:
        # keystone's configuration parses sys.argv (gunicorn's): empty it first.
        (self.workdir / "keystone_app.py").write_text(
            "import sys\nsys.argv = sys.argv[:1]\n"
            "from keystone.wsgi.api import application  # noqa: E402,F401\n")
        # One thread: keystone on SQLite fails concurrent token writes ("database is
        # locked", a 500 to every xdist worker sharing it) where a queue only waits.
        with (self.workdir / "gunicorn.log").open("ab") as sink:
            self._process = subprocess.Popen(
                [str(self.venv / "bin" / "gunicorn"), "--bind", f"127.0.0.1:{self.port}",
                 "--workers", "1", "--threads", "1", "--timeout", "120",
                 "--chdir", str(self.workdir), "keystone_app:application"],
                stdout=sink, stderr=subprocess.STDOUT, env=self._env(), cwd=self.workdir)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                if requests.get(self.auth_url, timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("keystone did not start:\n" + self.logs())

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else self._pid

    def stop(self) -> None:
        process, self._process = self._process, None
        pid, self._pid = self._pid, None
        if process is None and pid is not None:
            _terminate(pid)  # started by another process: not ours to wait for
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def restart(self) -> None:
        self.stop()
        self.restarts += 1
        self.start()

    def logs(self) -> str:
        text = ""
        for path in (self.workdir / "gunicorn.log", self.log):
            if path.exists():
                text += path.read_text(errors="replace")[-4000:]
        return text


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie its parent has not reaped counts)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _terminate(pid: int) -> None:
    """SIGTERM another process's gunicorn and wait for it to exit (SIGKILL after 30 s)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while not _gone(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
        time.sleep(0.1)


@contextmanager
def running_keystone(workdir: Path) -> Iterator[KeystoneServer]:
    server = KeystoneServer(keystone_venv(), workdir)
    server.setup()
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Admin:
    """Keystone's API as the bootstrap admin (project admin), for the tests' setup."""

    def __init__(self, keystone: KeystoneServer) -> None:
        self.keystone = keystone
        self._token = token(keystone, "admin", ADMIN_PASSWORD, project="admin")

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             expect: int = 201) -> dict[str, Any]:
        response = requests.request(method, f"{self.keystone.auth_url}{path}", json=body,
                                    headers={"X-Auth-Token": self._token}, timeout=60)
        if response.status_code == 401:
            # The admin's token outlived TOKEN_EXPIRATION_S (a slow bootstrap on a
            # loaded machine): log in again and retry once.
            self._token = token(self.keystone, "admin", ADMIN_PASSWORD, project="admin")
            response = requests.request(method, f"{self.keystone.auth_url}{path}", json=body,
                                        headers={"X-Auth-Token": self._token}, timeout=60)
        assert response.status_code == expect, (method, path, response.text)
        return response.json() if response.content else {}

    def role(self, name: str) -> str:
        return str(self.call("POST", "/roles", {"role": {"name": name}})["role"]["id"])

    def project(self, name: str) -> str:
        return str(self.call("POST", "/projects", {"project": {
            "name": name, "domain_id": "default"}})["project"]["id"])

    def user(self, name: str, password: str, project: str, *roles: str,
             system_roles: tuple[str, ...] = (), default_project: bool = True) -> str:
        """A user with ``roles`` on ``project`` and ``system_roles`` on the system;
        ``project`` is its default project unless ``default_project`` is False (a
        login asking no scope then gets an unscoped token)."""
        user: dict[str, Any] = {"name": name, "password": password, "domain_id": "default"}
        if default_project:
            user["default_project_id"] = project
        user_id = str(self.call("POST", "/users", {"user": user})["user"]["id"])
        for role in roles:
            self.call("PUT", f"/projects/{project}/users/{user_id}/roles/{role}", expect=204)
        for role in system_roles:
            self.call("PUT", f"/system/users/{user_id}/roles/{role}", expect=204)
        return user_id

    def service_endpoint(self, service: str, url: str, region: str) -> None:
        """The public and internal endpoints of ``service`` (an id) in ``region``."""
        for interface in ("public", "internal"):
            self.call("POST", "/endpoints", {"endpoint": {
                "service_id": service, "interface": interface, "url": url,
                "region_id": region}})


def token(keystone: KeystoneServer, user: str, password: str, *,
          project: str | None = None, system: bool = False) -> str:
    """A token of ``user``, scoped to ``project`` (a name, domain Default) if given, or
    to the system (``system``: what Tally's cloud-wide roles need)."""
    body: dict[str, Any] = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": user, "domain": {"id": "default"}, "password": password}}}}}
    if project:
        body["auth"]["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    elif system:
        body["auth"]["scope"] = {"system": {"all": True}}
    response = requests.post(f"{keystone.auth_url}/auth/tokens", json=body, timeout=60)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]
