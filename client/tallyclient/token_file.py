"""Reading a bearer token from a file: its first line, stripped.

The same rule as the server's commands (``tally_common.token_file``), kept here so the
client installs alone; tests/unit/tallyclient/test_shared_rules.py checks they agree.

A token travels in an HTTP header, which carries Latin-1: a character outside it
cannot be sent (or, as UTF-8 bytes, never matches the token the API holds), so such
a token is refused where it is read, at start.
"""

from __future__ import annotations

from pathlib import Path


class TokenFileError(ValueError):
    """The token file cannot be read or holds no usable token."""


def unusable_token_reason(token: str) -> str | None:
    """Why ``token`` can never be presented in an Authorization header, or None."""
    for char in token:
        if ord(char) > 0xFF:
            return (f"holds {char!r} (U+{ord(char):04X}), outside Latin-1: an HTTP header "
                    "cannot carry it, so it could never match")
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"holds the control character U+{ord(char):04X}"
    return None


def read_token_file(path: str) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TokenFileError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise TokenFileError(f"{path} is not UTF-8 text") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise TokenFileError(f"{path} is empty")
    reason = unusable_token_reason(token)
    if reason:
        raise TokenFileError(f"{path}: the token {reason}")
    return token
