"""docs/developer.md "The house": its picture is the code's package import graph, and
every path its notification walk and its "to change X, start in Y" table name exists."""

from __future__ import annotations

import importlib.util
import re
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

import grimp

REPO_ROOT = Path(__file__).resolve().parents[3]
DEVELOPER = REPO_ROOT / "docs" / "developer.md"


def _tool() -> ModuleType:
    path = REPO_ROOT / "tools" / "house-picture"
    loader = SourceFileLoader("house_picture", str(path))
    spec = importlib.util.spec_from_loader("house_picture", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _house_section() -> str:
    text = DEVELOPER.read_text()
    return text[text.index("## The house\n"):text.index("## Layout\n")]


def test_the_picture_is_the_code_import_graph() -> None:
    tool = _tool()
    picture = tool.render(tool.build())
    assert f"<!-- house-picture: begin -->\n{picture}<!-- house-picture: end -->" in \
        DEVELOPER.read_text(), ("docs/developer.md's picture differs from the code: paste "
                                "the output of `PYTHONPATH=.:client python3 tools/house-picture`")


def test_the_picture_draws_every_package_and_the_client_alone() -> None:
    tool = _tool()
    graph = tool.build()
    names = tool.boxes(graph)
    assert {"mapping", "tally_common", "collector", "simcloud", "tallyclient",
            "reporting.core", "reporting.api", "reporting.billing"} <= set(names)
    edges = tool.package_edges(graph)
    assert not [edge for edge in edges if "tallyclient" in edge], edges
    assert ("collector", "mapping") in edges


def test_the_picture_follows_a_new_import() -> None:
    """An import between two packages becomes an arrow (the check can fail)."""
    tool = _tool()
    graph = grimp.ImportGraph()
    for name in ("mapping", "mapping.event", "reporting", "reporting.ingest",
                 "reporting.api", "reporting.api.events", "tallyclient", "tallyclient.cli"):
        graph.add_module(name)
    graph.add_import(importer="reporting.api.events", imported="reporting.ingest")
    before = tool.render(graph)
    assert "reporting_api --> reporting_core" in before
    assert "reporting_core --> mapping" not in before
    graph.add_import(importer="reporting.ingest", imported="mapping.event")
    assert "reporting_core --> mapping" in tool.render(graph)


def _named_paths(text: str) -> list[str]:
    """The backticked repository paths: a top-level directory, a file or a folder."""
    tops = {p.name for p in REPO_ROOT.iterdir()}
    found = []
    for quoted in re.findall(r"`([^`\s]+)`", text):
        if "/" in quoted and quoted.split("/")[0] in tops or quoted in tops:
            found.append(quoted)
    return found


def test_every_path_the_house_names_exists() -> None:
    paths = _named_paths(_house_section())
    assert len(paths) >= 40, paths  # the walk and the table both name files
    missing = [path for path in paths if not (REPO_ROOT / path).exists()]
    assert missing == []


def test_the_table_has_a_row_for_each_usual_change() -> None:
    section = _house_section()
    table = section[section.index("### To change X, start in Y"):]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 15
    for row in rows:
        start = row.split("|")[2]
        assert _named_paths(start), f"a row names no place to start: {row}"


def test_a_missing_path_is_found() -> None:
    assert _named_paths("see `mapping/no_such_module.py` and `docs/cli.md`") == [
        "mapping/no_such_module.py", "docs/cli.md"]
