"""The Grafana dashboard: well-formed, and every query uses metrics and labels the
code defines."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.unit.ops.catalogue import REPO_ROOT, metric_catalogue, promql_problems

DASHBOARD = REPO_ROOT / "etc" / "grafana" / "tally-dashboard.json"
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range", "__range_s"}


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _targets() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{panel['title']}/{target['refId']}", target)
        for panel in _dashboard()["panels"]
        for target in panel.get("targets", [])
    ]


def test_panels_have_unique_ids_and_queries() -> None:
    panels = _dashboard()["panels"]
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel.get("targets"), panel["title"]
            assert panel["datasource"]["uid"] == "${datasource}"


def test_variables_used_are_defined() -> None:
    dashboard = _dashboard()
    defined = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert "datasource" in defined
    for _name, target in _targets():
        for variable in re.findall(r"\$\{?(\w+)", target["expr"]):
            assert variable in defined | GRAFANA_BUILTINS, variable
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            assert promql_problems(_label_values_metric(variable["definition"]),
                                   metric_catalogue()) == []


def _label_values_metric(definition: str) -> str:
    match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", definition)
    assert match is not None, definition
    return f"group by ({match.group(2)}) ({match.group(1)})"


@pytest.mark.parametrize("name,target", _targets(), ids=[name for name, _ in _targets()])
def test_query_uses_defined_metrics_and_labels(name: str, target: dict[str, Any]) -> None:
    expr = target["expr"].replace("$__rate_interval", "5m").replace("$__range", "1d")
    assert promql_problems(expr, metric_catalogue()) == []


def test_panels_do_not_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in _dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]
