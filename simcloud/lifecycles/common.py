"""Helpers every resource type's state machine shares."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simcloud.builder import Builder, Project

Owner = tuple[str, str]


@functools.lru_cache(maxsize=64)
def _cumulative(weights: tuple[int, ...]) -> tuple[list[int], int]:
    cum = list(itertools.accumulate(weights))
    return cum, cum[-1]


def pick(rng: Any, options: Sequence[Any], weights: tuple[int, ...]) -> Any:
    """``rng.choices(options, weights)[0]`` without rebuilding the cumulative weights."""
    cum, total = _cumulative(weights)
    return options[bisect.bisect_right(cum, rng.random() * total)]


def ops_until(b: Builder, t: float, death: float | None) -> tuple[float, bool]:
    """The instant of the next operation, and whether it is the deletion."""
    nxt = b.next_op(t)
    limit = death if death is not None else b.end
    if nxt >= limit:
        return (max(death, t + 1.0), True) if death is not None else (math.inf, False)
    return nxt, False


def another_project(rng: Any, projects: list[Project], current: str) -> str:
    if len(projects) < 2:
        return current
    while True:  # O(1) expected, where filtering the list would be O(projects)
        choice = rng.choice(projects).id
        if choice != current:
            return str(choice)
