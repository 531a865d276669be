"""Tally's environment aliases: one table (``tally_common.env_aliases``), applied where each
command loads its configuration, each value parsed by its option's own type; the
table in docs/deployment.md is this one; nothing else reads the environment for a
Tally option."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from oslo_config import cfg, types

from collector import opts as collector_opts
from reporting import opts as reporting_opts
from reporting.cmd import ConfigError, load_conf
from tally_common.env_aliases import ENV_ALIASES, EnvAliasError, apply_env_aliases

REPO_ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("mapping", "tally_common", "collector", "reporting", "simcloud",
            "client/tallyclient")
READ_BY = {"collector": "tally-collector",
           "reporting": "tally-reporting, tally-manage, tally-sync, reporting.wsgi"}


def _component_opts() -> dict[str, dict[tuple[str, str], cfg.Opt]]:
    found: dict[str, dict[tuple[str, str], cfg.Opt]] = {}
    for component, listed in (("collector", collector_opts.list_opts()),
                              ("reporting", reporting_opts.list_opts())):
        for group, group_opts in listed:
            name = group if isinstance(group, str) else group.name
            for opt in group_opts:
                found.setdefault(component, {})[(name, opt.dest)] = opt
    return found


def _owner(group: str, option: str) -> tuple[str, cfg.Opt]:
    owners = [(component, by_key[(group, option)])
              for component, by_key in _component_opts().items() if (group, option) in by_key]
    assert len(owners) == 1, (group, option, owners)
    return owners[0]


def _collector_conf(environ: dict[str, str]) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    collector_opts.register_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    apply_env_aliases(conf, environ)
    return conf


def _loaded(component: str, environ: dict[str, str]) -> cfg.ConfigOpts:
    """The configuration as the component's commands load it."""
    if component == "collector":
        return _collector_conf(environ)
    return load_conf([], prog="alias-test", config_files=[], environ=environ)


def _valid_raw(opt: cfg.Opt) -> str:
    """A value the option's type takes and that differs from its default."""
    kind = opt.type
    if isinstance(kind, types.Boolean):
        return "off" if opt.default else "yes"
    if isinstance(kind, (types.Float, types.Integer)):
        return str((kind.min or 0) + 7)
    return "from-the-environment"


def _invalid_raws(opt: cfg.Opt) -> list[str]:
    """Values the option's type refuses, its limits included."""
    kind = opt.type
    if isinstance(kind, types.Boolean):
        return ["perhaps", ""]
    if isinstance(kind, (types.Float, types.Integer)):
        raws = ["soon", ""]
        if kind.min is not None:
            raws.append(str(kind.min - 0.5 if isinstance(kind, types.Float) else kind.min - 1))
        if kind.max is not None:
            raws.append(str(kind.max + 1))
        return raws
    return [""]


def test_every_alias_names_an_option_of_one_component() -> None:
    for group, option in ENV_ALIASES.values():
        _owner(group, option)


@pytest.mark.parametrize("variable", sorted(ENV_ALIASES))
def test_each_alias_reaches_its_option_through_its_type(variable: str) -> None:
    group, option = ENV_ALIASES[variable]
    component, opt = _owner(group, option)
    raw = _valid_raw(opt)
    conf = _loaded(component, {variable: raw})
    value = getattr(conf[group], option)
    assert value == opt.type(raw) and value != opt.default
    assert type(value) is type(opt.type(raw))  # parsed, not the string
    assert getattr(_loaded(component, {})[group], option) == opt.default


@pytest.mark.parametrize(("variable", "raw"), [
    (variable, raw) for variable, (group, option) in sorted(ENV_ALIASES.items())
    for raw in _invalid_raws(_owner(group, option)[1])])
def test_a_value_its_option_refuses_is_refused_naming_the_variable(variable: str,
                                                                   raw: str) -> None:
    group, option = ENV_ALIASES[variable]
    component, _ = _owner(group, option)
    expected = EnvAliasError if component == "collector" else ConfigError
    with pytest.raises(expected) as caught:
        _loaded(component, {variable: raw})
    message = str(caught.value)
    assert message.startswith(f"environment variable {variable}")
    assert f"[{group}] {option}" in message and "\n" not in message


def test_the_limits_are_the_options_own() -> None:
    """budget_s refuses what its FloatOpt's min refuses, and nothing more."""
    _, budget = _owner("sync", "budget_s")
    assert isinstance(budget.type, types.Float)
    minimum = budget.type.min
    assert minimum is not None
    assert _loaded("reporting", {"TALLY_REPORTING_SYNC_BUDGET_S": str(minimum)}).sync.budget_s \
        == minimum
    with pytest.raises(ConfigError, match="greater than or equal to"):
        _loaded("reporting", {"TALLY_REPORTING_SYNC_BUDGET_S": str(minimum - 0.01)})


def test_an_alias_beats_the_file_and_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "tally.conf"
    config.write_text("[sync]\nsettle_s = 5\n")
    conf = load_conf(["--config-file", str(config)], prog="alias-test",
                     environ={"TALLY_REPORTING_SYNC_SETTLE_S": "0"})
    assert conf.sync.settle_s == 0.0


def test_tally_sync_refuses_a_bad_alias_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from reporting.cmd import sync

    monkeypatch.setenv("TALLY_REPORTING_SYNC_BUDGET_S", "0.5")
    config = tmp_path / "tally.conf"
    config.write_text("[sync]\napi_url = http://127.0.0.1:1\n")
    assert sync.main(["--config-file", str(config), "c1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tally-sync: configuration error: environment variable "
        "TALLY_REPORTING_SYNC_BUDGET_S='0.5' is not a valid value for [sync] budget_s: "
        "Should be greater than or equal to 1"]


def test_tally_collector_applies_its_alias_at_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector's cloud comes from TALLY_OSC_CLOUD over the file; an empty one is
    refused in one line."""
    import collector.service
    from collector import cmd
    from collector.errors import ConfigurationError

    seen: dict[str, Any] = {}

    class Stop:
        def __init__(self, conf: cfg.ConfigOpts, **kwargs: Any) -> None:
            seen["cloud"] = conf.collector.cloud
            raise ConfigurationError("stopped by the test")

    monkeypatch.setattr(collector.service, "Collector", Stop)
    config = tmp_path / "collector.conf"
    config.write_text(f"[DEFAULT]\ntransport_url = fake:\n[collector]\ncloud = from-file\n"
                      f"buffer_dir = {tmp_path / 'buffer'}\n")
    monkeypatch.setenv("TALLY_OSC_CLOUD", "from-env")
    assert cmd.main(["--config-file", str(config)]) == 2
    assert seen == {"cloud": "from-env"}
    capsys.readouterr()
    monkeypatch.setenv("TALLY_OSC_CLOUD", "")
    assert cmd.main(["--config-file", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tally-collector: configuration error: environment variable TALLY_OSC_CLOUD is set "
        "but empty: unset it or give it a value for [collector] cloud"]


# --- the documented table ---------------------------------------------------------------

def _values(opt: cfg.Opt) -> str:
    kind = opt.type
    if isinstance(kind, types.Boolean):
        return "`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`"
    if isinstance(kind, (types.Float, types.Integer)):
        noun = "a number" if isinstance(kind, types.Float) else "a whole number"
        limits = [f"at least {kind.min:g}"] if kind.min is not None else []
        limits += [f"at most {kind.max:g}"] if kind.max is not None else []
        return ", ".join([noun, *limits])
    return "text"


def rendered_table() -> str:
    lines = ["| variable | option | read by | value |", "|---|---|---|---|"]
    for variable, (group, option) in ENV_ALIASES.items():
        component, opt = _owner(group, option)
        lines.append(f"| `{variable}` | `[{group}] {option}` | {READ_BY[component]} | "
                     f"{_values(opt)} |")
    return "\n".join(lines) + "\n"


def test_the_deployment_guide_shows_the_table() -> None:
    deployment = (REPO_ROOT / "docs" / "deployment.md").read_text()
    table = rendered_table()
    assert table in deployment, f"docs/deployment.md must hold, under Environment aliases:\n{table}"
    for page in (REPO_ROOT / "docs").rglob("*.md"):
        if page.name != "deployment.md":
            assert "| variable | option |" not in page.read_text(), page  # one table


# --- nothing else reads the environment for a Tally option --------------------------------

# Modules that may read os.environ, and why: none of them reads a Tally option.
ALLOWED_ENVIRON = {
    "reporting/cmd/__init__.py": "load_conf applies the aliases (the reporting commands)",
    "collector/cmd.py": "tally-collector applies the aliases after parsing",
    "reporting/wsgi.py": "TALLY_CONFIG_FILE names the file before any configuration exists",
    "reporting/metrics.py": "PROMETHEUS_MULTIPROC_DIR, prometheus_client's convention",
    "reporting/cmd/serve.py": "sets PROMETHEUS_MULTIPROC_DIR; OS_CLIENT_CONFIG_FILE's line",
    "reporting/openstack/credentials.py": "OS_CLIENT_CONFIG_FILE and OpenStack's OS_*",
    "client/tallyclient/cli/main.py": "the tally client: TALLY_URL, TALLY_TOKEN, TALLY_TOKEN_FILE, OS_CLOUD",
    "simcloud/demo.py": "points OS_CLIENT_CONFIG_FILE at the clouds.yaml it writes",
    "reporting/sync/run_process.py": "a run process inherits the environment (OS_* for the "
    "adapter), less PROMETHEUS_MULTIPROC_DIR; it reads no option from it",
}
_READS_ENVIRON = re.compile(r"\bos\.environ\b|\bgetenv\b|\bfrom os import\b[^\n]*\benviron\b")


def _package_files() -> dict[str, str]:
    return {str(path.relative_to(REPO_ROOT)): path.read_text()
            for package in PACKAGES for path in sorted((REPO_ROOT / package).rglob("*.py"))}


def test_no_other_module_reads_the_environment() -> None:
    readers = {name for name, text in _package_files().items() if _READS_ENVIRON.search(text)}
    assert readers <= set(ALLOWED_ENVIRON), sorted(readers - set(ALLOWED_ENVIRON))
    assert readers == set(ALLOWED_ENVIRON), "prune the list: " + str(
        sorted(set(ALLOWED_ENVIRON) - readers))


def test_an_alias_is_named_only_by_the_table() -> None:
    """No module looks an alias up itself (``environ.get("TALLY_OSC_CLOUD")``, even on
    an environment passed in): its name stands as a string in the table alone."""
    named = []
    for name, text in _package_files().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and node.value in ENV_ALIASES:
                named.append((name, node.value))
    assert sorted({name for name, _ in named}) == ["tally_common/env_aliases.py"], named
