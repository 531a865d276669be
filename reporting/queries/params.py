"""Parsing of query-string parameters into typed values, 400 on anything else."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from mapping.event import MAX_ID_LEN, TimestampError, parse_timestamp
from reporting.pagination import bad_request
from reporting.pagination import storable_text as storable


def only(args: Mapping[str, str], allowed: frozenset[str]) -> None:
    """Refuse a parameter the endpoint does not know: a misspelt filter must not
    silently answer the unfiltered list."""
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise bad_request(f"unknown query parameter(s): {', '.join(unknown)}")


def instant(args: Mapping[str, str], name: str) -> dt.datetime | None:
    """An RFC 3339 timestamp parameter as a naive UTC datetime (the database's form)."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    try:
        moment = parse_timestamp(raw)
    except TimestampError:
        raise bad_request(
            f"{name} must be an RFC 3339 timestamp with an offset, e.g. 2026-01-31T12:00:00Z"
        ) from None
    return moment.replace(tzinfo=None)


def required_instant(args: Mapping[str, str], name: str) -> dt.datetime:
    moment = instant(args, name)
    if moment is None:
        raise bad_request(f"{name} is required (an RFC 3339 timestamp with an offset)")
    return moment


def boolean(args: Mapping[str, str], name: str) -> bool | None:
    """``true`` / ``false`` (nothing else), None when absent."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    if raw == "true":
        return True
    if raw == "false":
        return False
    raise bad_request(f"{name} must be true or false")


def text(args: Mapping[str, str], name: str) -> str | None:
    """A free-text filter (an id or a name), None when absent."""
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    if len(raw) > MAX_ID_LEN:
        raise bad_request(f"{name} is longer than {MAX_ID_LEN} characters")
    if not storable(raw):
        raise bad_request(f"{name} holds a character no stored value can hold")
    return raw


def choice(args: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise bad_request(f"{name} must be one of {', '.join(choices)}")
    return raw
