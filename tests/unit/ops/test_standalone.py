"""The checkout stands alone: nothing in it cites or reads a document beside it.

A user, a packager or a downstream CI has the repository and nothing else, so no
tracked file may name the sibling directory the project was once developed beside,
cite a product specification's sections or the design notes ("seeds") by name, and
the tests read their data from ``tests/fixtures`` only.  ``.ci/run`` proves the rest
by running the suite from a fresh clone in an otherwise empty directory.

The patterns below are assembled from pieces so that this file does not match them
itself: no file needs an exemption.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES_DIR, REPO_ROOT, load_fixture

_shared_dir = "shared"
_spec_word = "SP" + "EC"
# Each pattern names something only a reader of a document outside the checkout could
# follow.  The word "shared" in prose, "spec" in Kubernetes objects and a world's
# "seed" are ordinary words and stay allowed.
FORBIDDEN: dict[str, re.Pattern[str]] = {
    "a path into the sibling directory": re.compile(rf"{_shared_dir}/"),
    "the sibling directory": re.compile(rf"\.\./{_shared_dir}\b"),
    "the specification": re.compile(rf"\b{_spec_word}\b"),
    "a numbered section of an outside document": re.compile("\u00a7" + r"\s*\d"),
    "the design notes' directory": re.compile(r"\bseeds" + "/"),
    "a design note by name": re.compile(
        "dual-ingestion-and-" + "reconciliation|openstack-notification-" + "mapping"
        "|reconciliation-observes-" + "a-cloud|openstack-" + r"apis\b|STY" + r"LE\.md"
    ),
}

# Never part of a checkout: virtualenvs, caches, build and demo output.
_UNTRACKED_DIRS = {".git", ".tox", "__pycache__", "build", "dist", "demo-run",
                   ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}


def _tracked_files() -> Iterator[Path]:
    """``git ls-files`` in a git checkout; otherwise every file of the tree."""
    if (REPO_ROOT / ".git").exists():
        listed = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "ls-files", "-z"],
            check=True, capture_output=True,
        ).stdout.decode().split("\0")
        for name in listed:
            if name and (REPO_ROOT / name).is_file():
                yield REPO_ROOT / name
        return
    for path in sorted(REPO_ROOT.rglob("*")):
        parts = path.relative_to(REPO_ROOT).parts
        if any(p in _UNTRACKED_DIRS or p.startswith(".venv") or p.endswith(".egg-info")
               for p in parts):
            continue
        if path.is_file():
            yield path


def _offences(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(line):
                found.append(f"{number}: {what}: {line.strip()[:120]}")
    return found


def test_no_tracked_file_cites_a_document_outside_the_checkout() -> None:
    files = list(_tracked_files())
    assert any(p.name == "README.md" for p in files)
    offences = {}
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        found = _offences(text)
        if found:
            offences[path.relative_to(REPO_ROOT).as_posix()] = found
    assert offences == {}


@pytest.mark.parametrize("line", [
    f"see ../{_shared_dir}/fixtures/notifications",
    f"the captures in {_shared_dir}/fixtures",
    f"beside the checkout (../{_shared_dir})",
    f"the verb rule of {_spec_word} \u00a72",
    f"({_spec_word}.md)",
    "(see reference \u00a79)",
    "the seeds" "/ directory",
    "seed ``openstack-" "apis`` pitfall 7",
])
def test_the_guard_catches_citations(line: str) -> None:
    assert _offences(line)


@pytest.mark.parametrize("line", [
    "the pause is shared, so every thread waits",
    "spec = pod_spec(obj); service['spec']['ports']",
    "the same seed and scale give the same world",
    "shared_targets is False",
    "see docs/reconciliation.md",
])
def test_the_guard_lets_ordinary_words_pass(line: str) -> None:
    assert _offences(line) == []


def test_fixtures_are_read_from_the_checkout() -> None:
    assert FIXTURES_DIR.resolve().is_relative_to(REPO_ROOT.resolve())
    assert FIXTURES_DIR.is_dir()
    assert load_fixture("notifications/volume.retype_searchlight.json")["event_type"] == (
        "volume.retype")


def _expand(name: str) -> list[str]:
    """``a.{b,c}.json`` -> ``a.b.json``, ``a.c.json`` (one brace group, as INDEX.md uses)."""
    match = re.search(r"\{([^}]+)\}", name)
    if match is None:
        return [name]
    return [name[:match.start()] + part + name[match.end():]
            for part in match.group(1).split(",")]


def test_every_fixture_has_its_provenance_in_the_index() -> None:
    index = (FIXTURES_DIR / "INDEX.md").read_text()
    listed = {expanded for span in re.findall(r"`([^`\s]+\.json)`", index)
              for expanded in _expand(span)}
    on_disk = {p.relative_to(FIXTURES_DIR).as_posix() for p in FIXTURES_DIR.rglob("*.json")}
    assert on_disk, "the fixtures are in the checkout"
    for path in sorted(on_disk):
        name = path.partition("/")[2]
        assert name in listed, f"{path} has no provenance in INDEX.md"
        json.loads((FIXTURES_DIR / path).read_text())


def test_every_fixture_a_test_names_exists() -> None:
    named = set()
    for source in (REPO_ROOT / "tests").rglob("*.py"):
        text = source.read_text()
        named |= set(re.findall(r"load_fixture\(f?\"((?:notifications|api)/[^\"{]+)\"\)", text))
        named |= {f"api/{n}" for n in re.findall(r"\bapi\(\"([^\"]+\.json)\"\)", text)}
    assert named
    for relative in sorted(named):
        assert (FIXTURES_DIR / relative).is_file(), relative
