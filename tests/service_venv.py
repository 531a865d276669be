"""The virtualenvs of the real services the tests run (keystone, nova, glance, cinder).

Each service pins its own dependencies, so each gets a virtualenv of its own, outside
the checkout, built once per machine and reused.  They are built with uv (a test
dependency: the ``uv`` distribution ships its binary): the same packages from the same
index as pip would install, in a fraction of pip's time and CPU (nova's took about four
minutes with pip on this 2-core machine, glance's six).
"""

from __future__ import annotations

import sys
from pathlib import Path

from uv import find_uv_bin

CONSTRAINTS = Path(__file__).with_name("service-constraints.txt")


def base_python() -> str:
    """The interpreter the tests run on, outside any virtualenv."""
    return str(getattr(sys, "_base_executable", sys.executable))


def build_steps(venv: Path, *install_args: str) -> list[list[str]]:
    """The commands that create ``venv`` and install ``install_args`` into it (a list of
    requirements, or ``-r FILE``, with any installer options), under ``CONSTRAINTS``."""
    uv = find_uv_bin()
    return [[uv, "venv", "--quiet", "--python", base_python(), str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
             "--constraint", str(CONSTRAINTS), *install_args]]
