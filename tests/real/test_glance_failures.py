"""The glance part of the tier fails, never skips, when glance cannot start."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.real.test_glance import RealGlance


def test_a_glance_that_cannot_start_fails_with_its_output(tmp_path: Path) -> None:
    # Tally's own python has no glance: neither glance-manage nor glance's modules.
    with pytest.raises(pytest.fail.Exception) as failed:
        RealGlance(Path(sys.executable), tmp_path / "glance", "rabbit://127.0.0.1:1/",
                   "http://127.0.0.1:1/identity", "glance-unused")
    assert "glance failed waiting for glance-api to start" in str(failed.value)
    assert "glance-manage" in str(failed.value)
