"""One of each: the wire limit, now in the database's form, the resource key and the
ingest entry point are defined once, and everything that needs them imports them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mapping.event import MAX_BATCH

REPO_ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("mapping", "tally_common", "collector", "reporting", "simcloud", "bench",
            "client/tallyclient")


def _sources() -> dict[str, str]:
    return {str(path.relative_to(REPO_ROOT)): path.read_text()
            for package in PACKAGES for path in sorted((REPO_ROOT / package).rglob("*.py"))}


@pytest.mark.parametrize(("pattern", "home"), [
    (r"^MAX_BATCH\s*(?::[^=]*)?=", "mapping/event.py"),
    (r"^_?MAX_REASON(?:_LEN)?\s*(?::[^=]*)?=", "mapping/event.py"),
    (r"^ResourceKey\s*=", "mapping/event.py"),
    (r"^def utcnow\(", "reporting/clock.py"),
])
def test_defined_once(pattern: str, home: str) -> None:
    found = [name for name, text in _sources().items() if re.search(pattern, text, re.M)]
    assert found == [home]


def test_now_as_naive_utc_is_never_written_out_again() -> None:
    inline = re.compile(r"datetime\.now\((?:dt\.)?(?:UTC|timezone\.utc)\)\.replace\(tzinfo=None\)")
    found = [name for name, text in _sources().items()
             if name != "reporting/clock.py" and inline.search(text)]
    assert found == []


def test_the_wire_limit_is_the_one_every_side_uses() -> None:
    from collector.delivery_config import OPTS
    from reporting.api.openapi_write import SCHEMAS

    (batch_size,) = [opt for opt in OPTS if opt.name == "batch_size"]
    assert batch_size.default == batch_size.type.max == MAX_BATCH
    assert SCHEMAS["IngestRequest"]["properties"]["events"]["maxItems"] == MAX_BATCH
    assert SCHEMAS["ReplayRequest"]["properties"]["ids"]["maxItems"] == MAX_BATCH
    assert SCHEMAS["FileRejectedRequest"]["properties"]["items"]["maxItems"] == MAX_BATCH
    literal = re.compile(r"\b1000\b")
    assert not literal.search((REPO_ROOT / "reporting/api/openapi_write.py").read_text())


def test_one_ingest_entry_point() -> None:
    from reporting import ingest

    assert not hasattr(ingest, "ingest_events")
    found = [name for name, text in _sources().items() if re.search(r"\bingest_events\b", text)]
    assert found == []
