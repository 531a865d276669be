"""The cinder part of the tier fails, never skips, when cinder cannot start."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.real.test_cinder import RealCinder


def test_a_cinder_that_cannot_start_fails_with_its_output(tmp_path: Path) -> None:
    # Tally's own python has no cinder: the driver dies on its first import.
    with pytest.raises(pytest.fail.Exception) as failed:
        RealCinder(Path(sys.executable), tmp_path / "cinder", "rabbit://127.0.0.1:1/",
                   "http://127.0.0.1:1/identity", "cinder-unused")
    assert "cinder exited (1)" in str(failed.value)
    assert "No module named 'cinder'" in str(failed.value)
