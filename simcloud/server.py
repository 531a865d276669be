"""Run the simulated cloud: in a background thread (tests, demo) or in the foreground.

>>> with running_simcloud(WorldConfig(seed=7, scale=50)) as sim:
...     sim.write_clouds_yaml(path)
...     sim.world.advance_to("2026-11-02T00:00:00Z")
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from simcloud import clouds_yaml
from simcloud.api import create_app
from simcloud.api.keystone import TALLY_URL_KEY
from simcloud.config import WorldConfig
from simcloud.identity import (
    ADMIN_ROLE,
    MEMBER_ROLE,
    READ_ONLY_RULES,
    SERVICE_ROLE,
    AppCredential,
    Identity,
    User,
)
from simcloud.listening import listen
from simcloud.world import World

LOG = logging.getLogger(__name__)


SERVICE_PROJECT = "service"
TALLY_SERVICE_USER = "tally"


def build_identity(world: World) -> tuple[Identity, AppCredential]:
    """Keystone's accounts: admin (admin project), demo (member of the first project),
    tally (the Reporting API's service user: role service in project service, what
    keystonemiddleware's ``[keystone_authtoken]`` logs in with), and a read-only
    application credential of admin with the access rules docs/reconciliation.md lists."""
    config = world.config
    ns = uuid.UUID(int=config.seed % (1 << 128), version=4)
    admin_project = world.admin_project
    member_project = world.projects[0]
    ident = Identity()
    ident.add_user(User(uuid.uuid5(ns, "admin").hex, "admin", config.admin_password,
                        admin_project.id, admin_project.name, (ADMIN_ROLE, MEMBER_ROLE, "reader")))
    ident.add_user(User(uuid.uuid5(ns, "demo").hex, "demo", config.member_password,
                        member_project.id, member_project.name, (MEMBER_ROLE, "reader")))
    ident.add_user(User(uuid.uuid5(ns, TALLY_SERVICE_USER).hex, TALLY_SERVICE_USER,
                        config.service_password, uuid.uuid5(ns, SERVICE_PROJECT).hex,
                        SERVICE_PROJECT, (SERVICE_ROLE,)))
    reader = ident.add_application_credential("admin", "tally-reader",
                                              access_rules=list(READ_ONLY_RULES))
    return ident, reader


class _QuietHandler(WSGIRequestHandler):
    """Werkzeug logs every request at INFO to stderr; a benchmark makes thousands."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        LOG.debug("%s %s", self.requestline, code)


class SimCloudServer:
    """The simulated cloud's HTTP APIs on a loopback port, served from a thread."""

    def __init__(self, config: WorldConfig, *, world: World | None = None,
                 host: str = "127.0.0.1", port: int = 0, tally_url: str | None = None,
                 sock: socket.socket | None = None) -> None:
        self.config = config
        self.world = world if world is not None else World(config)
        self.identity, self.reader_credential = build_identity(self.world)
        self.app = create_app(self.world, self.identity)
        self.tally_url = tally_url
        self._host = host
        self._port = port
        self._sock = sock  # already listening on host:port (tally-simcloud serve)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def tally_url(self) -> str | None:
        """The Reporting API's URL in the catalog (service type usage-history), if any."""
        url: str | None = self.app.config.get(TALLY_URL_KEY)
        return url

    @tally_url.setter
    def tally_url(self, url: str | None) -> None:
        # Settable while serving: a test starts keystone first, then the API it names.
        self.app.config[TALLY_URL_KEY] = url

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the simulated cloud is not running; call start() first")
        return f"http://{self._host}:{self._server.server_address[1]}"

    def bind(self) -> str:
        """Open the listening socket (without serving yet); returns the base URL."""
        if self._server is None:
            # A socket of our own: werkzeug, binding itself, prints its own lines and
            # exits on an address in use; this raises OSError instead.
            sock = self._sock or listen(self._host, self._port)
            self._sock = None
            try:
                self._server = make_server(self._host, sock.getsockname()[1], self.app,
                                           threaded=True, request_handler=_QuietHandler,
                                           fd=sock.fileno())
            finally:
                sock.close()  # werkzeug holds a duplicate
        return self.base_url

    def start(self) -> str:
        """Listen and serve in a daemon thread; returns the base URL."""
        if self._thread is not None:
            return self.base_url
        self.bind()
        assert self._server is not None
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="simcloud-http", daemon=True)
        self._thread.start()
        LOG.info("simulated cloud listening on %s", self.base_url)
        return self.base_url

    def serve_forever(self) -> None:
        """Serve in the calling thread (the command line)."""
        self.bind()
        assert self._server is not None
        LOG.info("simulated cloud listening on %s", self.base_url)
        try:
            self._server.serve_forever()
        finally:
            self.world.close()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None
        self.world.close()

    def write_clouds_yaml(self, path: str | Path) -> Path:
        """Write ``sim-admin``, ``sim-member``, ``sim-admin-readonly`` and ``sim-tally-service``
        to ``path``."""
        return clouds_yaml.write(Path(path), self.base_url, self.identity,
                                 self.reader_credential)

    def __enter__(self) -> SimCloudServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_simcloud(config: WorldConfig, *, world: World | None = None
                     ) -> Iterator[SimCloudServer]:
    """A started :class:`SimCloudServer`, stopped on exit."""
    server = SimCloudServer(config, world=world)
    server.start()
    try:
        yield server
    finally:
        server.stop()
