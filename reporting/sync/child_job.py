"""What a sync run's process is handed, and what it hands back, as JSON on its pipes.

The run's process is a fresh interpreter (``python -m reporting.sync.child``): it
inherits no configuration, so the parent hands it the value of every option the
child registers (Reporting's and oslo.log's) as the parent resolved them — config
files, environment aliases and ``set_override`` alike — and the child sets each one
as an override.  Nothing is read again from files or the environment, so the run
works with exactly the configuration the service started with.  The job travels on
the child's stdin (never its command line: it holds the database password).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from oslo_config import cfg

from reporting import opts
from reporting.sync.clouds import CloudEntry
from tally_common import logs

OptionValue = tuple[str | None, str, Any]  # (group or None for DEFAULT, option, value)
# oslo.config's own: which files were parsed, not a value the run reads.
_NOT_HANDED = frozenset({"config_file", "config_dir", "config_source"})


def child_conf() -> cfg.ConfigOpts:
    """A parsed ConfigOpts with every option a run's process reads, all at defaults."""
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logs.register_options(conf)
    conf([], project="tally", default_config_files=[], default_config_dirs=[])
    return conf


def _option_names(conf: cfg.ConfigOpts) -> Iterator[tuple[str | None, str]]:
    for key in conf:
        value = conf[key]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for name in value:
                yield key, name
        else:
            yield None, key


def snapshot(conf: cfg.ConfigOpts) -> list[OptionValue]:
    """The parent's value of every option ``child_conf`` registers that ``conf`` has."""
    values: list[OptionValue] = []
    for group, name in _option_names(child_conf()):
        if group is None and name in _NOT_HANDED:
            continue
        try:
            value = conf[group][name] if group else conf[name]
        except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
            continue  # an embedding app that never registered it: the default holds
        values.append((group, name, value))
    return values


def restore(values: list[OptionValue]) -> cfg.ConfigOpts:
    """``child_conf`` with the parent's values set as overrides."""
    conf = child_conf()
    for group, name, value in values:
        conf.set_override(name, value, group=group)
    return conf


@dataclasses.dataclass(frozen=True)
class Job:
    options: list[OptionValue]
    entry: CloudEntry
    run_id: str
    at: dt.datetime  # the told instant, naive UTC
    deadline: float  # time.monotonic(): one clock for every process of the machine
    full: bool = False  # asked for a full run, whatever [sync] full_listing_interval_s says

    def to_json(self) -> bytes:
        return json.dumps({
            "options": self.options,
            "entry": dataclasses.asdict(self.entry),
            "run_id": self.run_id,
            "at": self.at.isoformat(),
            "deadline": self.deadline,
            "full": self.full,
        }).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Job:
        data = json.loads(raw)
        return cls(options=[(g, n, v) for g, n, v in data["options"]],
                   entry=CloudEntry(**data["entry"]), run_id=data["run_id"],
                   at=dt.datetime.fromisoformat(data["at"]), deadline=float(data["deadline"]),
                   full=bool(data.get("full", False)))


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the run's process hands back: the run's stats, and the samples of the
    metrics it moved, which the parent adds to its own (``reporting.sync.child_metrics``)."""

    stats: dict[str, Any]
    metrics: list[tuple[str, dict[str, str], float]]

    def to_json(self) -> bytes:
        return json.dumps({"stats": self.stats, "metrics": self.metrics}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Outcome:
        data = json.loads(raw)
        return cls(stats=data["stats"],
                   metrics=[(name, dict(labels), float(value))
                            for name, labels, value in data["metrics"]])
