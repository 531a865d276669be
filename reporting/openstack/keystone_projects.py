"""Keystone's projects and their domains, for each project's default billing account
(``adapter_config`` ``accounts_by_domain``).

``GET /v3/projects`` lists every project the credentials may see (keystone's
``identity:list_projects``: an admin, or a system reader).  Keystone does not page
it; with ``[DEFAULT] list_limit`` set it cuts the list and says ``"truncated":
true``, and then the projects beyond the cut are missing, said so, never guessed.
Projects acting as domains (``is_domain``) are not listed by default and are
skipped if they are.
"""

from __future__ import annotations

from typing import Any

from reporting.openstack.http import ServiceClient

# Why the account's credentials could not list them, as an operator fixes it.
NEEDS = ("the clouds.yaml entry's credentials need keystone's identity:list_projects "
         "(an admin, or a system-scoped reader)")


def project_domains(identity: ServiceClient) -> tuple[dict[str, str], list[str]]:
    """Each listed project's domain id, and what made the list incomplete.  Raises
    the listing's errors (``reporting.openstack.adapter.LISTING_ERRORS``)."""
    body = identity.get_json(identity.versioned("v3", "projects"))
    if not isinstance(body, dict) or not isinstance(body.get("projects"), list):
        raise ValueError("keystone's project list answered without a projects list")
    found: dict[str, str] = {}
    problems: list[str] = []
    for item in body["projects"]:
        if not isinstance(item, dict) or item.get("is_domain") is True:
            continue
        project, domain = item.get("id"), item.get("domain_id")
        if isinstance(project, str) and project and isinstance(domain, str) and domain:
            found[project] = domain
        else:
            problems.append(f"keystone listed a project without an id and a domain_id: "
                            f"{_short(item)}")
    if body.get("truncated") is True:
        problems.append(f"keystone cut its project list at {len(body['projects'])} "
                        "projects (its [DEFAULT] list_limit): the projects beyond it get "
                        "no default account until it lists them all")
    return found, problems


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 200 else text[:200] + "…"
