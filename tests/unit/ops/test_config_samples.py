"""The checked-in ``etc/tally/*.conf.sample`` files are what oslo-config-generator
makes of today's options (``tools/check-config-samples`` does the same outside
pytest, and ``--write`` regenerates them): an option added without regenerating its
sample fails here."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from oslo_config import generator

ROOT = Path(__file__).resolve().parents[3]
GENERATORS = sorted((ROOT / "etc" / "oslo-config-generator").glob("*.conf"))


def test_there_are_samples_to_check() -> None:
    assert {path.stem for path in GENERATORS} == {"collector", "reporting"}


@pytest.mark.parametrize("config", GENERATORS, ids=[path.stem for path in GENERATORS])
def test_the_sample_is_what_the_generator_makes_of_the_options(
        config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the generator files name their output relative to it
    made = tmp_path / f"{config.stem}.conf.sample"
    generator.main(["--config-file", str(config), "--output-file", str(made)])
    sample = ROOT / "etc" / "tally" / f"{config.stem}.conf.sample"
    diff = "".join(difflib.unified_diff(
        sample.read_text().splitlines(keepends=True), made.read_text().splitlines(keepends=True),
        str(sample.relative_to(ROOT)), "generated"))
    assert not diff, f"{sample.name} is stale: run tools/check-config-samples --write\n{diff}"
