"""Documents an operator writes (a price list for ``tally price-list put``), read with
every member name once, and where a broken one is broken.

JSON and YAML both let a later duplicate key silently replace an earlier one
(``0.005`` then ``0.500`` for the same flavor: the second wins); a price list read that
way bills what nobody reviewed.  These readers refuse a duplicate, naming the key and
the line and column of its second occurrence.  The server reads the documents it is
sent the same way (``reporting.unique_keys``, ``reporting.yaml_errors``); the client
installs alone, so it keeps its own, and tests/unit/tallyclient/test_shared_rules.py
checks that the two agree.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from typing import Any

import yaml

# The standard library's own pieces of its pure-Python parser (not in its stubs).
_WHITESPACE = json.decoder.WHITESPACE  # type: ignore[attr-defined]
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_json_object = json.decoder.JSONObject  # type: ignore[attr-defined]


class DuplicateKeyError(ValueError):
    """A member name written twice in one object or mapping."""

    def __init__(self, key: str, line: int, column: int) -> None:
        super().__init__(f"duplicate key {key!r} at line {line}, column {column}")
        self.key, self.line, self.column = key, line, column


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _member_starts(text: str, index: int, decoder: json.JSONDecoder) -> list[tuple[str, int]]:
    """Each member name of the object whose ``{`` ends at ``index``, with where its
    quote stands (the object is valid JSON: it has been parsed already)."""
    space = _WHITESPACE.match
    found = []
    index = space(text, index).end()
    while text[index] == '"':
        key, after = _scanstring(text, index + 1)
        found.append((key, index))
        index = space(text, space(text, after).end() + 1).end()  # past the colon
        index = space(text, decoder.raw_decode(text, index)[1]).end()
        if text[index] == ",":
            index = space(text, index + 1).end()
    return found


def loads_json(text: str, **options: Any) -> Any:
    """``json.loads(text, **options)``, refusing a duplicate key (DuplicateKeyError, a
    ValueError).  The standard library's pure-Python scanner: for documents an operator
    writes, not for bulk input."""
    plain = json.JSONDecoder(**options)
    decoder = json.JSONDecoder(**options)

    def parse_object(state: tuple[str, int], *args: Any) -> tuple[Any, int]:
        text_, start = state
        pairs, end = _json_object(state, args[0], args[1], None, list, *args[4:])
        keys = [key for key, _value in pairs]
        if len(set(keys)) != len(keys):
            seen: set[str] = set()
            for key, index in _member_starts(text_, start, plain):
                if key in seen:
                    raise DuplicateKeyError(key, *_position(text_, index))
                seen.add(key)
        hook = options.get("object_pairs_hook")
        return (hook(pairs) if hook else dict(pairs)), end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(text)


class DuplicateYamlKey(yaml.constructor.ConstructorError):
    """A YAML mapping naming a key twice (its mark: the second key)."""


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader refusing a mapping that names a key twice (a ConstructorError whose
    mark is the second key's line and column); a merge (``<<``) may still override."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                break
            if duplicate:
                raise DuplicateYamlKey(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def where_and_why(exc: yaml.YAMLError) -> str:
    """`` at line L, column C: problem`` (without the position when PyYAML has none)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{where}: {problem}"
