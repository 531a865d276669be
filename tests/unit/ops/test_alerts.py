"""The Prometheus alert rules: the four alerts of docs/deployment.md, each with its runbook, and
only metric and label names the code defines."""

from __future__ import annotations

import re
import typing
from typing import Any

import pytest
import yaml

from tests.unit.ops.catalogue import REPO_ROOT, metric_catalogue, promql_problems, read_promql

RULES_FILE = REPO_ROOT / "etc" / "prometheus" / "tally-alerts.yaml"
REQUIRED_ALERTS = {
    "TallyCloudEventsSilent",
    "TallySyncErrors",
    "TallySyncStale",
    "TallyReconciliationDriftHigh",
    # The collector's disk: items parked there, and a buffer the API does not drain.
    "TallyCollectorParked",
    "TallyCollectorBufferStale",
    # The collector's cloud is one the API's clouds file does not name.
    "TallyCollectorCloudUnknown",
    # The collector's listener has no connection to RabbitMQ (nothing is consumed).
    "TallyCollectorDisconnected",
    # A run's deleted-servers window was clamped: instance deletes dated at the poll.
    "TallySyncDeletionWindowClamped",
    # A close's webhook delivery used up its attempts: the invoicing system was not told.
    "TallyWebhookDeliveryFailed",
}
RUNBOOK_SECTIONS = ("## What it means", "## How to confirm", "## What to do")


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES_FILE.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in _rules() if "alert" in rule}


def test_exactly_the_spec_alerts() -> None:
    assert set(_alerts()) == REQUIRED_ALERTS


@pytest.mark.parametrize("name", sorted(REQUIRED_ALERTS))
def test_alert_has_severity_summary_description(name: str) -> None:
    rule = _alerts()[name]
    assert rule["labels"]["severity"] in {"warning", "critical"}
    assert rule["annotations"]["summary"].strip()
    assert rule["annotations"]["description"].strip()


@pytest.mark.parametrize("name", sorted(REQUIRED_ALERTS))
def test_runbook_exists_and_is_linked(name: str) -> None:
    url = _alerts()[name]["annotations"]["runbook_url"]
    assert url == f"docs/runbooks/{name}.md"
    runbook = REPO_ROOT / url
    assert runbook.is_file(), f"{url} does not exist"
    text = runbook.read_text()
    assert text.splitlines()[0] == f"# {name}"
    for section in RUNBOOK_SECTIONS:
        assert section in text, f"{url} lacks the section {section!r}"


def test_every_runbook_belongs_to_an_alert() -> None:
    runbooks = {path.stem for path in (REPO_ROOT / "docs" / "runbooks").glob("*.md")}
    assert runbooks == REQUIRED_ALERTS


@pytest.mark.parametrize("name", sorted(REQUIRED_ALERTS))
def test_alert_expression_uses_defined_metrics_and_labels(name: str) -> None:
    assert promql_problems(_alerts()[name]["expr"], metric_catalogue()) == []


@pytest.mark.parametrize("name", sorted(REQUIRED_ALERTS))
def test_runbook_queries_use_defined_metrics(name: str) -> None:
    # Every ```promql block of the runbook, with <placeholders> filled in.
    text = (REPO_ROOT / "docs" / "runbooks" / f"{name}.md").read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, flags=re.S)
    assert blocks, f"the runbook of {name} shows no PromQL"
    catalogue = metric_catalogue()
    for block in blocks:
        for query in _split_queries(block.replace("<cloud>", "x")):
            assert promql_problems(query, catalogue) == [], query


def _split_queries(block: str) -> list[str]:
    # Queries of one block are separated by a blank line.
    return [query for query in re.split(r"\n\s*\n", block) if query.strip()]


def test_the_runbook_shows_the_rule_expression() -> None:
    for name, rule in _alerts().items():
        text = (REPO_ROOT / "docs" / "runbooks" / f"{name}.md").read_text()
        expected = {s.metric for s in read_promql(rule["expr"]).metrics}
        block = re.search(r"```promql\n(.*?)```", text, flags=re.S)
        assert block is not None
        assert {s.metric for s in read_promql(block.group(1)).metrics} == expected, name


def test_label_values_are_ones_the_code_uses() -> None:
    from mapping.event import SOURCE_COLLECTOR, SOURCE_RECONCILIATION
    from reporting import ingest
    from reporting.billing.billing_metrics import WEBHOOK_RESULTS
    from reporting.sync.plan import ACTION_STAT

    known = {
        "source": {SOURCE_COLLECTOR, SOURCE_RECONCILIATION},
        "outcome": set(typing.get_args(ingest.Status)),
        "action": set(ACTION_STAT.values()),
        # reporting.sync.runner: a run that recorded errors is failed, else completed.
        "status": {"completed", "failed"},
        "result": set(WEBHOOK_RESULTS),
    }
    for rule in _rules():
        for selector in read_promql(rule["expr"]).metrics:
            for label, operator, value in selector.matchers:
                if operator == "=" and label in known:
                    assert value in known[label], (rule["alert"], label, value)


def test_the_checker_catches_a_misspelt_metric() -> None:
    catalogue = metric_catalogue()
    assert promql_problems(
        'sum by (cloud) (increase(tally_sync_run_total{status="failed"}[30m])) > 0', catalogue
    ) == [
        "metric tally_sync_run_total is not defined by the code",
        "grouping label cloud is on none of the metrics of the expression",
    ]
    assert promql_problems('tally_sync_runs_total{stauts="failed"}', catalogue) == [
        "tally_sync_runs_total has no label stauts"
    ]
    assert promql_problems("sum(rate(tally_ingest_events_total[5m])", catalogue) != []


def test_rules_file_is_the_one_the_promtool_tests_load() -> None:
    tests = yaml.safe_load((RULES_FILE.parent / "tally-alerts.test.yaml").read_text())
    assert tests["rule_files"] == [RULES_FILE.name]
    tested = {case["alertname"] for test in tests["tests"] for case in test["alert_rule_test"]}
    assert tested == REQUIRED_ALERTS


def test_ci_runs_the_promtool_tests() -> None:
    # The rules' own tests run in CI (.ci/run installs promtool when it is missing).
    script = (REPO_ROOT / ".ci" / "run").read_text()
    check = script.index("promtool check rules etc/prometheus/tally-alerts.yaml")
    test = script.index("cd etc/prometheus && promtool test rules tally-alerts.test.yaml")
    assert "apt-get install -y" in script and "prometheus" in script
    assert check < test < script.index("bash tools/run-tests")
    # Inside the fresh clone, on the committed rules, not on the working tree's.
    assert script.index('cd "$clone"') < check
    assert script.count("promtool check rules") == script.count("promtool test rules") == 1
