"""Numbers typed as text (ports, ids in a path, version numbers)."""

from __future__ import annotations


def ascii_digits(text: str) -> bool:
    """True when ``text`` is one or more of 0-9 only: ``str.isdigit`` alone also takes
    ``²`` and other Unicode digits, which ``int()`` refuses."""
    return text.isascii() and text.isdigit()
