"""The first deal of the test schedule (tests/longest_first.py): the known-long groups
open the workers' chunks, spread longest first, and every test is dealt once."""

from __future__ import annotations

from tests.longest_first import chunk_sizes, longest_first

COLLECTION = [f"tests/a/test_{i:02}.py::t" for i in range(20)] + [
    "tests/e2e/test_month.py::t", "tests/k/test_tokens.py::one", "tests/k/test_tokens.py::two",
    "tests/e2e/test_two.py::t"]
LONG = (("tests/e2e/test_two.py", 80), ("tests/e2e/test_month.py", 300),
        ("tests/k/test_tokens.py", 250), ("tests/absent.py", 999))


def _chunks(order: list[int], workers: int) -> list[list[str]]:
    chunks, start = [], 0
    for size in chunk_sizes(len(order), workers):
        chunks.append([COLLECTION[i] for i in order[start:start + size]])
        start += size
    return chunks


def test_chunk_sizes_are_worksteals_first_deal() -> None:
    assert chunk_sizes(24, 4) == [6, 6, 6, 6]
    assert chunk_sizes(10, 4) == [2, 2, 3, 3]
    assert chunk_sizes(2, 4) == [0, 0, 1, 1]


def test_the_long_groups_open_the_chunks_longest_first() -> None:
    order = longest_first(COLLECTION, 4, LONG)
    assert sorted(order) == list(range(len(COLLECTION)))
    chunks = _chunks(order, 4)
    assert chunks[0][0] == "tests/e2e/test_month.py::t"
    assert chunks[1][:2] == ["tests/k/test_tokens.py::one", "tests/k/test_tokens.py::two"]
    assert chunks[2][0] == "tests/e2e/test_two.py::t"
    assert chunks[3] == COLLECTION[14:20]  # the rest, in collection order
    assert chunks[0][1:] == COLLECTION[:5]


def test_two_workers_the_next_group_goes_to_the_lighter_one() -> None:
    chunks = _chunks(longest_first(COLLECTION, 2, LONG), 2)
    assert chunks[0][0] == "tests/e2e/test_month.py::t"
    assert chunks[1][:3] == ["tests/k/test_tokens.py::one", "tests/k/test_tokens.py::two",
                             "tests/e2e/test_two.py::t"]


def test_a_group_too_big_for_any_chunk_stays_in_place() -> None:
    collection = ["tests/k/test_tokens.py::one", "tests/k/test_tokens.py::two", "tests/b.py::t"]
    assert longest_first(collection, 3, LONG) == [0, 1, 2]
