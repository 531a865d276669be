"""Why a keystone token got no Tally role: the scope is named even when the token
holds no mapped role at all (an unscoped token never holds one)."""

from __future__ import annotations

from reporting.api.keystone_auth import NO_ROLE, TokenScope, strongest_in_scope


def test_an_unscoped_token_without_roles_says_it_is_unscoped() -> None:
    role, note = strongest_in_scope(set(), TokenScope("unscoped"))
    assert role == NO_ROLE
    assert note is not None and note.startswith(
        "an unscoped token (no project, domain or system scope, so no roles) grants "
        "nothing in Tally"), note


def test_a_domain_token_says_so_with_or_without_a_mapped_role() -> None:
    for granted in (set(), {"admin"}):
        role, note = strongest_in_scope(granted, TokenScope("domain"))
        assert role == NO_ROLE
        assert note is not None and note.startswith("a domain-scoped token grants nothing"), note


def test_a_project_token_without_a_mapped_role_has_no_scope_note() -> None:
    # Its scope took nothing away: the 403 is about the missing role alone.
    assert strongest_in_scope(set(), TokenScope("project", "p1")) == (NO_ROLE, None)
