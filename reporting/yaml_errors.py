"""Where a YAML file an operator wrote is broken: one line, with its line and column."""

from __future__ import annotations

import yaml


def where_and_why(exc: yaml.YAMLError) -> str:
    """`` at line L, column C: problem`` (without the position when PyYAML has none)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{where}: {problem}"
