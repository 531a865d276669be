"""Plain-text tables: aligned columns under a header, one line per row."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# A column: its header and how a row gives its cell.
Column = tuple[str, Callable[[Mapping[str, Any]], Any]]


def field(name: str) -> Column:
    """The column showing the row's member ``name`` as it is."""
    return name, lambda row: row.get(name)


def compact(value: Any) -> str:
    """A cell's text: ``-`` for null, ``k=v k=v`` for an object, one line always."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        if not value:
            return "-"
        return " ".join(f"{key}={compact(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ",".join(compact(item) for item in value)
    if isinstance(value, float):
        # Usage seconds are exact to the microsecond; never print 1e-06.
        return f"{value:.6f}".rstrip("0").rstrip(".")
    # Newlines or tabs in a value (a rejection reason) would break the alignment.
    return " ".join(str(value).split()) if str(value).strip() else str(value)


def render(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]]) -> str:
    """The table, header first; the last column is not padded."""
    cells = [[compact(cell(row)) for _, cell in columns] for row in rows]
    lines = [[header for header, _ in columns], *cells]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
