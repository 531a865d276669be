"""Real cinder (API, scheduler, one volume service), in one process, driven over
stdin/stdout JSON lines.

Run by the python of the tier's cinder virtualenv, never imported by Tally's:
``python cinder_driver.py --workdir D --transport-url rabbit://...
--identity-url http://127.0.0.1:P/identity --exchange E``.

cinder's own services, as ``cinder.cmd.api``, ``cinder.cmd.scheduler`` and
``cinder.cmd.volume`` start them, in cinder's native-threading mode: the API is
cinder's paste application (``osapi_volume``, what ``cinder.wsgi.wsgi`` loads),
served by a loopback WSGI server so another process reaches it over real HTTP; the
scheduler (cinder's FilterScheduler) and one volume service, backend ``fake`` on
cinder's own LVM-free ``cinder.tests.fake_driver.FakeLoggingVolumeDriver``, are
``cinder.service.Service`` objects started here.  SQLite under the work directory
(``cinder-manage db sync``).  RPC between the services is oslo.messaging's in-process
``fake:`` transport; the notifications go through cinder's own notifier (a real
``oslo_messaging.Notifier``, driver messagingv2, topic notifications) onto RabbitMQ on
the given exchange; those of a muted volume (by name or id) are recorded but not sent.

Authentication: cinder's paste pipeline with keystonemiddleware's ``authtoken`` left
out and its place taken by ``TokenGate``, which validates each X-Auth-Token against
the identity service (``GET /v3/auth/tokens``, what keystonemiddleware asks) and sets
the headers keystonemiddleware sets; cinder's own ``CinderKeystoneContext`` builds
the request context from them and answers 401 without a user.

Protocol: one JSON object a line in, one a line out (``{"ok": ...}`` or
``{"error": "..."}``).  The first line out is ``{"ready": {"volume_url": ...}}``.
"""

# cinder decides its threading mode when first imported: the environment comes first.
# ruff: noqa: E402, I001

from __future__ import annotations

import os

# The API server thread and the command loop are real threads (eventlet's hub would
# stall on the blocking stdin read).
os.environ["OS_CINDER_DISABLE_EVENTLET_PATCHING"] = "true"

# First of everything: cinder selects oslo.service's threading backend, which must
# precede any import that asks for a backend (oslo.messaging's would pick eventlet).
from cinder import monkey_patch

monkey_patch.patch()

import argparse
import json
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from wsgiref import simple_server

# The protocol's channel: fd 1 as it was at start; everything else writes to stderr.
CHANNEL = os.fdopen(os.dup(1), "w", buffering=1)
sys.stdout = sys.stderr

BACKEND = "fake"
HOST = "tally-cinder"

# cinder's etc/cinder/api-paste.ini, the keystone pipeline without authtoken (the gate).
PASTE = """\
[composite:osapi_volume]
use = call:cinder.api:root_app_factory
/: apiversions
/v3: openstack_volume_api_v3

[composite:openstack_volume_api_v3]
use = call:cinder.api.middleware.auth:pipeline_factory
keystone = request_id cors http_proxy_to_wsgi faultwrap sizelimit osprofiler keystonecontext apiv3
keystone_nolimit = request_id cors http_proxy_to_wsgi faultwrap sizelimit osprofiler keystonecontext apiv3

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory

[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = cinder

[filter:faultwrap]
paste.filter_factory = cinder.api.middleware.fault:FaultWrapper.factory

[filter:osprofiler]
paste.filter_factory = osprofiler.web:WsgiMiddleware.factory

[filter:sizelimit]
paste.filter_factory = oslo_middleware.sizelimit:RequestBodySizeLimiter.factory

[app:apiv3]
paste.app_factory = cinder.api.v3.router:APIRouter.factory

[pipeline:apiversions]
pipeline = request_id cors http_proxy_to_wsgi faultwrap osvolumeversionapp

[app:osvolumeversionapp]
paste.app_factory = cinder.api.versions:Versions.factory

[filter:keystonecontext]
paste.filter_factory = cinder.api.middleware.auth:CinderKeystoneContext.factory

[filter:request_id]
paste.filter_factory = cinder.api.middleware.request_id:RequestId.factory
"""

# What keystonemiddleware sets; a client's own copies are dropped first.
IDENTITY_HEADERS = ("HTTP_X_IDENTITY_STATUS", "HTTP_X_USER_ID", "HTTP_X_USER_NAME",
                    "HTTP_X_USER", "HTTP_X_PROJECT_ID", "HTTP_X_PROJECT_NAME",
                    "HTTP_X_ROLES", "HTTP_X_ROLE", "HTTP_X_TENANT_ID", "HTTP_X_TENANT_NAME",
                    "HTTP_X_TENANT", "HTTP_X_SERVICE_CATALOG", "HTTP_X_DOMAIN_ID")


class TokenGate:
    """keystonemiddleware's part: the token's identity as the identity service answers."""

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
                environ["HTTP_X_USER_NAME"] = body["user"].get("name", "")
                environ["HTTP_X_PROJECT_ID"] = body["project"]["id"]
                environ["HTTP_X_PROJECT_NAME"] = body["project"].get("name", "")
                environ["HTTP_X_ROLES"] = ",".join(r["name"] for r in body["roles"])
        return self.app(environ, start_response)


class Recorder:
    """Every notification cinder's notifiers are handed; a muted volume's not sent."""

    def __init__(self) -> None:
        self.muted: set[str] = set()
        self.records: list[dict] = []
        self.lock = threading.Lock()

    def install(self) -> None:
        from oslo_messaging.notify import notifier
        from oslo_serialization import jsonutils

        recorder = self
        real = notifier.Notifier._notify

        def _notify(self, ctxt, event_type, payload, priority, publisher_id=None,
                    retry=None):
            primitive = jsonutils.to_primitive(payload, convert_instances=True)
            keys = {str(primitive.get("volume_id")), str(primitive.get("display_name"))} \
                if isinstance(primitive, dict) else set()
            with recorder.lock:
                sent = not (keys & recorder.muted)
                if not sent and isinstance(primitive, dict) and primitive.get("volume_id"):
                    recorder.muted.add(str(primitive["volume_id"]))
                recorder.records.append({
                    "event_type": event_type, "priority": priority, "sent": sent,
                    "publisher_id": publisher_id or self.publisher_id,
                    "payload": primitive})
            if sent:
                real(self, ctxt, event_type, payload, priority, publisher_id=publisher_id,
                     retry=retry)

        notifier.Notifier._notify = _notify


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("cinder-api: " + (format % args) + "\n")


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


def write_config(workdir: Path, transport_url: str, exchange: str) -> Path:
    (workdir / "locks").mkdir(parents=True, exist_ok=True)
    (workdir / "api-paste.ini").write_text(PASTE)
    conf = workdir / "cinder.conf"
    conf.write_text("\n".join([
        "[DEFAULT]",
        f"host = {HOST}",
        f"state_path = {workdir}",
        # RPC between the services of this one process; notifications go to RabbitMQ.
        "transport_url = fake:/",
        # cinder's is "openstack"; the suite gives each run its own on the shared RabbitMQ.
        f"control_exchange = {exchange}",
        "auth_strategy = keystone",
        f"api_paste_config = {workdir / 'api-paste.ini'}",
        f"enabled_backends = {BACKEND}",
        "default_volume_type = __DEFAULT__",
        # The scheduler waits up to this long for the volume service's first report.
        "scheduler_driver_init_wait_time = 10",
        "[database]",
        f"connection = sqlite:///{workdir / 'cinder.sqlite'}",
        "[oslo_concurrency]",
        f"lock_path = {workdir / 'locks'}",
        "[coordination]",
        f"backend_url = file://{workdir / 'locks'}",
        f"[{BACKEND}]",
        "volume_driver = cinder.tests.fake_driver.FakeLoggingVolumeDriver",
        f"volume_backend_name = {BACKEND}",
        "[oslo_messaging_notifications]",
        "driver = messagingv2",
        "topics = notifications",
        f"transport_url = {transport_url}",
        "",
    ]))
    return conf


def db_sync(conf: Path) -> None:
    manage = Path(sys.executable).parent / "cinder-manage"
    subprocess.run([str(manage), "--config-file", str(conf), "db", "sync"], check=True,
                   stdout=sys.stderr, stderr=sys.stderr, timeout=300)


def start(conf: Path, identity_url: str):
    """cinder's services started as its cmd modules start them; the API's server."""
    from oslo_config import cfg
    from oslo_log import log as logging
    from oslo_service import wsgi

    from cinder import coordination, objects, rpc, service, version
    from cinder.common import config, constants

    conf_obj = cfg.CONF
    objects.register_all()
    conf_obj(["--config-file", str(conf)], project="cinder",
             version=version.version_string())
    logging.setup(conf_obj, "cinder")
    config.set_middleware_defaults()
    coordination.COORDINATOR.start()
    rpc.init(conf_obj)
    # The volume service first: the scheduler's start asks it for its capabilities
    # and waits (scheduler_driver_init_wait_time) for the first answer.
    volume = service.Service.create(host=f"{HOST}@{BACKEND}", service_name=BACKEND,
                                    binary=constants.VOLUME_BINARY, coordination=True)
    volume.start()
    scheduler = service.Service.create(binary=constants.SCHEDULER_BINARY)
    scheduler.start()
    app = TokenGate(wsgi.Loader(conf_obj).load_app(name="osapi_volume"), identity_url)
    server = simple_server.make_server("127.0.0.1", 0, app, server_class=_ThreadingServer,
                                       handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, [scheduler, volume]


def wait_for_backend(workdir: Path, timeout: float = 120) -> None:
    """The volume service up in cinder's own services table (the scheduler needs it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sqlite3.connect(workdir / "cinder.sqlite") as db:
            up = db.execute("SELECT count(*) FROM services WHERE topic = 'cinder-volume' "
                            "AND disabled = 0").fetchone()[0]
        if up:
            return
        time.sleep(0.5)
    raise RuntimeError(f"cinder-volume did not register within {timeout}s")


def records(workdir: Path) -> list[dict]:
    """cinder's own volume rows, deleted ones included, with their type's name."""
    with sqlite3.connect(workdir / "cinder.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(
            "SELECT v.id, v.display_name, v.project_id, v.size, v.status, v.deleted, "
            "v.created_at, v.updated_at, v.deleted_at, v.terminated_at, "
            "v.volume_type_id, t.name AS volume_type_name FROM volumes v "
            "LEFT JOIN volume_types t ON t.id = v.volume_type_id")
        return [dict(row) for row in rows]


def populate(count: int, projects: int) -> list[str]:
    """``count`` available volumes of the default type on the one backend, spread over
    ``projects`` projects, written into cinder's database through its own objects
    (``objects.Volume.create``), not ``count`` creates through the API and the
    scheduler: what a listing reads.  Their ids."""
    if count < 1 or projects < 1:
        raise ValueError(f"populate needs count >= 1 and projects >= 1, "
                         f"not {count} and {projects}")
    from oslo_utils import timeutils

    from cinder import context, objects
    from cinder.volume import volume_types

    ctxt = context.get_admin_context()
    default = volume_types.get_default_volume_type(ctxt)
    created = []
    for index in range(count):
        project = f"{index % projects:032x}"
        volume = objects.Volume(
            context=ctxt, project_id=project, user_id=f"user-{project}",
            display_name=f"paged-{index}", size=1, status="available",
            attach_status="detached", volume_type_id=default["id"],
            availability_zone="nova", host=f"{HOST}@{BACKEND}#{BACKEND}",
            launched_at=timeutils.utcnow(), bootable=False, multiattach=False)
        volume.create()
        created.append(volume.id)
    return created


def reply(obj) -> None:
    CHANNEL.write(json.dumps(obj, default=str) + "\n")
    CHANNEL.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--transport-url", required=True)
    parser.add_argument("--identity-url", required=True)
    parser.add_argument("--exchange", default="openstack")
    args = parser.parse_args()
    workdir: Path = args.workdir
    try:
        conf = write_config(workdir, args.transport_url, args.exchange)
        db_sync(conf)
        recorder = Recorder()
        recorder.install()
        server, services = start(conf, args.identity_url)
        wait_for_backend(workdir)
    except Exception:  # noqa: BLE001 - the test shows why cinder did not start
        reply({"fatal": traceback.format_exc()[-4000:]})
        return 1
    reply({"ready": {"volume_url": f"http://127.0.0.1:{server.server_port}"}})
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
                reply({"ok": populate(int(command["count"]),
                                      int(command.get("projects", 10)))})
            else:
                reply({"error": f"unknown op {op!r}"})
        except Exception:  # noqa: BLE001 - the test shows cinder's traceback
            reply({"error": traceback.format_exc()[-3000:]})
    server.shutdown()
    for running in services:
        running.stop()
    # The services' threads are not daemons; the protocol is done.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
