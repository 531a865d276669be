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


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _REF_KEYWORDS and isinstance(value, str):
                yield value
            elif key not in ("enum", "const", "examples", "default"):  # data, not schema
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _ids(node: Any, top: bool = True) -> Iterator[Any]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$id" and not top:
                yield value
            elif key not in ("enum", "const", "examples", "default"):
                yield from _ids(value, top=False)
    elif isinstance(node, list):
        for value in node:
            yield from _ids(value, top=False)


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
