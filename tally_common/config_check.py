"""Settings in the configuration files that the command does not know.

oslo.config reads every section and option of a file and silently ignores what no
code registered: ``[database] conection = postgresql://...`` would leave the real
option at its default.  Every Tally command therefore reads its files again after
start-up and compares them with what it registered:

- an option it does not know in one of Tally's own sections (``[database]``,
  ``[api]``, ``[ingest]``, ``[sync]``, ``[collector]``) that the command reads, or a
  section no Tally command or library of Tally reads (``[databse]``), is an error:
  the command stops with one line naming it (exit status 2);
- an option it does not know in a section owned by a library (``[DEFAULT]`` where
  oslo.log / oslo.messaging register options, ``[oslo_messaging_*]``,
  ``[keystone_authtoken]``, ``[service_credentials]``) is a warning on stderr: those
  libraries register options
  lazily (a driver, an auth plugin) and drop old ones between releases, and oslo's
  own convention is that such a file still starts (``lenient``; tally-collector
  passes none: it registers every oslo.messaging option first, and a misspelt
  ``transport_url`` must not leave it consuming nothing);
- a section the command does not read but another Tally command does (``[collector]``
  in tally-reporting's file, ``[keystone_authtoken]`` for tally-manage) is left to that
  command, which checks it.

This module imports nothing but oslo.config (the collector uses it too).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from collections.abc import Collection, Iterator

from oslo_config import cfg

# Sections Tally's commands register themselves.
TALLY_SECTIONS = frozenset({"database", "api", "ingest", "sync", "collector"})
# Sections owned by a library one of Tally's commands uses, and that library.
LIBRARY_SECTIONS = {
    "DEFAULT": "oslo.log / oslo.messaging",
    "keystone_authtoken": "keystonemiddleware",
    "service_credentials": "keystoneauth1",
    "oslo_messaging_rabbit": "oslo.messaging",
    "oslo_messaging_notifications": "oslo.messaging",
    "oslo_messaging_amqp": "oslo.messaging",
    "oslo_messaging_kafka": "oslo.messaging",
}


class UnknownSettingError(ValueError):
    """An option or section the command does not know; the message is one line."""


@dataclasses.dataclass(frozen=True)
class UnknownSetting:
    path: str
    section: str
    option: str | None  # None: the whole section is unknown

    def describe(self) -> str:
        if self.option is None:
            return f"unknown section [{self.section}] in {self.path}"
        return f"unknown option [{self.section}] {self.option} in {self.path}"


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read, in its order: --config-file, then each --config-dir."""
    files = [path for path in (conf.config_file or []) if os.path.isfile(path)]
    for directory in conf.config_dir or []:
        files.extend(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return files


def _normalize(section: str) -> str:
    # oslo.config's own rule: DEFAULT as written, any other section lower-cased.
    return section if section == "DEFAULT" else section.lower()


def _parsed(path: str) -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = {}
    cfg.ConfigParser(path, sections).parse()
    return sections


def _known_options(conf: cfg.ConfigOpts, section: str) -> set[str] | None:
    """The option names (current and deprecated) registered in ``section``; None when
    the command did not register that section at all."""
    # No public accessor lists registered options without reading their values.
    if section == "DEFAULT":
        infos = conf._opts  # noqa: SLF001
    else:
        group = conf._groups.get(section)  # noqa: SLF001
        if group is None:
            return None
        infos = group._opts  # noqa: SLF001
    known: set[str] = set()
    for info in infos.values():
        opt = info["opt"]
        known.add(opt.dest)
        for old in opt.deprecated_opts:
            if old.name and _normalize(old.group or section) == section:
                known.add(old.name.replace("-", "_"))
    return known


def unknown_settings(conf: cfg.ConfigOpts) -> Iterator[UnknownSetting]:
    """Every section and option of the files that ``conf`` does not register."""
    for path in config_files(conf):
        for raw_section, options in _parsed(path).items():
            section = _normalize(raw_section)
            known = _known_options(conf, section)
            if known is None:
                yield UnknownSetting(path, raw_section, None)
                continue
            for option in options:
                if option not in known:
                    yield UnknownSetting(path, raw_section, option)


def check_config_files(
    conf: cfg.ConfigOpts,
    *,
    lenient: Collection[str] = tuple(LIBRARY_SECTIONS),
    only: Collection[str] | None = None,
) -> list[str]:
    """Raise UnknownSettingError for the first setting that must stop the command;
    return one warning line per setting the command tolerates.

    ``lenient``: the sections where an unknown option is a warning (library-owned).
    ``only``: look at the options of these sections alone (a library registers its
    options when it is loaded, so its sections are checked once it has been); an
    unknown section is an error whatever ``only`` says.
    """
    warnings: list[str] = []
    for setting in unknown_settings(conf):
        section = _normalize(setting.section)
        if setting.option is None:
            if section in TALLY_SECTIONS or section in LIBRARY_SECTIONS:
                continue  # another Tally command (or its library) reads it
            raise UnknownSettingError(
                f"{setting.describe()} (no Tally command reads it: misspelt?)")
        if only is not None and section not in only:
            continue
        if section in lenient:
            owner = LIBRARY_SECTIONS.get(section, "a library")
            warnings.append(f"WARNING: {setting.describe()}: not an option of {owner} "
                            "as installed; it is ignored")
            continue
        raise UnknownSettingError(f"{setting.describe()} (misspelt?)")
    return warnings


_URL_PASSWORD = re.compile(r"(?P<user>(?://|,)[^:@/,]*):(?P<password>[^@/,]*)@")


def redact_url(url: str | None) -> str:
    """``url`` with every password replaced by ``***`` (rabbit URLs may list several
    hosts, each with its credentials)."""
    if not url:
        return "(not set)"
    return _URL_PASSWORD.sub(lambda m: f"{m.group('user')}:***@", url)
