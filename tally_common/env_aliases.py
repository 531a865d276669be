"""Tally's environment aliases: one table, applied once where a command loads its
configuration (docs/deployment.md, "Environment aliases").

An alias, when set, overrides its option over every other source (the command
line, oslo.config's ``OS_<GROUP>__<OPTION>`` variables, the files).  Its value is
parsed by the option's own type (``ConfigOpts.set_override`` converts through the
registered ``Opt.type``), so a limit such as ``min=1.0`` is the option's, stated
once; a value the type refuses is an ``EnvAliasError`` naming the variable.

Nothing else reads the environment for a Tally option.  Each command applies the
aliases of the options it registers: an alias of another command's option is not
its business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from oslo_config import cfg

# variable -> (group, option)
ENV_ALIASES: Final[Mapping[str, tuple[str, str]]] = {
    "TALLY_OSC_CLOUD": ("collector", "cloud"),
    "TALLY_INGEST_REQUIRE_SIZE_SCHEMA": ("ingest", "require_size_schema"),
    "TALLY_REPORTING_SYNC_BUDGET_S": ("sync", "budget_s"),
    "TALLY_REPORTING_SYNC_SETTLE_S": ("sync", "settle_s"),
}


class EnvAliasError(ValueError):
    """An alias whose value its option cannot take; the command refuses to start."""


def registered(conf: cfg.ConfigOpts, group: str, option: str) -> bool:
    """Whether ``conf`` has ``[group] option`` (the command reads that option)."""
    return group in conf and option in conf[group]


def apply_env_aliases(conf: cfg.ConfigOpts, environ: Mapping[str, str]) -> None:
    """Override each option of ``conf`` whose alias ``environ`` sets."""
    for variable, (group, option) in ENV_ALIASES.items():
        raw = environ.get(variable)
        if raw is None or not registered(conf, group, option):
            continue
        if raw == "":
            raise EnvAliasError(f"environment variable {variable} is set but empty: unset it "
                                f"or give it a value for [{group}] {option}")
        try:
            conf.set_override(option, raw, group=group)
        except ValueError as exc:
            raise EnvAliasError(f"environment variable {variable}={raw!r} is not a valid "
                                f"value for [{group}] {option}: {exc}") from None
