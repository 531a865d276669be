"""Why a keystone token got no Tally role: the scope is named even when the token
holds no mapped role at all (an unscoped token never holds one)."""

from __future__ import annotations

from reporting.api.keystone_auth import NO_ROLE, TokenScope, scoped_role, strongest_in_scope


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


def test_an_account_reader_needs_a_project_to_find_its_account() -> None:
    role, note = scoped_role("account_reader", TokenScope("system"))
    assert role == NO_ROLE
    assert note is not None and "a system-scoped token names no project" in note, note
    assert scoped_role("account_reader", TokenScope("project", "p1")) == (
        "account_reader", None)
    assert scoped_role("account_reader", TokenScope("admin_project", "p-ops")) == (
        "account_reader", None)
    assert scoped_role("account_reader", TokenScope("domain"))[0] == NO_ROLE


def test_an_account_reader_is_weaker_than_read_and_stronger_than_a_project_reader() -> None:
    project = TokenScope("project", "p1")
    assert strongest_in_scope({"account_reader", "project_reader"}, project)[0] == \
        "account_reader"
    system = TokenScope("system")
    assert strongest_in_scope({"account_reader", "read"}, system) == ("read", None)
    # scoped to a tenant's project, read is cut down to project_reader; the account
    # reader it also holds reads more than that
    assert strongest_in_scope({"read", "account_reader"}, project)[0] == "account_reader"
