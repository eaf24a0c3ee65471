"""One reader of stack files everywhere (components/settings/stackfile.py), as strict as the engine, and a JSON Schema
that
accepts exactly the quantities the program accepts."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kubernetes.utils import parse_quantity as parse_quantity_loosely

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.settings import parse_settings, raw_from_stack_file, stackfile
from kueue_cohorts.components.settings.errors import SettingsError
from kueue_cohorts.policy.rules.vocabulary.quantity import parse as parse_quantity

REPO = Path(__file__).resolve().parents[4]
SCHEMA = json.loads((REPO / "schema" / "stack-config.schema.json").read_text())


@pytest.mark.parametrize(("text", "line", "column", "message"), [
    ("config:\n  kueue-cohorts:cluster: {}\n  kueue-cohorts:cluster: {}\n", 3, 3,
     "mapping key 'kueue-cohorts:cluster' already defined at line 2"),
    ("config:\n  kueue-cohorts:kueue:\n    install: true\n    install: false\n", 4, 5,
     "mapping key 'install' already defined at line 3"),
    ("config:\n  kueue-cohorts:nodePools:\n    - {name: a, name: b}\n", 3, 17,
     "mapping key 'name' already defined at line 3"),
    ("encryptionsalt: x\nconfig: {}\nencryptionsalt: y\n", 3, 1,
     "mapping key 'encryptionsalt' already defined at line 1"),
])
def test_a_key_defined_twice_is_refused_where_it_is_repeated(text, line, column, message):
    """gopkg.in/yaml.v3 (the Pulumi CLI's reader) refuses it; PyYAML alone would keep the last value."""
    with pytest.raises(stackfile.StackFileError) as caught:
        stackfile.parse(text, "stacks/Pulumi.qa.yaml")
    assert str(caught.value) == f"stacks/Pulumi.qa.yaml:{line}:{column}: {message}"


@pytest.mark.parametrize(("text", "where"), [
    ("config:\n  kueue-cohorts:nodePools: [1, 2\n", "stacks/Pulumi.qa.yaml:3:1: "),
    ("config:\n\tkueue-cohorts:kueue: {}\n", "stacks/Pulumi.qa.yaml:2:1: "),
    ('config:\n  kueue-cohorts:cluster: "unterminated\n', "stacks/Pulumi.qa.yaml:3:1: "),
    ("- not\n- a mapping\n", "stacks/Pulumi.qa.yaml:1:1: a stack file is a YAML mapping"),
    ("config: [1]\n", "stacks/Pulumi.qa.yaml:1:1: `config:` is a mapping of config keys, not a list"),
])
def test_every_unreadable_file_is_one_line_at_its_place(text, where):
    with pytest.raises(stackfile.StackFileError) as caught:
        stackfile.parse(text, "stacks/Pulumi.qa.yaml")
    assert str(caught.value).startswith(where) and "\n" not in str(caught.value)


def _broken(tmp_path: Path) -> Path:
    """The dev stack file with a `kueue-cohorts:protected` key written twice."""
    text = (REPO / "stacks" / "Pulumi.dev.yaml").read_text()
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text.replace("config:\n", "config:\n  kueue-cohorts:protected: false\n"
                                             "  kueue-cohorts:protected: true\n", 1))
    return path


def test_every_reader_of_a_stack_file_refuses_the_same_file_the_same_way(tmp_path):
    path = _broken(tmp_path)
    first = path.read_text().splitlines().index("  kueue-cohorts:protected: false") + 1
    expected = f"{path}:{first + 1}:3: mapping key 'kueue-cohorts:protected' already defined at line {first}"
    with pytest.raises(stackfile.StackFileError, match="^" + expected.replace(".", r"\.")):
        raw_from_stack_file(path)
    with pytest.raises(stackfile.StackFileError):
        load_stack_file(path)
    for argv in (["-m", "kueue_cohorts.cohorts", "verify", "--stack-file", str(path)],
                 ["-m", "kueue_cohorts.sandbox", "up", "--stack-file", str(path), "--only-if-sandbox"]):
        result = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (argv, result.stderr)
        assert result.stderr.strip().endswith(expected), (argv, result.stderr)
        assert "Traceback" not in result.stderr


def test_the_program_and_the_engine_read_the_committed_stacks_alike():
    """No committed stack file leans on PyYAML's last-value-wins."""
    for path in sorted((REPO / "stacks").glob("Pulumi.*.yaml")):
        assert stackfile.read(path) == yaml.safe_load(path.read_text())


# --- the JSON Schema accepts exactly what the program accepts -----------------------------------------------------

_MINIMAL = {"config": {
    "kueue-cohorts:nodePools": [{"name": "a", "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}}],
    "kueue-cohorts:resourceFlavor": {"name": "default"},
    "kueue-cohorts:cluster": {"mode": "sandbox"},
}}

_PIECES = st.sampled_from(["", "+", "-", " ", "0", "1", "8", "12", ".", ".5", "5.", "e", "E", "e3", "E-2", "e+1",
                           "Ki", "Mi", "Gi", "gi", "ki", "K", "k", "m", "n", "u", "M", "P", "E", "i", "_", "x",
                           "0x1", "Infinity", "NaN", "1_000"])
_TEXTS = st.lists(_PIECES, min_size=1, max_size=4).map("".join)
_NUMBERS = st.one_of(st.integers(min_value=-10**6, max_value=10**20), st.booleans(),
                     st.floats(allow_nan=False, min_value=-1e6, max_value=1e30))


def _program_accepts(value) -> bool:
    raw = {key.split(":", 1)[1]: copy.deepcopy(v) for key, v in _MINIMAL["config"].items()}
    raw["nodePools"][0]["capacity"]["cpu"] = value
    try:
        parse_settings(raw)
    except SettingsError:
        return False
    return True


def _schema_accepts(value) -> bool:
    doc = copy.deepcopy(_MINIMAL)
    doc["config"]["kueue-cohorts:nodePools"][0]["capacity"]["cpu"] = value
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(doc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_TEXTS, _NUMBERS))
@example("1_000E1_0001_000")  # the client reads 1.000E+10001003: beyond the decimal context, `abs()` overflowed
def test_schema_and_program_agree_on_every_quantity(value):
    """Texts built from the grammar's pieces and stray characters, YAML numbers and booleans. Texts beyond the API
    server's 2^63-1 are left out: no JSON Schema pattern can bound a decimal text's magnitude (the program refuses
    them, the schema's description says so)."""
    parsed = parse_quantity(value) if isinstance(value, str) else None
    if isinstance(value, str) and parsed is None and Decimal(2**63) <= _loose(value):
        return
    assert _schema_accepts(value) == _program_accepts(value), value


def _loose(text: str) -> Decimal:
    """The magnitude the Python client's looser parser gives `text` (suffixes applied: `10E` is 10^19), 0 where it
    gives none. `copy_abs`, not `abs()`: the client can return a value beyond the decimal context's exponent range
    (`1_000E1_0001_000` is 1.000E+10001003), which `abs()` would round in that context and overflow; comparing it
    does not."""
    try:
        value = Decimal(parse_quantity_loosely(text.strip()))
    except (ValueError, ArithmeticError):
        return Decimal(0)
    return value.copy_abs() if value.is_finite() else Decimal(0)


@pytest.mark.parametrize(("value", "accepted"), [
    (8, True), ("8", True), (8.5, True), ("500m", True), ("32Gi", True), ("1e3", True), (" 2 ", True),
    ("8gi", False), ("1_000", False), ("1K", False), ("1e3k", False), (True, False), (-1, False), ("-0", False),
    ("Infinity", False),
])
def test_the_documented_forms(value, accepted):
    """The README documents unquoted numbers (`cpu: 8`); `8gi` is no quantity (the API server refuses it)."""
    assert _schema_accepts(value) is accepted
    assert _program_accepts(value) is accepted


def _staging_raw() -> dict:
    doc = stackfile.read(REPO / "stacks" / "Pulumi.staging.yaml")
    return stackfile.project_config(doc, "kueue-cohorts")


@pytest.mark.parametrize(("path", "typo", "meant"), [
    (("sharedPool", "tenants", 0), "flor", "floor"),
    (("sharedPool", "tenants", 1), "borrowingLimt", "borrowingLimit"),
    (("inferenceTraining", "inference"), "lendingLimits", "lendingLimit"),
    (("kueue",), "waitForPodReady", "waitForPodsReady"),
    (("nodePools", 0), "lables", "labels"),
    ((), "nodePool", "nodePools"),
])
def test_every_misspelt_key_gets_its_did_you_mean(path, typo, meant):
    """Optional keys too (before, only a misspelt required key was matched)."""
    raw = _staging_raw()
    node = raw
    for part in path:
        node = node[part]
    node[typo] = node.pop(meant) if meant in node else {}
    with pytest.raises(SettingsError) as caught:
        parse_settings(raw)
    key = "kueue-cohorts:" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in (*path, typo)).lstrip(".")
    (problem,) = [p for p in caught.value.problems if p.key == key]
    assert (problem.rule, problem.fix) == ("unknown key (a typo?)", f"did you mean '{meant}'? Rename the key")
