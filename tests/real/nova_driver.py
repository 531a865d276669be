"""Real nova, in one process, driven over stdin/stdout JSON lines.

Run by the python of the tier's own virtualenv (nova and its pinned dependencies),
never imported by Tally's: ``python nova_driver.py --transport-url rabbit://...
--identity-url http://127.0.0.1:P/identity``.

nova's own functional-test services: the API (osapi_compute, served here by a
loopback WSGI server so another process reaches it over real HTTP), conductor,
scheduler and one compute on the fake virt driver, placement from the placement
package's fixture, nova's fake glance/neutron/cinder.  The legacy notifications go
through a real ``oslo_messaging.Notifier`` (driver messagingv2, topic notifications,
exchange nova) onto RabbitMQ; those of a muted instance are recorded but not sent.

Authentication, two ways:

- ``--identity-url`` (the simulated cloud's keystone): nova's keystonemiddleware is
  stubbed the way nova's tests stub it; ``TokenGate`` validates each request's
  X-Auth-Token against that identity service (``GET /v3/auth/tokens``, what
  keystonemiddleware asks keystone) and hands nova the user, project and roles it
  answered.
- ``--keystone FILE`` (a real keystone; FILE is JSON: ``auth_url`` and the accounts
  ``service``, ``admin``, ``member``, each ``{"username", "password", "project"}``):
  nothing is stubbed.  nova's own paste pipeline runs (``authtoken`` =
  keystonemiddleware, then nova's ``NovaKeystoneContext``), its ``authtoken`` filter
  logging in as ``service``; the driver's own API clients (nova's test client, used
  by the commands) send real tokens: the admin client admin's, the others member's.

Protocol: one JSON object a line in, one a line out (``{"ok": ...}`` or
``{"error": "..."}``).  The first line out is ``{"ready": {"compute_url": ...}}``.
"""

# nova's package must be imported before anything that imports eventlet (below), so
# the imports are in that order rather than isort's and after the environment is set.
# ruff: noqa: E402, I001

from __future__ import annotations

import os

# nova's native-threading mode: the API server thread and the command loop are real
# threads (eventlet's hub would stall on the blocking stdin read).
os.environ.setdefault("OS_NOVA_DISABLE_EVENTLET_PATCHING", "true")

import argparse
import json
import sys
import threading
import time
import traceback
import unittest
from wsgiref import simple_server

# First of nova: its package decides the threading mode before anything imports eventlet.
from nova.tests.functional import integrated_helpers

import oslo_messaging as messaging
import requests
from nova import context as nova_context
from nova import objects
from nova import rpc
from nova.network import model as network_model
from oslo_config import cfg
from oslo_serialization import jsonutils
from oslo_utils import timeutils

CONF = cfg.CONF
ARGS: argparse.Namespace
# The protocol's channel: fd 1 as it was at start (nova's fixtures may capture stdout).
CHANNEL = os.fdopen(os.dup(1), "w", buffering=1)
sys.stdout = sys.stderr


# nova's own waits poll every 0.5 s, ten times; a loaded machine needs longer.
WAIT_POLLS = 120
BUILD_ATTEMPTS = 3
# nova's fake glance's image (integrated_helpers builds its servers on it).
IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"


class RecordingNotifier:
    """nova's LEGACY_NOTIFIER: every notification recorded, sent unless muted."""

    def __init__(self, real: messaging.Notifier, muted: set[str]) -> None:
        self.real = real
        self.muted = muted
        self.records: list[dict] = []
        self.lock = threading.Lock()

    def prepare(self, publisher_id=None, **kwargs):
        return _Prepared(self, self.real.prepare(publisher_id=publisher_id, **kwargs),
                         publisher_id)

    def is_enabled(self) -> bool:
        return True

    def __getattr__(self, name):
        return getattr(self.real, name)


class _Prepared:
    def __init__(self, owner: RecordingNotifier, real, publisher_id) -> None:
        self.owner = owner
        self.real = real
        self.publisher_id = publisher_id

    def is_enabled(self) -> bool:
        return True

    def _send(self, priority: str, ctxt, event_type: str, payload) -> None:
        primitive = jsonutils.to_primitive(payload, convert_instances=True)
        ids = {str(primitive.get("instance_id")), str(primitive.get("display_name"))} \
            if isinstance(primitive, dict) else set()
        sent = not (ids & self.owner.muted)
        with self.owner.lock:
            self.owner.records.append({"event_type": event_type, "priority": priority,
                                       "publisher_id": self.publisher_id, "sent": sent,
                                       "payload": primitive})
        if sent:
            getattr(self.real, priority)(ctxt, event_type, payload)

    def __getattr__(self, priority):
        if priority not in ("audit", "debug", "info", "warn", "warning", "error",
                            "critical", "sample"):
            raise AttributeError(priority)
        return lambda ctxt, event_type, payload: self._send(
            "warn" if priority == "warning" else priority, ctxt, event_type, payload)


class TokenGate:
    """The stubbed keystonemiddleware: the token's identity as keystone answers it."""

    def __init__(self, app, identity_url: str) -> None:
        self.app = app
        self.identity_url = identity_url.rstrip("/")

    def __call__(self, environ, start_response):
        token = environ.get("HTTP_X_AUTH_TOKEN")
        answer = None
        if token:
            answer = requests.get(f"{self.identity_url}/v3/auth/tokens?nocatalog",
                                  headers={"X-Auth-Token": token, "X-Subject-Token": token},
                                  timeout=30)
        if answer is None or answer.status_code != 200:
            start_response("401 Unauthorized", [("Content-Type", "application/json"),
                                                ("WWW-Authenticate",
                                                 f"Keystone uri='{self.identity_url}'")])
            return [b'{"error": {"code": 401, "title": "Unauthorized", '
                    b'"message": "The request you have made requires authentication."}}']
        body = answer.json()["token"]
        environ["HTTP_X_AUTH_USER"] = "admin" if any(
            r["name"] == "admin" for r in body["roles"]) else body["user"]["id"]
        environ["HTTP_X_AUTH_PROJECT_ID"] = body["project"]["id"]
        environ["HTTP_X_ROLES"] = ",".join(r["name"] for r in body["roles"])
        return self.app(environ, start_response)


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("nova-api: " + (format % args) + "\n")


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


class NovaLife(integrated_helpers._IntegratedTestBase):
    """nova's functional services, kept up while ``test_serve`` answers commands."""

    ADMIN_API = False
    microversion = "latest"

    def _setup_services(self):
        # The wheel installs nova's paste pipeline under the virtualenv's prefix,
        # not beside the package where nova's own test runs find it.
        paste = os.path.join(sys.prefix, "etc", "nova", "api-paste.ini")
        if KEYSTONE:
            paste = _paste_with_authtoken(paste, KEYSTONE)
            _send_tokens(KEYSTONE)
        self.flags(api_paste_config=paste, group="wsgi")
        # Shelve and offload are two steps of the scripted life.
        self.flags(shelved_offload_time=-1)
        self.flags(allow_resize_to_same_host=True)
        # The real notifier before the services start: each takes its notifier then.
        self.muted: set[str] = set()
        CONF.set_override("control_exchange", ARGS.exchange)
        transport = messaging.get_notification_transport(CONF, url=ARGS.transport_url)
        self.addCleanup(transport.cleanup)
        real = messaging.Notifier(
            transport, driver="messagingv2", topics=["notifications"],
            serializer=rpc.RequestContextSerializer(rpc.JsonPayloadSerializer()))
        self.recorder = RecordingNotifier(real, self.muted)
        self.stub_out("nova.rpc.LEGACY_NOTIFIER", self.recorder)
        super()._setup_services()

    def setUp(self):
        super().setUp()
        app = self.api_fixture.app()
        if not KEYSTONE:
            app = TokenGate(app, ARGS.identity_url)
        self.server = simple_server.make_server("127.0.0.1", 0, app,
                                                server_class=_ThreadingServer,
                                                handler_class=_QuietHandler)
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(self.server.shutdown)

    def test_serve(self):
        port = self.server.server_address[1]
        reply({"ready": {"compute_url": f"http://127.0.0.1:{port}/v2.1",
                         "project_id": MEMBER_PROJECT or self.api.project_id}})
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            if command.get("op") == "quit":
                reply({"ok": None})
                return
            try:
                reply({"ok": self.do(command)})
            except Exception as exc:  # noqa: BLE001 - told to the test, loop goes on
                traceback.print_exc()
                reply({"error": f"{type(exc).__name__}: {exc}"})

    # -- commands ------------------------------------------------------------------

    def do(self, command: dict):
        op = command["op"]
        if op == "mute":
            self.muted.add(command["name"])
            return None
        if op == "create":
            return self._create(command)
        if op == "notifications":
            with self.recorder.lock:
                return list(self.recorder.records)
        if op == "records":
            return self.records()
        if op == "populate":
            return self.populate(int(command["count"]), int(command.get("projects", 10)))
        server = self.api.get_server(command["id"])
        if op == "stop":
            self._stop_server(server)
        elif op == "start":
            self._start_server(server)
        elif op == "resize":
            self._resize_server(server, command["flavor"])
        elif op == "confirm":
            self._confirm_resize(server)
        elif op == "revert":
            self._revert_resize(server)
        elif op == "shelve":
            self._shelve_server(server, expected_state="SHELVED")
        elif op == "offload":
            self.admin_api.post_server_action(server["id"], {"shelveOffload": {}})
            self._wait_for_state_change(server, "SHELVED_OFFLOADED")
        elif op == "unshelve":
            self._unshelve_server(server)
        elif op == "rebuild":
            self._rebuild_server(server, command.get("image", server["image"]["id"]))
        elif op == "delete":
            self._delete_server(server)
        else:
            raise ValueError(f"unknown op {op!r}")
        return None

    def _wait_for_state_change(self, server, expected_status, max_retries=WAIT_POLLS,
                               wait_for_fault_key=True):
        """nova's wait (a poll every 0.5 s), given up to a minute rather than nova's
        5 s: a loaded machine is slower than nova's own gate, and a state change the
        poll outlasts is a slow machine, not a wrong nova."""
        return super()._wait_for_state_change(server, expected_status, max_retries,
                                              wait_for_fault_key)

    def _create(self, command: dict) -> str:
        """A server built ACTIVE; its id.  Under load nova's one fake compute
        sometimes fails a build and reschedules it to no other host (the server
        ERROR with ``MaxRetriesExceeded``): that server is deleted and the build tried
        again, at most BUILD_ATTEMPTS times, each abandoned one told on stderr.  Its
        notifications went out like any other instance's, so what the tests compare
        (nova's notifications and rows against Tally's) holds it too."""
        body = self._build_server(name=command["name"], flavor_id=command.get("flavor", "1"),
                                  networks=command.get("networks", "auto"))
        for attempt in range(1, BUILD_ATTEMPTS + 1):
            server = self.api.post_server({"server": body})
            for _ in range(WAIT_POLLS):
                server = self.admin_api.get_server(server["id"])
                if server["status"] in ("ACTIVE", "ERROR"):
                    break
                time.sleep(0.5)
            if server["status"] == "ACTIVE":
                return server["id"]
            fault = server.get("fault", {})
            sys.stderr.write(f"nova_driver: build {attempt} of {command['name']!r} ended "
                             f"{server['status']}: {json.dumps(fault)}\n")
            if server["status"] != "ERROR" or "MaxRetriesExceeded" not in json.dumps(fault):
                break
            self._delete_server(server)
        raise AssertionError(f"server {command['name']!r} not ACTIVE after {attempt} "
                             f"build(s): {server['status']} {server.get('fault')}")

    def populate(self, count: int, projects: int) -> list[str]:
        """``count`` ACTIVE instances on the one compute, spread over ``projects``
        projects, written straight into cell1's database through nova's own objects (as
        nova's functional InstanceListTestCase does) with their instance mappings in the
        API database: what a listing reads, without ``count`` boots.  Their uuids."""
        if count < 1 or projects < 1:
            raise ValueError(f"populate needs count >= 1 and projects >= 1, "
                             f"not {count} and {projects}")
        ctxt = nova_context.get_admin_context()
        cell = self.cell_mappings["cell1"]
        host = self.compute.host
        created = []
        with nova_context.target_cell(ctxt, cell) as cctxt:
            flavor = objects.Flavor.get_by_flavor_id(cctxt, "1")
            [node] = objects.ComputeNodeList.get_all_by_host(cctxt, host)
            for index in range(count):
                project = f"{index % projects:032x}"
                inst = objects.Instance(
                    context=cctxt, project_id=project, user_id=f"user-{project}",
                    display_name=f"paged-{index}", hostname=f"paged-{index}",
                    image_ref=IMAGE, flavor=flavor, instance_type_id=flavor.id,
                    memory_mb=flavor.memory_mb, vcpus=flavor.vcpus,
                    root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
                    vm_state="active", power_state=1, task_state=None,
                    host=host, node=node.hypervisor_hostname, compute_id=node.id,
                    availability_zone="nova", launched_at=timeutils.utcnow(),
                    info_cache=objects.InstanceInfoCache(
                        network_info=network_model.NetworkInfo([])),
                    metadata={}, system_metadata={})
                inst.create()
                objects.InstanceMapping(context=ctxt, project_id=project,
                                        user_id=inst.user_id, instance_uuid=inst.uuid,
                                        cell_mapping=cell, queued_for_delete=False).create()
                created.append(inst.uuid)
        return created

    def records(self) -> list[dict]:
        """nova's own instance rows (deleted ones too), from the cell database."""
        ctxt = nova_context.get_admin_context(read_deleted="yes")
        found = []
        for cell in self.cell_mappings.values():
            with nova_context.target_cell(ctxt, cell) as cctxt:
                for inst in objects.InstanceList.get_by_filters(
                        cctxt, {}, expected_attrs=["flavor"]):
                    found.append({
                        "id": inst.uuid, "name": inst.display_name,
                        "project_id": inst.project_id, "vm_state": inst.vm_state,
                        "flavor": {"name": inst.flavor.name, "vcpus": inst.flavor.vcpus,
                                   "ram": inst.flavor.memory_mb,
                                   "disk": inst.flavor.root_gb,
                                   "ephemeral": inst.flavor.ephemeral_gb},
                        **{name: _instant(getattr(inst, name))
                           for name in ("created_at", "launched_at", "terminated_at",
                                        "deleted_at")},
                        "deleted": bool(inst.deleted),
                    })
        return found


KEYSTONE: dict | None = None
MEMBER_PROJECT: str | None = None


def _paste_with_authtoken(paste: str, keystone: dict) -> str:
    """nova's paste file, its authtoken filter configured for ``keystone`` (paste
    options are keystonemiddleware's [keystone_authtoken] ones)."""
    service = keystone["service"]
    options = {
        "auth_type": "password", "auth_url": keystone["auth_url"],
        "www_authenticate_uri": keystone["auth_url"], "username": service["username"],
        "password": service["password"], "project_name": service["project"],
        "user_domain_name": "Default", "project_domain_name": "Default",
        "service_type": "compute", "interface": "public",
    }
    head = "[filter:authtoken]\n"
    with open(paste) as original:
        text = original.read()
    assert head in text, paste
    text = text.replace(head, head + "".join(f"{k} = {v}\n" for k, v in options.items()))
    path = os.path.abspath("api-paste-keystone.ini")
    with open(path, "w") as out:
        out.write(text)
    return path


def _send_tokens(keystone: dict) -> None:
    """nova's test client sends a real token of the account it stands for."""
    from keystoneauth1 import session as ks_session
    from keystoneauth1.identity import v3
    from nova.tests.functional.api import client

    def login(account: dict) -> ks_session.Session:
        return ks_session.Session(auth=v3.Password(
            auth_url=keystone["auth_url"], username=account["username"],
            password=account["password"], project_name=account["project"],
            user_domain_name="Default", project_domain_name="Default"))

    sessions = {"admin": login(keystone["admin"]), "member": login(keystone["member"])}
    global MEMBER_PROJECT
    MEMBER_PROJECT = sessions["member"].get_project_id()
    original = client.TestOpenStackClient.api_request

    def api_request(self, relative_uri, check_response_status=None, strip_version=False,
                    **kwargs):
        who = "admin" if "admin" in self.roles else "member"
        kwargs.setdefault("headers", {})["X-Auth-Token"] = sessions[who].get_token()
        return original(self, relative_uri, check_response_status=check_response_status,
                        strip_version=strip_version, **kwargs)

    client.TestOpenStackClient.api_request = api_request


def _instant(value) -> str | None:
    return None if value is None else value.isoformat()


def reply(obj) -> None:
    CHANNEL.write(json.dumps(obj, default=str) + "\n")
    CHANNEL.flush()


def main() -> int:
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport-url", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--identity-url")
    where.add_argument("--keystone", help="JSON file: auth_url and the accounts")
    # nova's is "nova"; the suite gives each run its own on the shared RabbitMQ.
    parser.add_argument("--exchange", default="nova")
    ARGS = parser.parse_args()
    if ARGS.keystone:
        global KEYSTONE
        with open(ARGS.keystone) as source:
            KEYSTONE = json.load(source)
        NovaLife.STUB_KEYSTONE = False
    result = unittest.TestResult()
    NovaLife("test_serve").run(result)
    for _case, text in result.errors + result.failures:
        sys.stderr.write(text)
        reply({"fatal": text[-2000:]})
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
