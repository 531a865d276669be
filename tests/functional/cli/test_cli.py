"""``tally`` against a real Reporting API: table and JSON output, pages, errors."""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from reporting.db.models import SyncRun
from tallyclient.cli.main import main
from tests.functional.cli.conftest import Api
from tests.functional.reporting.fixtures import TOKENS

SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}


def event(n: int, event_type: str, resource_id: str, timestamp: str, *, cloud: str = "c1",
          resource_type: str = "instance", project_id: str = "p1",
          **payload: Any) -> dict[str, Any]:
    return {"event_id": f"ev-{n:03d}", "event_type": event_type, "platform": "openstack",
            "cloud": cloud, "resource_type": resource_type, "resource_id": resource_id,
            "project_id": project_id, "timestamp": timestamp, "source": "collector",
            "payload": payload}


HISTORY = [
    event(1, "compute.instance.create.end", "inst-a", "2026-01-10T00:00:00Z",
          state="active", size=SMALL),
    event(2, "compute.instance.resize.confirm.end", "inst-a", "2026-01-10T01:00:00Z",
          state="active", size=LARGE),
    event(3, "compute.instance.create.end", "inst-b", "2026-01-10T00:00:00Z",
          project_id="p2", state="active", size=SMALL),
    event(4, "compute.instance.delete.end", "inst-b", "2026-01-10T02:00:00Z",
          project_id="p2", state="deleted"),
    event(5, "compute.instance.create.end", "inst-c", "2026-01-10T00:00:00Z",
          state="active", size=SMALL),
    event(6, "compute.instance.create.end", "inst-d", "2026-01-10T00:00:00Z",
          state="active", size=SMALL),
    event(7, "compute.instance.create.end", "inst-e", "2026-01-10T00:00:00Z",
          cloud="c2", state="active", size=SMALL),
]


def run(api: Api, capsys: pytest.CaptureFixture[str], *argv: str,
        role: str = "admin") -> tuple[int, str, str]:
    code = main(["--url", api.url, "--token", TOKENS[role], *argv])
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out: str) -> list[list[str]]:
    """The table's lines split on runs of 2+ spaces (cells never hold two spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.strip()]


@pytest.fixture
def seeded(api: Api) -> Api:
    assert api.ingest(HISTORY)["stored"] == len(HISTORY)
    return api


def test_inventory_table_lists_live_resources_with_compact_sizes(
        seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(seeded, capsys, "inventory", "--cloud", "c1")
    assert (code, err) == (0, "")
    rows = table_rows(out)
    assert rows[0] == ["platform", "cloud", "resource_type", "resource_id", "project_id",
                       "state", "live", "size", "created_at", "deleted_at"]
    assert [row[3] for row in rows[1:]] == ["inst-a", "inst-c", "inst-d"]
    assert rows[1] == ["openstack", "c1", "instance", "inst-a", "p1", "active", "true",
                       "vcpus=4 ram_gb=8 disk_gb=80 flavor=m1.large",
                       "2026-01-10T00:00:00.000000Z", "-"]
    # Columns are aligned: every line's "size" cell starts at the same offset.
    lines = out.splitlines()
    assert len({line.index(cell) for line, cell in zip(
        lines, ["size", "vcpus=4", "vcpus=1", "vcpus=1"], strict=True)}) == 1


def test_inventory_all_deleted_and_json(seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(seeded, capsys, "--format", "json", "inventory", "--all")
    items = json.loads(out)
    assert code == 0
    assert [(i["cloud"], i["resource_id"], i["live"]) for i in items] == [
        ("c1", "inst-a", True), ("c1", "inst-b", False), ("c1", "inst-c", True),
        ("c1", "inst-d", True), ("c2", "inst-e", True)]
    assert items[1]["deleted_at"] == "2026-01-10T02:00:00.000000Z"
    code, out, _ = run(seeded, capsys, "--format", "json", "inventory", "--deleted")
    assert [i["resource_id"] for i in json.loads(out)] == ["inst-b"]
    code, out, _ = run(seeded, capsys, "--format", "json", "inventory", "--project", "p2",
                       "--as-of", "2026-01-10T01:30:00Z")
    assert [i["resource_id"] for i in json.loads(out)] == ["inst-b"]


def test_inventory_follows_every_page_or_stops_at_limit(
        seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(seeded, capsys, "--format", "json", "inventory", "--all", "--page-size", "2")
    assert [i["resource_id"] for i in json.loads(out)] == [
        "inst-a", "inst-b", "inst-c", "inst-d", "inst-e"]
    _, out, _ = run(seeded, capsys, "--format", "json", "inventory", "--all", "--limit", "3",
                    "--page-size", "2")
    assert [i["resource_id"] for i in json.loads(out)] == ["inst-a", "inst-b", "inst-c"]
    _, out, _ = run(seeded, capsys, "inventory", "--all", "--limit", "1")
    assert len(table_rows(out)) == 2


def test_history_and_lifecycle(seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(seeded, capsys, "history", "c1", "instance", "inst-a", "--page-size", "1")
    rows = table_rows(out)
    assert code == 0
    assert rows[0][:4] == ["timestamp", "event_type", "source", "project_id"]
    assert [row[1] for row in rows[1:]] == ["compute.instance.create.end",
                                           "compute.instance.resize.confirm.end"]
    assert rows[2][5] == "vcpus=4 ram_gb=8 disk_gb=80 flavor=m1.large"
    _, out, _ = run(seeded, capsys, "--format", "json", "lifecycle", "--platform", "openstack",
                    "c1", "instance", "inst-b")
    intervals = json.loads(out)
    assert [(i["start"], i["end"], i["event_id"]) for i in intervals] == [
        ("2026-01-10T00:00:00.000000Z", "2026-01-10T02:00:00.000000Z", "ev-003")]
    _, out, _ = run(seeded, capsys, "lifecycle", "c1", "instance", "inst-a")
    rows = table_rows(out)
    assert rows[0] == ["start", "end", "project_id", "state", "size", "event_id"]
    assert rows[2] == ["2026-01-10T01:00:00.000000Z", "-", "p1", "active",
                       "vcpus=4 ram_gb=8 disk_gb=80 flavor=m1.large", "ev-002"]


def test_usage_grouped_and_broken_down(seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    period = ["--from", "2026-01-10T00:00:00Z", "--to", "2026-01-10T04:00:00Z", "--cloud", "c1"]
    code, out, _ = run(seeded, capsys, "usage", *period, "--group-by", "project")
    assert code == 0
    assert table_rows(out) == [
        ["platform", "cloud", "project_id", "resource_type", "resources", "seconds"],
        ["openstack", "c1", "p1", "instance", "3", str(3 * 4 * 3600)],
        ["openstack", "c1", "p2", "instance", "1", str(2 * 3600)]]
    _, out, _ = run(seeded, capsys, "usage", *period, "--project", "p1", "--breakdown",
                    "--page-size", "1")
    rows = table_rows(out)
    assert rows[0][-3:] == ["state", "size", "seconds"]
    assert sorted(row[3:] for row in rows[1:3]) == [
        ["inst-a", "p1", "active", "vcpus=1 ram_gb=2 disk_gb=20 flavor=m1.small", "3600"],
        ["inst-a", "p1", "active", "vcpus=4 ram_gb=8 disk_gb=80 flavor=m1.large", "10800"]]
    assert len(rows) == 1 + 4
    _, out, _ = run(seeded, capsys, "--format", "json", "usage", *period,
                    "--group-by", "resource_type")
    assert json.loads(out) == [{"platform": "openstack", "cloud": "c1",
                                "resource_type": "instance", "seconds": 50400.0,
                                "resources": 4, "breakdown": json.loads(out)[0]["breakdown"]}]


WIDGET_STRICT = {"type": "object", "required": ["units"], "additionalProperties": False,
                 "properties": {"units": {"type": "integer", "maximum": 1}}}
WIDGET_LOOSE = {"type": "object", "required": ["units"],
                "properties": {"units": {"type": "integer"}}}


def test_rejected_and_replay(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    api.put_schema("widget", WIDGET_STRICT)
    widgets = [event(20 + n, "widget.create", f"w-{n}", "2026-01-10T00:00:00Z",
                     resource_type="widget", state="on", size={"units": 5}) for n in range(3)]
    widgets[2]["cloud"] = "c2"
    assert api.ingest(widgets)["rejected"] == 3
    code, out, _ = run(api, capsys, "rejected", "--cloud", "c1", "--reason", "size_schema:",
                       role="read")
    rows = table_rows(out)
    assert code == 0
    assert rows[0] == ["id", "received_at", "cloud", "event_id", "replayed_at", "reason"]
    assert [(row[0], row[2], row[3], row[4]) for row in rows[1:]] == [
        ("1", "c1", "ev-020", "-"), ("2", "c1", "ev-021", "-")]
    assert rows[1][5].startswith("size_schema: openstack/widget: /units:")

    # Still refused: exit 1, the reason answered, the counts under the table.
    code, out, _ = run(api, capsys, "replay", "1")
    assert code == 1
    assert table_rows(out)[1][:3] == ["1", "rejected", "ev-020"]
    assert out.splitlines()[-1] == ("stored 0, duplicate 0, rejected 1, not_found 0, "
                                    "already_replayed 0")

    api.put_schema("widget", WIDGET_LOOSE)
    code, out, _ = run(api, capsys, "--format", "json", "replay", "1", "2")
    body = json.loads(out)
    assert code == 0
    assert [(r["id"], r["status"]) for r in body["results"]] == [(1, "stored"), (2, "stored")]
    code, out, _ = run(api, capsys, "replay", "2", "99")
    assert code == 1
    assert [row[:2] for row in table_rows(out)[1:3]] == [
        ["2", "already_replayed"], ["99", "not_found"]]

    _, out, _ = run(api, capsys, "--format", "json", "rejected", "--not-replayed",
                    "--page-size", "1")
    assert [r["id"] for r in json.loads(out)] == [3]
    _, out, _ = run(api, capsys, "--format", "json", "rejected", "--replayed",
                    "--since", "2000-01-01T00:00:00Z")
    assert [r["id"] for r in json.loads(out)] == [1, 2]


def test_sync_runs_newest_first(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    base = dt.datetime(2026, 1, 10)
    with api.sessions.begin() as session:
        for n, (cloud, status) in enumerate([("c1", "completed"), ("c2", "failed"),
                                             ("c1", "completed")]):
            session.add(SyncRun(
                id=f"run-{n}", cloud=cloud, status=status,
                started_at=base + dt.timedelta(hours=n),
                completed_at=base + dt.timedelta(hours=n, minutes=1),
                stats={"created": n, "updated": 0, "deleted": 1, "error_count": 0,
                       "deferred": {"transition": 0, "recent": 0}}))
    code, out, _ = run(api, capsys, "sync-runs", "--cloud", "c1", "--page-size", "1", role="read")
    rows = table_rows(out)
    assert code == 0
    assert rows == [
        ["id", "cloud", "status", "started_at", "completed_at", "stats", "errors"],
        ["run-2", "c1", "completed", "2026-01-10T02:00:00.000000Z",
         "2026-01-10T02:01:00.000000Z", "created=2 updated=0 deleted=1 error_count=0", "-"],
        ["run-0", "c1", "completed", "2026-01-10T00:00:00.000000Z",
         "2026-01-10T00:01:00.000000Z", "created=0 updated=0 deleted=1 error_count=0", "-"]]
    _, out, _ = run(api, capsys, "--format", "json", "sync-runs")
    assert [r["id"] for r in json.loads(out)] == ["run-2", "run-1", "run-0"]


def test_api_errors_print_status_code_and_message(
        seeded: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--url", seeded.url, "inventory"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("tally: 401 unauthorized: ")

    code, out, err = run(seeded, capsys, "replay", "1", role="read")
    assert (code, out) == (1, "")
    assert err.startswith("tally: 403 forbidden: ")

    code, _, err = run(seeded, capsys, "history", "c1", "instance", "nope")
    assert code == 1
    assert err.startswith("tally: 404 not_found: ")

    code, _, err = run(seeded, capsys, "inventory", "--as-of", "yesterday")
    assert code == 1
    assert err.startswith("tally: 400 bad_request: ")

    token_file = tmp_path / "token"
    token_file.write_text(TOKENS["read"] + "\n")
    assert main(["--url", seeded.url, "--token-file", str(token_file), "inventory"]) == 0
    assert "inst-a" in capsys.readouterr().out
    token_file.write_text("")
    assert main(["--url", seeded.url, "--token-file", str(token_file), "inventory"]) == 2
    assert capsys.readouterr().err == f"tally: token file {token_file} is empty\n"


def test_environment_supplies_url_and_token(
        seeded: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TALLY_URL", seeded.url)
    monkeypatch.setenv("TALLY_TOKEN", TOKENS["read"])
    assert main(["--format", "json", "inventory", "--cloud", "c2"]) == 0
    assert [i["resource_id"] for i in json.loads(capsys.readouterr().out)] == ["inst-e"]


def test_connection_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # A port that was free a moment ago: nothing listens there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    assert main(["--url", url, "sync-runs"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"tally: cannot reach the Reporting API at {url}: connection refused by "
                   f"127.0.0.1:{port} (is the Reporting API running there?)\n")


@pytest.mark.parametrize("argv", [[], ["inventory", "--limit", "0"], ["usage", "--from", "x"],
                                  ["replay"], ["replay", "one"], ["history", "c1", "instance"],
                                  ["inventory", "--page-size", "1001"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: tally" in capsys.readouterr().err


def test_token_file_option_beats_token_environment(
        seeded: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKENS["read"] + "\n")
    monkeypatch.setenv("TALLY_TOKEN", "not-a-token")
    assert main(["--url", seeded.url, "--token-file", str(token_file), "sync-runs"]) == 0
    capsys.readouterr()
    # Without the option the environment's (wrong) token is the one sent.
    assert main(["--url", seeded.url, "sync-runs"]) == 1
    assert capsys.readouterr().err.startswith("tally: 401 unauthorized: ")
    monkeypatch.delenv("TALLY_TOKEN")
    monkeypatch.setenv("TALLY_TOKEN_FILE", str(token_file))
    assert main(["--url", seeded.url, "sync-runs"]) == 0


def test_global_options_also_follow_the_command(
        seeded: Api, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "table", "inventory", "--cloud", "c2", "--url", seeded.url,
                 "--token", TOKENS["read"], "--format", "json"]) == 0
    assert [i["resource_id"] for i in json.loads(capsys.readouterr().out)] == ["inst-e"]
    # Given only before the command, a global option is not reset by the command's parser.
    assert main(["--url", seeded.url, "--token", TOKENS["read"], "--format", "json",
                 "inventory", "--cloud", "c2"]) == 0
    assert [i["resource_id"] for i in json.loads(capsys.readouterr().out)] == ["inst-e"]


def test_a_server_that_is_not_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    # /healthz-like JSON where a list is expected: a clear line, never a traceback.
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = b'{"status": "ok"}' if self.path.startswith("/v1/resources") else b"<html>"
            self.send_response(200 if body.startswith(b"{") else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        assert main(["--url", url, "inventory"]) == 1
        assert capsys.readouterr().err == (f"tally: {url}/v1/resources did not answer a list "
                                           "(is this the Reporting API?)\n")
        assert main(["--url", url, "sync-runs"]) == 1
        assert capsys.readouterr().err == "tally: 404 error: Not Found\n"
    finally:
        server.shutdown()
        thread.join()
