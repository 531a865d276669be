"""Every YAML and JSON file under deploy/ and etc/ parses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.unit.ops.catalogue import REPO_ROOT

_SUFFIXES = {".yaml", ".yml", ".json"}


def _data_files() -> list[Path]:
    return sorted(
        path for top in ("deploy", "etc") for path in (REPO_ROOT / top).rglob("*")
        if path.suffix in _SUFFIXES and path.is_file()
    )


def test_there_are_files_to_check() -> None:
    names = {path.relative_to(REPO_ROOT).as_posix() for path in _data_files()}
    assert "etc/prometheus/tally-alerts.yaml" in names
    assert "etc/grafana/tally-dashboard.json" in names
    assert "deploy/kubernetes/base/kustomization.yaml" in names


@pytest.mark.parametrize("path", _data_files(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_parses(path: Path) -> None:
    text = path.read_text()
    if path.suffix == ".json":
        document = json.loads(text)
        assert isinstance(document, dict | list)
    else:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
        assert documents, f"{path} holds no YAML document"
