"""What the code defines, for checking the operations files against it.

- Prometheus metrics: every sample name that ``reporting.metrics`` and the
  collector's ``CollectorMetrics`` can expose, with its label names.
- oslo.config options: every ``(group, option)`` of a component, from the
  namespaces its ``etc/oslo-config-generator/<component>.conf`` lists (the same
  ones the sample files are generated from).
- Console scripts declared in ``setup.cfg``.
- A small PromQL reader: metric names, label matchers and grouping labels of an
  expression (enough to catch a misspelt name, not a full parser).
"""

from __future__ import annotations

import configparser
import dataclasses
import importlib.metadata
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from oslo_config import cfg
from prometheus_client.metrics import MetricWrapperBase

REPO_ROOT = Path(__file__).resolve().parents[3]

# Labels Prometheus attaches to every scraped series, and the series it makes itself.
TARGET_LABELS = frozenset({"instance", "job"})
PROMETHEUS_SERIES = frozenset({"up"})


# --- metrics ---------------------------------------------------------------------

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "enum": ("",),
}
_EXTRA_LABELS = {"histogram": {"le"}, "summary": {"quantile"}}


def _sample_names(wrapper: MetricWrapperBase) -> dict[str, frozenset[str]]:
    # describe() is public; the label names are only kept on the wrapper.
    labels = set(getattr(wrapper, "_labelnames", ()))
    names: dict[str, frozenset[str]] = {}
    for family in wrapper.describe():
        for suffix in _SUFFIXES[family.type]:
            names[family.name + suffix] = frozenset(labels | _EXTRA_LABELS.get(family.type, set()))
    return names


def _wrappers(namespace: Any) -> Iterator[MetricWrapperBase]:
    for value in vars(namespace).values():
        if isinstance(value, MetricWrapperBase):
            yield value


def metric_catalogue() -> dict[str, frozenset[str]]:
    """Sample name -> label names, for every metric Tally's processes export."""
    import reporting.metrics
    from collector.metrics import CollectorMetrics
    from reporting.billing import billing_metrics

    catalogue: dict[str, frozenset[str]] = {}
    for wrapper in [*_wrappers(reporting.metrics), *_wrappers(billing_metrics),
                    *_wrappers(CollectorMetrics())]:
        catalogue.update(_sample_names(wrapper))
    return catalogue


# --- PromQL --------------------------------------------------------------------------

PROMQL_FUNCTIONS = frozenset("""
abs absent absent_over_time avg avg_over_time bottomk ceil changes clamp clamp_max clamp_min
count count_over_time count_values day_of_month day_of_week day_of_year days_in_month
delta deriv exp floor group group_over_time histogram_quantile holt_winters hour idelta
increase irate label_join label_replace last_over_time ln log10 log2 max max_over_time min
min_over_time minute month predict_linear present_over_time quantile quantile_over_time
rate resets round scalar sgn sort sort_desc sqrt stddev stddev_over_time stdvar
stdvar_over_time sum sum_over_time time timestamp topk vector year
""".split())
_KEYWORDS = frozenset({"and", "or", "unless", "offset", "bool", "by", "without", "on",
                       "ignoring", "group_left", "group_right", "inf", "nan"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_IDENT = re.compile(r"(?<![\w:$.])([A-Za-z_:][\w:]*)")
_MATCHER = re.compile(r'\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*')


@dataclasses.dataclass
class Selector:
    metric: str
    matchers: list[tuple[str, str, str]]  # (label, operator, value)


@dataclasses.dataclass
class PromQL:
    metrics: list[Selector]
    grouping_labels: set[str]
    functions: set[str]
    unknown_words: set[str]


def check_balanced(expr: str) -> None:
    """Raise ValueError when brackets or quotes of ``expr`` do not pair up."""
    text = _STRING.sub('""', expr)
    if text.count('"') % 2:
        raise ValueError(f"unbalanced quote in {expr!r}")
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in pairs:
            if not stack or stack.pop() != pairs[char]:
                raise ValueError(f"unbalanced {char!r} in {expr!r}")
    if stack:
        raise ValueError(f"unclosed {stack[-1]!r} in {expr!r}")


def read_promql(expr: str) -> PromQL:
    """The metric selectors, grouping labels and functions of a PromQL expression."""
    check_balanced(expr)
    text = re.sub(r"\[[^\]]*\]", "", expr)  # range and subquery durations
    grouping: set[str] = set()
    for _keyword, labels in _GROUPING.findall(_STRING.sub('""', text)):
        grouping.update(label.strip() for label in labels.split(",") if label.strip())
    text_wo_grouping = _GROUPING.sub(" ", text)

    selectors: list[Selector] = []
    functions: set[str] = set()
    unknown: set[str] = set()
    position = 0
    masked = _STRING.sub(lambda m: '"' + "x" * (len(m.group()) - 2) + '"', text_wo_grouping)
    while True:
        match = _IDENT.search(masked, position)
        if match is None:
            break
        word = match.group(1)
        position = match.end()
        rest = masked[position:].lstrip()
        if rest.startswith("(") and word not in _KEYWORDS:
            functions.add(word)
            if word not in PROMQL_FUNCTIONS:
                unknown.add(word)
            continue
        if word.lower() in _KEYWORDS:
            continue
        matchers: list[tuple[str, str, str]] = []
        if rest.startswith("{"):
            start = masked.index("{", position)
            end = masked.index("}", start)
            body = text_wo_grouping[start + 1:end]
            for part in _split_matchers(body):
                found = _MATCHER.fullmatch(part)
                if found is None:
                    raise ValueError(f"cannot read label matcher {part!r} in {expr!r}")
                matchers.append((found.group(1), found.group(2), found.group(3)[1:-1]))
            position = end + 1
        selectors.append(Selector(word, matchers))
    return PromQL(selectors, grouping, functions, unknown)


def _split_matchers(body: str) -> list[str]:
    parts, current, quoted, escaped = [], "", False, False
    for char in body:
        if quoted:
            current += char
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
            current += char
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [part for part in parts if part.strip()]


def promql_problems(expr: str, catalogue: dict[str, frozenset[str]]) -> list[str]:
    """Everything in ``expr`` the code does not define: metric names, label names."""
    try:
        query = read_promql(expr)
    except ValueError as exc:
        return [str(exc)]
    problems = [f"unknown PromQL function {name}" for name in sorted(query.unknown_words)]
    used_labels: set[str] = set(TARGET_LABELS)
    tally_metrics = [s for s in query.metrics if s.metric not in PROMETHEUS_SERIES]
    for selector in tally_metrics:
        labels = catalogue.get(selector.metric)
        if labels is None:
            problems.append(f"metric {selector.metric} is not defined by the code")
            continue
        used_labels |= labels
        for label, _op, _value in selector.matchers:
            if label not in labels | TARGET_LABELS:
                problems.append(f"{selector.metric} has no label {label}")
    if not tally_metrics and not query.metrics:
        problems.append(f"no Tally metric in {expr!r}")
    for label in sorted(query.grouping_labels - used_labels):
        problems.append(f"grouping label {label} is on none of the metrics of the expression")
    return problems


# --- oslo.config options -----------------------------------------------------------

def generator_namespaces(component: str) -> list[str]:
    """The oslo.config.opts namespaces of ``component`` (reporting or collector)."""
    # oslo-config-generator files repeat `namespace =`, which configparser refuses.
    path = REPO_ROOT / "etc" / "oslo-config-generator" / f"{component}.conf"
    return [
        line.split("=", 1)[1].strip()
        for line in path.read_text().splitlines()
        if line.strip().startswith("namespace") and "=" in line
    ]


def _entry_point_opts(namespace: str) -> Iterable[tuple[str, list[cfg.Opt]]]:
    (entry_point,) = importlib.metadata.entry_points(group="oslo.config.opts", name=namespace)
    for group, opts in entry_point.load()():
        if group is None:
            name = "DEFAULT"
        elif isinstance(group, cfg.OptGroup):
            name = group.name
        else:
            name = str(group)
        yield name, list(opts)


def component_opts(component: str) -> dict[str, list[cfg.Opt]]:
    """Group name -> options of a component, from every namespace it lists."""
    groups: dict[str, list[cfg.Opt]] = {}
    for namespace in generator_namespaces(component):
        for group, opts in _entry_point_opts(namespace):
            groups.setdefault(group, []).extend(opts)
    return groups


def option_names(component: str) -> set[tuple[str, str]]:
    names: set[tuple[str, str]] = set()
    for group, opts in component_opts(component).items():
        for opt in opts:
            names.add((group, opt.dest))
            names.add((group, opt.name))
    return names


def env_option(variable: str) -> tuple[str, str] | None:
    """``OS_<GROUP>__<OPTION>`` (oslo.config's environment source) -> (group, option)."""
    match = re.fullmatch(r"OS_([A-Z0-9_]+?)__([A-Z0-9_]+)", variable)
    if match is None:
        return None
    group = match.group(1)
    return ("DEFAULT" if group == "DEFAULT" else group.lower(), match.group(2).lower())


def ini_options(text: str) -> list[tuple[str, str]]:
    """(section, key) of every setting of an oslo.config INI file."""
    settings: list[tuple[str, str]] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section is None or "=" not in line:
            raise ValueError(f"not an oslo.config line: {raw!r}")
        settings.append((section, line.split("=", 1)[0].strip()))
    return settings


def load_component_conf(component: str, path: Path) -> cfg.ConfigOpts:
    """Parse ``path`` with every option of ``component`` registered and read each
    option once, so a malformed value raises here.  An option the component does not
    have raises too (oslo.config itself would silently ignore it)."""
    known = option_names(component)
    unknown = [item for item in ini_options(path.read_text()) if item not in known]
    if unknown:
        raise ValueError(f"{path}: options {component} does not have: {unknown}")
    conf = cfg.ConfigOpts()
    for group, opts in component_opts(component).items():
        if group == "DEFAULT":
            conf.register_opts(opts)
        else:
            conf.register_opts(opts, group=group)
    conf(["--config-file", str(path)], project="tally", use_env=False)
    for group, opts in component_opts(component).items():
        for opt in opts:
            getattr(conf if group == "DEFAULT" else conf[group], opt.dest)
    return conf


# --- packaging ---------------------------------------------------------------------

def console_script_targets() -> dict[str, str]:
    """Console script -> its ``module:function`` as setup.cfg declares it."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO_ROOT / "setup.cfg")
    lines = parser["options.entry_points"]["console_scripts"].strip().splitlines()
    return {name.strip(): target.strip()
            for name, _, target in (line.partition("=") for line in lines) if target}


def console_scripts() -> set[str]:
    return set(console_script_targets())
