"""Size schemas are self-contained: every reference resolves inside the document.

A ``$ref`` to a URL would make the validator fetch it while an ingest request waits
(a silent host hangs the request), and one that resolves nowhere turns every batch
holding the type into a 500.  ``PUT`` refuses both (``ref_problem``); validation runs
with a registry that never retrieves anything (``OFFLINE_REGISTRY``), so a schema stored
before this rule refuses its events with a reason instead of reaching the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema

_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


# Resolves what the document itself holds and nothing else.
OFFLINE_REGISTRY: referencing.Registry[Any] = referencing.Registry(
    retrieve=_refuse_retrieval  # type: ignore[call-arg]
)

UNRESOLVABLE = referencing.exceptions.Unresolvable


# Keywords whose value is data (an instance), never a schema: a "$ref" inside is text.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Keywords whose value maps names (of properties, patterns, definitions) to schemas: a
# name there is not a keyword, so a property called "enum" is a schema like any other.
_NAMED_SCHEMAS = frozenset({
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
    "dependencies",
})


def _keywords(schema: Any, top: bool = True) -> Iterator[tuple[str, Any, bool]]:
    """(keyword, value, whether at the document's root) of every schema object in
    ``schema``, walking subschemas only where a keyword holds one."""
    if isinstance(schema, list):  # allOf, anyOf, prefixItems, ...: a list of schemas
        for value in schema:
            yield from _keywords(value, top=False)
        return
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        yield key, value, top
        if key in _DATA_KEYWORDS:
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            for named in value.values():
                yield from _keywords(named, top=False)
        else:
            yield from _keywords(value, top=False)


def schema_keywords(document: Any) -> Iterator[tuple[str, Any, bool]]:
    """(keyword, value, whether at the root) of every schema object in ``document``."""
    return _keywords(document)


def _refs(document: Any) -> Iterator[str]:
    for key, value, _ in _keywords(document):
        if key in _REF_KEYWORDS and isinstance(value, str):
            yield value


def _ids(document: Any) -> Iterator[Any]:
    for key, value, top in _keywords(document):
        if key == "$id" and not top:
            yield value


def ref_problem(document: dict[str, Any]) -> str | None:
    """Why a (valid) schema's references are unusable, or None."""
    for nested in _ids(document):
        return f"a nested $id ({nested!r}) is not supported: a size schema is one document"
    refs = list(_refs(document))
    for ref in refs:
        if not ref.startswith("#"):
            return f"$ref {ref!r} points outside the document; only local references (#...) are allowed"
    if not refs:
        return None
    cls = jsonschema.validators.validator_for(document, default=jsonschema.Draft202012Validator)
    resource = referencing.jsonschema.specification_with(
        cls.META_SCHEMA["$schema"]).create_resource(document)
    resolver = OFFLINE_REGISTRY.resolver_with_root(resource)
    for ref in refs:
        try:
            resolver.lookup(ref)
        except UNRESOLVABLE:
            return f"$ref {ref!r} resolves to nothing in the document"
    return None
