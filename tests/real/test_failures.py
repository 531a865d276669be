"""The tier fails, never skips, when nova cannot be installed or started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.real.conftest import RealNova
from tests.real.service_process import build_venv


def test_an_install_the_installer_cannot_do_fails_with_its_words(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tally-no-such-distribution==0\n")
    log = tmp_path / "install.log"
    with pytest.raises(pytest.fail.Exception) as failed:
        # --no-index: the installer decides from nothing, offline and at once.
        build_venv(tmp_path / "venv", log, requirements, pip_args=("--no-index",))
    assert "installing nova into" in str(failed.value)
    assert "tally-no-such-distribution" in str(failed.value)


def test_a_nova_that_cannot_start_fails_with_its_output(tmp_path: Path) -> None:
    # Tally's own python has no nova: the driver dies on its first import.
    with pytest.raises(pytest.fail.Exception) as failed:
        RealNova(Path(sys.executable), tmp_path, "rabbit://127.0.0.1:1/",
                 "http://127.0.0.1:1/identity", "nova-unused")
    assert "nova exited (1)" in str(failed.value)
    assert "No module named 'nova'" in str(failed.value)
