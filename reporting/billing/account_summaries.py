"""Every account's summary of a period (``docs/statements.md``, "Billing accounts"):
each account's statement (``reporting.billing.account_statements.document``) without
its lines, so a summary's totals are the statement's by construction.

A summary keeps the statement's account, period, status, ``not_billable`` (when
present) and ``totals`` as they are, and each section's figures without its lines,
tier lines and adjustments.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import Session

from reporting.billing import account_statements, accounts

# What a summary keeps of a section: everything but its lines, tier lines and
# adjustments (``number`` only where a section carries one).
SECTION_MEMBERS = ("cloud", "project_id", "membership", "from", "to", "status", "currency",
                   "subtotal", "adjustments_total", "total", "unrated_lines", "number")
_TOP_MEMBERS = ("account_id", "period", "status", "provisional", "computed_at",
                "not_billable")


def summary(statement: dict[str, Any]) -> dict[str, Any]:
    """An account statement's summary: its sections without their lines, its totals."""
    top = {name: statement[name] for name in _TOP_MEMBERS if name in statement}
    sections = [{name: item[name] for name in SECTION_MEMBERS if name in item}
                for item in statement["projects"]]
    return {**top, "sections": sections, "totals": statement["totals"]}


def page(session: Session, period: str, now: dt.datetime, after: str | None, limit: int,
         only: str | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The summaries of the accounts after ``after`` by id, at most ``limit``, and
    whether more follow; ``only``: that account's alone (an account reader's)."""
    if only is None:
        names = [row.account_id for row in accounts.listed(session, after, limit + 1)]
    else:
        names = [only] if after is None or only > after else []
    found = [summary(account_statements.document(session, name, period, now))
             for name in names[:limit]]
    return found, len(names) > limit
