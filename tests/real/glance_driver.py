"""Real glance-api, in one process, driven over stdin/stdout JSON lines.

Run by the python of the tier's glance virtualenv, never imported by Tally's:
``python glance_driver.py --workdir D --transport-url rabbit://...
--identity-url http://127.0.0.1:P/identity --exchange E``.

glance's own WSGI application (``glance.common.wsgi_app.init_app``, what uWSGI runs)
with the file store and SQLite under the work directory, served by a loopback WSGI
server so another process reaches it over real HTTP.  Its notifications go through
glance's own notifier (a real ``oslo_messaging.Notifier``, driver messagingv2, topic
notifications) onto RabbitMQ on the given exchange; those of a muted image (by name
or id) are recorded but not sent.

Authentication: glance's paste pipeline with keystonemiddleware's place taken by
``TokenGate``, which validates each X-Auth-Token against the identity service
(``GET /v3/auth/tokens``, what keystonemiddleware asks) and sets the headers
keystonemiddleware sets (X-Identity-Status, X-User-Id, X-Project-Id, X-Roles);
glance's own ``ContextMiddleware`` builds the request context from them and answers
a request without a confirmed identity 401 itself.

Protocol: one JSON object a line in, one a line out (``{"ok": ...}`` or
``{"error": "..."}``).  The first line out is ``{"ready": {"image_url": ...}}``.
"""

from __future__ import annotations

import argparse
import concurrent.futures.thread  # noqa: F401 - loaded before glance's atexit hook needs it
import json
import os
import sqlite3
import sys
import threading
import traceback
from pathlib import Path
from wsgiref import simple_server

# The protocol's channel: fd 1 as it was at start; everything else writes to stderr.
CHANNEL = os.fdopen(os.dup(1), "w", buffering=1)
sys.stdout = sys.stderr

PASTE = """\
[composite:glance-api]
paste.composite_factory = glance.api:root_app_factory
/: api

[pipeline:api]
pipeline = http_proxy_to_wsgi versionnegotiation context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware:HTTPProxyToWSGI.factory
"""

# What keystonemiddleware sets; a client's own copies are dropped first.
IDENTITY_HEADERS = ("HTTP_X_IDENTITY_STATUS", "HTTP_X_USER_ID", "HTTP_X_USER_NAME",
                    "HTTP_X_PROJECT_ID", "HTTP_X_PROJECT_NAME", "HTTP_X_ROLES",
                    "HTTP_X_TENANT_ID", "HTTP_X_SERVICE_CATALOG", "HTTP_X_DOMAIN_ID")


class TokenGate:
    """keystonemiddleware's part, delay_auth_decision style: glance decides."""

    def __init__(self, app, identity_url: str) -> None:
        self.app = app
        self.identity_url = identity_url.rstrip("/")

    def __call__(self, environ, start_response):
        import requests

        for name in IDENTITY_HEADERS:
            environ.pop(name, None)
        token = environ.get("HTTP_X_AUTH_TOKEN")
        environ["HTTP_X_IDENTITY_STATUS"] = "Invalid"
        if token:
            answer = requests.get(f"{self.identity_url}/v3/auth/tokens?nocatalog",
                                  headers={"X-Auth-Token": token, "X-Subject-Token": token},
                                  timeout=30)
            if answer.status_code == 200:
                body = answer.json()["token"]
                environ["HTTP_X_IDENTITY_STATUS"] = "Confirmed"
                environ["HTTP_X_USER_ID"] = body["user"]["id"]
                environ["HTTP_X_PROJECT_ID"] = body["project"]["id"]
                environ["HTTP_X_ROLES"] = ",".join(r["name"] for r in body["roles"])
        return self.app(environ, start_response)


class Recorder:
    """Every notification glance's notifier is handed; a muted image's not sent."""

    def __init__(self) -> None:
        self.muted: set[str] = set()
        self.records: list[dict] = []
        self.lock = threading.Lock()

    def install(self) -> None:
        from glance import notifier
        from oslo_serialization import jsonutils

        recorder = self

        def sender(priority: str):
            def send(self, event_type, payload):
                primitive = jsonutils.to_primitive(payload, convert_instances=True)
                keys = {str(primitive.get("id")), str(primitive.get("name"))} \
                    if isinstance(primitive, dict) else set()
                with recorder.lock:
                    sent = not (keys & recorder.muted)
                    if not sent and isinstance(primitive, dict) and primitive.get("id"):
                        recorder.muted.add(str(primitive["id"]))
                    recorder.records.append({"event_type": event_type,
                                             "priority": priority, "sent": sent,
                                             "payload": primitive})
                if sent:
                    getattr(self._notifier, priority)({}, event_type, payload)
            return send

        for priority in ("info", "warn", "error"):
            setattr(notifier.Notifier, priority, sender(priority))


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("glance-api: " + (format % args) + "\n")


class _ThreadingServer(simple_server.WSGIServer):
    daemon_threads = True

    def process_request(self, request, client_address):
        threading.Thread(target=self._serve_one, args=(request, client_address),
                         daemon=True).start()

    def _serve_one(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a broken client must not stop the server
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


def write_config(workdir: Path, transport_url: str, exchange: str) -> None:
    store = workdir / "images"
    staging = workdir / "staging"
    for path in (store, staging):
        path.mkdir(parents=True, exist_ok=True)
    (workdir / "glance-api-paste.ini").write_text(PASTE)
    (workdir / "glance-api.conf").write_text("\n".join([
        "[DEFAULT]",
        f"transport_url = {transport_url}",
        # glance's is "glance"; the suite gives each run its own on the shared RabbitMQ.
        f"control_exchange = {exchange}",
        "enabled_import_methods = [glance-direct]",
        f"node_staging_uri = file://{staging}",
        "[database]",
        f"connection = sqlite:///{workdir / 'glance.sqlite'}",
        "[paste_deploy]",
        f"config_file = {workdir / 'glance-api-paste.ini'}",
        "[glance_store]",
        "stores = file",
        "default_store = file",
        f"filesystem_store_datadir = {store}",
        "[oslo_messaging_notifications]",
        "driver = messagingv2",
        "topics = notifications",
        "",
    ]))


def db_sync(workdir: Path) -> None:
    import subprocess

    manage = Path(sys.executable).parent / "glance-manage"
    subprocess.run([str(manage), "--config-file", str(workdir / "glance-api.conf"),
                    "db_sync"], check=True, stdout=sys.stderr, stderr=sys.stderr,
                   timeout=300)


def records(workdir: Path) -> list[dict]:
    """glance's own image rows, deleted ones included."""
    with sqlite3.connect(workdir / "glance.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT id, name, owner, size, status, visibility, os_hidden, "
                          "created_at, updated_at, deleted_at, deleted FROM images")
        return [dict(row) for row in rows]


def populate(workdir: Path, count: int, projects: int) -> list[str]:
    """``count`` active private images, each with a file location, spread over
    ``projects`` owners, written into glance's database through its own DB API
    (``image_create``), not ``count`` creates and uploads: what a listing reads.
    Their ids."""
    if count < 1 or projects < 1:
        raise ValueError(f"populate needs count >= 1 and projects >= 1, "
                         f"not {count} and {projects}")
    import hashlib
    import uuid

    from glance import context
    from glance.db import get_api

    db = get_api()
    ctxt = context.get_admin_context()
    created = []
    for index in range(count):
        image = str(uuid.uuid4())
        data = image.encode()
        db.image_create(ctxt, {
            "id": image, "name": f"paged-{index}", "owner": f"{index % projects:032x}",
            "status": "active", "visibility": "private", "protected": False,
            "os_hidden": False, "disk_format": "raw", "container_format": "bare",
            "size": len(data), "virtual_size": len(data), "min_disk": 0, "min_ram": 0,
            "checksum": hashlib.md5(data, usedforsecurity=False).hexdigest(),
            "os_hash_algo": "sha512", "os_hash_value": hashlib.sha512(data).hexdigest(),
            "properties": {},
            "locations": [{"url": f"file://{workdir / 'images' / image}",
                           "metadata": {}, "status": "active"}],
        })
        created.append(image)
    return created


def reply(obj) -> None:
    CHANNEL.write(json.dumps(obj, default=str) + "\n")
    CHANNEL.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--transport-url", required=True)
    parser.add_argument("--identity-url", required=True)
    parser.add_argument("--exchange", default="glance")
    args = parser.parse_args()
    workdir: Path = args.workdir
    try:
        write_config(workdir, args.transport_url, args.exchange)
        db_sync(workdir)
        os.environ["OS_GLANCE_CONFIG_DIR"] = str(workdir)
        recorder = Recorder()
        recorder.install()
        from glance.common import wsgi_app

        app = TokenGate(wsgi_app.init_app(), args.identity_url)
        server = simple_server.make_server("127.0.0.1", 0, app,
                                           server_class=_ThreadingServer,
                                           handler_class=_QuietHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    except Exception:  # noqa: BLE001 - the test shows why glance did not start
        reply({"fatal": traceback.format_exc()[-4000:]})
        return 1
    reply({"ready": {"image_url": f"http://127.0.0.1:{server.server_port}"}})
    for line in sys.stdin:
        command = json.loads(line)
        try:
            op = command["op"]
            if op == "quit":
                reply({"ok": None})
                break
            if op == "mute":
                with recorder.lock:
                    recorder.muted.add(command["name"])
                reply({"ok": None})
            elif op == "notifications":
                with recorder.lock:
                    reply({"ok": list(recorder.records)})
            elif op == "records":
                reply({"ok": records(workdir)})
            elif op == "populate":
                reply({"ok": populate(workdir, int(command["count"]),
                                      int(command.get("projects", 10)))})
            else:
                reply({"error": f"unknown op {op!r}"})
        except Exception:  # noqa: BLE001 - the test shows glance's traceback
            reply({"error": traceback.format_exc()[-3000:]})
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
