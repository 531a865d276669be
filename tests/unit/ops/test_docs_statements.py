"""Statements of the operator docs that the code must keep true: status codes, exit
codes, the one-line start-up failure, file names, who reads OpenStack's clouds.yaml,
the budget alias of tally-sync, the metrics and columns the docs name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests_mock as rm

from reporting.cmd import sync as sync_cmd
from tests.unit.ops import catalogue
from tests.unit.ops.test_systemd import _environment, _service
from tests.unit.reporting.fixtures import tokens_file  # noqa: F401 (fixture)

DOCS = catalogue.REPO_ROOT / "docs"
BIN = Path(sys.executable).parent


def _text(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())


def test_an_unavailable_database_is_503_as_documented(tokens_file: str) -> None:  # noqa: F811
    operations = _text("operations.md")
    assert "requests that need it answer 503 (`database_unavailable`)" in operations
    assert "answer 500" not in operations
    from reporting.app import create_app
    from reporting.cmd import load_conf
    from reporting.db.session import ENGINE_KEY
    from tests.unit.reporting.fixtures import auth

    conf = load_conf([], prog="docs-test", config_files=[])
    conf.set_override("connection", "postgresql+psycopg://postgres@127.0.0.1:1/none",
                      group="database")
    conf.set_override("tokens_file", tokens_file, group="api")
    app = create_app(conf)
    try:
        response = app.test_client().get("/v1/resources", headers=auth("read"))
    finally:
        app.extensions[ENGINE_KEY].dispose()
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "database_unavailable"


MISSPELT = {
    "tally-reporting": "[database]\nconection = sqlite://\n",
    "tally-manage": "[database]\nconection = sqlite://\n",
    "tally-sync": "[sync]\napi_ur = http://127.0.0.1:8779\n",
    "tally-collector": "[DEFAULT]\ntransport_url = fake:\n[collector]\ncloud = c\n"
                       "reportin_url = http://127.0.0.1:8779\n",
}


@pytest.mark.parametrize("command", sorted(MISSPELT))
def test_startup_failures_are_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    """deployment.md: 'stops a command at start with one line naming the option
    (exit status 2)'; collector.md and operations.md say the same."""
    assert "stops a command at start with one line naming the option (exit status 2)" in \
        _text("deployment.md")
    config = tmp_path / "tally.conf"
    config.write_text(MISSPELT[command])
    extra = ["db", "current"] if command == "tally-manage" else []
    result = subprocess.run([str(BIN / command), "--config-file", str(config), *extra],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{command}: configuration error: unknown option ")


def _deploy_files() -> list[Path]:
    root = catalogue.REPO_ROOT / "deploy"
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_tallys_clouds_file_has_its_own_name_everywhere() -> None:
    named: list[str] = []
    for path in _deploy_files():
        for match in re.finditer(r"OS_SYNC__CLOUDS_FILE\s*\n?\s*value: (\S+)", path.read_text()):
            named.append(match.group(1))
    named += re.findall(r"clouds_file = (\S+)", (DOCS / "deployment.md").read_text())
    assert named and all(Path(value).name == "tally-clouds.yaml" for value in named), named
    assert (catalogue.REPO_ROOT / "etc" / "tally" / "tally-clouds.yaml.example").is_file()
    for page in DOCS.glob("*.md"):
        text = page.read_text()
        assert "clouds-file.yaml" not in text, page.name
        assert not re.search(r"clouds_file = \S*/clouds\.yaml", text), page.name


def test_one_name_for_the_configuration_file() -> None:
    for page in [*DOCS.glob("*.md"), catalogue.REPO_ROOT / "README.md"]:
        assert "/etc/tally/reporting.conf" not in page.read_text(), page.name
    for unit in ("tally-reporting", "tally-sync"):
        assert "--config-file /etc/tally/tally.conf" in " ".join(_service(unit + ".service")["ExecStart"])


def test_only_the_reporting_api_reads_openstacks_clouds_yaml() -> None:
    assert "Only `tally-reporting` needs it" in _text("deployment.md")
    assert _environment(_service("tally-reporting.service"))["OS_CLIENT_CONFIG_FILE"] == \
        "/etc/openstack/clouds.yaml"
    for unit in ("tally-collector", "tally-sync"):
        assert "OS_CLIENT_CONFIG_FILE" not in _environment(_service(unit + ".service"))
    cronjob = (catalogue.REPO_ROOT / "deploy" / "kubernetes" / "components" / "reconciliation"
               / "sync-cronjob.yaml").read_text()
    assert "OS_CLIENT_CONFIG_FILE" not in cronjob


def test_tally_sync_follows_the_budget_alias(tmp_path: Path, requests_mock: rm.Mocker,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    deployment = _text("deployment.md")
    assert "tally-reporting and tally-sync both apply them" in deployment
    assert "file's `budget_s`" not in deployment
    monkeypatch.setenv("TALLY_REPORTING_SYNC_BUDGET_S", "100")
    config = tmp_path / "tally.conf"
    config.write_text("[sync]\napi_url = http://127.0.0.1:8779\nbudget_s = 45\n"
                      "auth_strategy = noauth\n")
    requests_mock.post("http://127.0.0.1:8779/internal/sync/c1",
                       json={"id": "r", "stats": {"created": 0, "updated": 0, "deleted": 0,
                                                  "deferred": {"recent": 0}}})
    assert sync_cmd.main(["--config-file", str(config), "c1"]) == 0
    assert requests_mock.last_request.timeout == 100 + sync_cmd.RESPONSE_MARGIN_S


def test_the_metrics_and_columns_the_docs_name_exist() -> None:
    metrics = catalogue.metric_catalogue()
    assert "tally_ingest_replayed_events_total" in _text("deployment.md")
    assert "tally_ingest_replayed_events_total" in metrics
    assert "`openstack_event_type`" in _text("cli.md")
    from tallyclient.cli import commands

    source = Path(commands.__file__).read_text()
    assert '("openstack_event_type", _provider_event_type)' in source


def _section(page: str, title: str) -> str:
    text = (DOCS / page).read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def _code_blocks(text: str) -> str:
    return "\n".join(re.findall(r"```\w*\n(.*?)```", text, flags=re.S))


# A Tally command called with an option: what a reader types.
_TALLY_CALL = re.compile(r"(\S*?)\b(tally(?:-manage|-reporting|-sync|-collector|-simcloud)?)"
                         r"\s+(?=--)")


def test_the_bare_metal_path_calls_every_tally_command_by_its_virtualenv_path() -> None:
    """The path installs into /opt/tally and puts nothing on PATH."""
    bare_metal = _section("deployment.md", "Bare metal, start to finish")
    systemd_code = _code_blocks(_section("deployment.md", "systemd"))
    for where, text in (("bare metal", bare_metal), ("systemd", systemd_code)):
        calls = _TALLY_CALL.findall(text)
        assert calls, where
        for prefix, command in calls:
            assert prefix.endswith("/opt/tally/bin/"), f"{where}: {prefix}{command}"
        for line in text.splitlines():
            if "pip install" in line:
                assert "/opt/tally/bin/pip install" in line, f"{where}: {line}"
    assert "on PATH" not in systemd_code


def test_the_bare_metal_path_makes_the_database_as_postgres() -> None:
    bare_metal = _section("deployment.md", "Bare metal, start to finish")
    calls = re.findall(r"(.{0,24})\b(createuser|createdb)\b", bare_metal)
    assert {command for _, command in calls} == {"createuser", "createdb"}
    for before, command in calls:
        assert before.endswith(("sudo -u postgres ", "runuser -u postgres -- ")), before + command


def test_the_bare_metal_path_has_the_broker_notification_and_openstack_steps() -> None:
    from collector.listener import OPTS

    bare_metal = _section("deployment.md", "Bare metal, start to finish")
    assert "rabbitmqctl add_user tally" in bare_metal
    assert "rabbitmqctl set_permissions" in bare_metal
    assert "[oslo_messaging_notifications]\n   driver = messagingv2" in bare_metal
    assert "(collector.md#rabbitmq)" in bare_metal and "\n## RabbitMQ\n" in (
        DOCS / "collector.md").read_text()
    topics = re.search(r"\n   topics = (\S+)\n", bare_metal)
    default = next(opt.default for opt in OPTS if opt.name == "topics")
    assert topics is not None and topics.group(1).split(",") == default
    clouds_yaml = _environment(_service("tally-reporting.service"))["OS_CLIENT_CONFIG_FILE"]
    assert f"install -d -m 0750 -o root -g tally {Path(clouds_yaml).parent}\n" in bare_metal
    assert f"{clouds_yaml}\n" in bare_metal


def test_the_readyz_answer_the_docs_show_is_what_it_prints(
        tokens_file: str, tmp_path: Path, sqlite_migrated_template: Path) -> None:  # noqa: F811
    import shutil

    from reporting.app import create_app
    from reporting.cmd import load_conf
    from reporting.db.session import ENGINE_KEY

    shutil.copyfile(sqlite_migrated_template, tmp_path / "tally.sqlite")
    conf = load_conf([], prog="docs-test", config_files=[])
    conf.set_override("connection", f"sqlite:///{tmp_path / 'tally.sqlite'}", group="database")
    conf.set_override("tokens_file", tokens_file, group="api")
    app = create_app(conf)
    try:
        body = app.test_client().get("/readyz").get_data(as_text=True).strip()
    finally:
        app.extensions[ENGINE_KEY].dispose()
    bare_metal = " ".join(_section("deployment.md", "Bare metal, start to finish").split())
    assert f"`curl -s 127.0.0.1:8779/readyz` prints `{body}`" in bare_metal


def test_the_statement_csv_and_billing_errors_are_as_documented() -> None:
    """statements.md gives the CSV header and the codes a billing request can answer."""
    from reporting.api import billing_common, periods, statements

    page = (DOCS / "statements.md").read_text()
    assert ",".join(statements.CSV_FIELDS) + "\n" in page
    assert "`409 period_not_started`" in page and "`404 unknown_cloud`" in page
    assert '"period_not_started"' in Path(billing_common.__file__).read_text()
    assert '"unknown_cloud"' in Path(periods.__file__).read_text()
