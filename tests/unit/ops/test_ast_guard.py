"""The tests' ``ast.parse`` survives a parse re-entered from a garbage collection
(``tests/ast_guard.py``), which CPython 3.11's own fails."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import ast_guard

SOURCE = "\n".join(f"x{i} = [{i}, ({i}, {i})]" for i in range(200))


class _ParsesWhenCollected:
    """Garbage in a cycle whose finalizer parses, as a pool logging a traceback does."""

    def __init__(self, parse: Callable[[str], Any]) -> None:
        self.parse = parse
        self.me = self

    def __del__(self) -> None:
        self.parse("a + b")


@pytest.fixture
def collecting_inside_the_parse() -> Iterator[None]:
    """A collection every 100 allocations: never inside the guard's few before it
    parses, always inside the thousands of nodes the parse builds."""
    old = gc.get_threshold()
    gc.set_threshold(100)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _parse_with_garbage_about(parse: Callable[[str], Any]) -> None:
    for _ in range(20):
        gc.collect()  # the count starts from nothing, so the garbage below waits
        _ParsesWhenCollected(parse)
        parse(SOURCE)


@pytest.mark.usefixtures("collecting_inside_the_parse")
def test_the_unguarded_parse_fails_so_the_setup_reproduces_the_bug() -> None:
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        _parse_with_garbage_about(ast_guard._parse)


@pytest.mark.usefixtures("collecting_inside_the_parse")
def test_the_guarded_parse_does_not() -> None:
    _parse_with_garbage_about(ast_guard._parse_one_at_a_time)


def test_the_guard_is_what_the_tests_parse_with() -> None:
    import ast
    assert ast.parse is ast_guard._parse_one_at_a_time
