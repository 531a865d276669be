"""Tally installs four top-level packages under generic names.

``mapping``, ``collector``, ``reporting`` and ``simcloud`` are names another
distribution could also ship; installed side by side, one would silently replace
the other's files.  Tally is therefore installed into a virtualenv of its own
(docs/deployment.md), and these tests fail when anything else in the environment
claims one of the names.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest

TOP_LEVEL = ("mapping", "collector", "reporting", "simcloud")
REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_each_top_level_name_belongs_to_tally_alone(name: str) -> None:
    owners = set(importlib.metadata.packages_distributions().get(name, []))
    assert owners == {"tally"}, f"{name!r} is provided by {sorted(owners)}, not by tally alone"


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_each_top_level_name_imports_this_tree(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(REPO_ROOT), module.__file__


def test_the_alembic_directory_does_not_shadow_the_library() -> None:
    import alembic

    assert not (REPO_ROOT / "alembic" / "__init__.py").exists()
    assert alembic.__file__ is not None
    assert not Path(alembic.__file__).resolve().is_relative_to(REPO_ROOT / "alembic")
