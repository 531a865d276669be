"""Operator documents read with each member name once (JSON and YAML)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from reporting.billing import pricelist
from reporting.unique_keys import DuplicateKeyError, UniqueKeyLoader, loads_json
from tallyclient.cli.billing import DocumentError, read_document

FLAVORS_JSON = """{"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
 "rates": {"instance": {"per": "hour",
                        "by_flavor": {"m1.small": 0.005,
                                      "m1.small": 0.500}}}}
"""
FLAVORS_YAML = """\
effective_from: 2026-10-01T00:00:00Z
currency: EUR
rates:
  instance:
    per: hour
    by_flavor:
      m1.small: 0.005
      m1.small: 0.500
"""


def test_json_with_unique_keys_reads_as_the_standard_library_does() -> None:
    text = '{"a": {"b": [1, {"c": "d"}], "e": 1.50}, "f": null, "\\u00e9": true}'
    assert loads_json(text) == json.loads(text)
    assert loads_json(text, parse_float=str) == json.loads(text, parse_float=str)


@pytest.mark.parametrize(("text", "key", "line", "column"), [
    (FLAVORS_JSON, "m1.small", 4, 39),
    ('{"a": 1, "a": 2}', "a", 1, 10),
    ('[{"x": {"y": 1,\n"y": 1}}]', "y", 2, 1),
    ('{"a\\u0041": 1, "aA": 2}', "aA", 1, 16),  # the same key, spelt with an escape
])
def test_a_duplicate_json_key_is_refused_with_its_line(text: str, key: str, line: int,
                                                       column: int) -> None:
    with pytest.raises(DuplicateKeyError) as raised:
        loads_json(text)
    assert (raised.value.key, raised.value.line, raised.value.column) == (key, line, column)


def test_a_duplicate_yaml_key_is_refused_with_its_line() -> None:
    with pytest.raises(yaml.YAMLError) as raised:
        yaml.load(FLAVORS_YAML, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    assert "found duplicate key 'm1.small'" in str(raised.value)
    # a merge may still override what it merges
    merged = yaml.load("base: &b {x: 1}\nother: {<<: *b, x: 2}\n",  # noqa: S506
                       Loader=UniqueKeyLoader)
    assert merged["other"] == {"x": 2}


@pytest.mark.parametrize(("name", "text", "said"), [
    ("prices.json", FLAVORS_JSON, "duplicate key 'm1.small' at line 4, column 39"),
    ("prices.yaml", FLAVORS_YAML,
     "prices.yaml at line 8, column 7: found duplicate key 'm1.small'"),
])
def test_price_list_put_refuses_a_file_naming_a_key_twice(tmp_path: Path, name: str, text: str,
                                                          said: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DocumentError) as raised:
        read_document(str(path))
    assert said in str(raised.value)
    path.write_text(text.replace("m1.small: 0.500", "m1.large: 0.500").replace(
        '"m1.small": 0.500', '"m1.large": 0.500'))
    assert read_document(str(path))["rates"]["instance"]["by_flavor"] == {
        "m1.small": "0.005", "m1.large": "0.500"}


def test_a_yaml_file_with_sized_types_and_project_terms_reads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("""\
effective_from: 2026-10-01T00:00:00Z
currency: EUR
rates:
  instance: {per: hour, by_flavor: {m1.small: 0.020}}
  share: {per: size_gb_hour, size: size_gb, rate: 0.00002}
project_terms:
  p-big:
    - {from: 2026-10-10T00:00:00Z, until: 2026-10-20T00:00:00Z, discount_percent: 10,
       rates: {instance: {per: hour, by_flavor: {m1.small: 0.015}}}}
    - {from: 2026-10-20T00:00:00Z, discount_percent: 12.5}
""")
    document = read_document(str(path))
    assert document["project_terms"]["p-big"][1] == {
        "from": "2026-10-20T00:00:00Z", "discount_percent": "12.5"}
    assert document["rates"]["share"]["rate"] == "0.00002"
    version = pricelist.parse(document)
    assert version.project_terms["p-big"][0].discount_percent == Decimal("10")
