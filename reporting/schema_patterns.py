"""Size schemas' regular expressions run in linear time, on every path.

A ``pattern`` such as ``^(a+)+$`` makes a backtracking engine (Python's ``re``,
jsonschema-rs's default fancy-regex) take seconds to minutes on a string of thirty
characters.  Every size schema is therefore checked with jsonschema-rs on the
standard Rust regex engine (``LINEAR``: finite automata, linear in the string), and a
document holding a pattern is never explained by Python's jsonschema, whose keywords
call ``re.search``.  ``PUT`` refuses a pattern that engine cannot run (lookaround,
backreferences: ``pattern_problem``); a schema stored before this rule refuses each of
its events with a reason instead of running it on a backtracking engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema_rs

from reporting.schema_refs import schema_keywords

LINEAR = jsonschema_rs.RegexOptions()

UNRUNNABLE = ("the schema holds a pattern the linear-time regex engine cannot run "
              "(lookaround or a backreference); replace the schema (PUT) and replay")


def patterns(document: Any) -> Iterator[str]:
    """Every regular expression of ``document``: ``pattern`` values and the names
    under ``patternProperties``."""
    for key, value, _ in schema_keywords(document):
        if key == "pattern" and isinstance(value, str):
            yield value
        elif key == "patternProperties" and isinstance(value, dict):
            yield from (name for name in value if isinstance(name, str))


def holds_pattern(document: Any) -> bool:
    return next(patterns(document), None) is not None


def pattern_problem(document: Any) -> str | None:
    """Why one of ``document``'s patterns cannot be matched in linear time, or None."""
    for pattern in patterns(document):
        try:
            jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=LINEAR)
        except Exception:  # noqa: BLE001 - the engine refuses it, whatever its error
            return (f"pattern {pattern!r} is not supported: size schema patterns are matched "
                    "in linear time (ECMA-262 without lookaround or backreferences, and "
                    "within the engine's size limit)")
    return None
