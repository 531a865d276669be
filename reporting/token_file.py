"""Reading a bearer token from a file: its first line, stripped (tally-sync, tally)."""

from __future__ import annotations

from pathlib import Path


class TokenFileError(ValueError):
    """The token file cannot be read or holds no token."""


def read_token_file(path: str) -> str:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise TokenFileError(f"{path}: {exc.strerror}") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise TokenFileError(f"{path} is empty")
    return token
