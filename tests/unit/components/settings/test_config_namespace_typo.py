"""A misspelled config namespace is an error, not a silently ignored key (issue 39 item 5): `kueue-cohort:` in a stack
file made the program deploy without the setting (Pulumi reads `<namespace>:<name>` keys; the program reads only
`kueue-cohorts:*`, pulumi.Config("kueue-cohorts")). Every such key is named with its fix, together with the problems
its absence causes, in one message; other namespaces (`kubernetes:`, `pulumi:`) stay allowed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.settings import namespace_problems, raw_from_stack_file
from kueue_cohorts.components.settings.errors import SettingsError

REPO = Path(__file__).resolve().parents[4]
DEV = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
TYPOS = ["kueue-cohort", "kueue_cohorts", "Kueue-Cohorts", "kueue-cohrts", "kueuecohorts", "kueue-cohortss",
         "kuee-cohorts"]


def _write(path: Path, renames: dict[str, str], extra: dict | None = None) -> Path:
    doc = {"config": {}}
    for key, value in DEV["config"].items():
        doc["config"][renames.get(key, key)] = value
    doc["config"].update(extra or {})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("namespace", TYPOS)
def test_a_misspelled_namespace_is_named_with_its_fix(tmp_path, namespace):
    path = _write(tmp_path / "Pulumi.typo.yaml", {"kueue-cohorts:trainingRuntime": f"{namespace}:trainingRuntime"})
    with pytest.raises(SettingsError) as err:
        load_stack_file(path)
    (typo,) = [p for p in err.value.problems if p.key.startswith(f"{namespace}:")]
    assert typo.key == f"{namespace}:trainingRuntime"
    assert typo.rule == (f"the config namespace {namespace!r} is not this project's ('kueue-cohorts'): the program "
                         "reads only kueue-cohorts:* keys, so this key would be ignored and its setting silently lost")
    assert typo.fix == "rename the key to `kueue-cohorts:trainingRuntime`"
    assert f"  - {namespace}:trainingRuntime = " in str(err.value)
    with pytest.raises(SettingsError):
        raw_from_stack_file(path)  # every reader of the stack file (sandbox, cohorts, prsummary) says the same


def test_every_misspelled_key_and_what_its_absence_breaks_come_in_one_message(tmp_path):
    path = _write(tmp_path / "Pulumi.typo.yaml", {"kueue-cohorts:inferenceTraining": "kueue-cohort:inferenceTraining",
                                                  "kueue-cohorts:nodePools": "kueue_cohorts:nodePools"})
    with pytest.raises(SettingsError) as err:
        load_stack_file(path)
    keys = [p.key for p in err.value.problems]
    assert set(keys[:2]) == {"kueue-cohort:inferenceTraining", "kueue_cohorts:nodePools"}  # file order
    assert any(k.startswith("kueue-cohorts:") for k in keys[2:])  # what the missing keys break, same message


@pytest.mark.parametrize("key", ["kubernetes:kubeconfig", "pulumi:tags", "aws:region", "kueue:x", "cohorts:x"])
def test_other_namespaces_are_left_alone(tmp_path, key):
    path = _write(tmp_path / "Pulumi.ok.yaml", {}, {key: "value"})
    assert load_stack_file(path).inference_training is not None


@settings(max_examples=200)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_", min_size=1, max_size=20))
def test_only_near_misses_of_the_project_are_refused(namespace):
    found = namespace_problems({"config": {f"{namespace}:x": 1}})
    near = namespace.replace("_", "").replace("-", "") == "kueuecohorts"
    if near and namespace != "kueue-cohorts":
        assert [p.key for p in found] == [f"{namespace}:x"]
    if namespace == "kueue-cohorts" or len(namespace) < 8:
        assert found == []


def test_the_command_refuses_it_before_anything_runs(tmp_path):
    """Through `kueue-cohorts` (offline: a synthetic trace of the stack file)."""
    path = _write(tmp_path / "Pulumi.typo.yaml", {"kueue-cohorts:inferenceTraining": "kueue-cohort:inferenceTraining"})
    proc = subprocess.run([sys.executable, "-m", "kueue_cohorts", "trace", "synth", "--stack-file", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "kueue-cohort:inferenceTraining = " in proc.stderr
    assert "Fix: rename the key to `kueue-cohorts:inferenceTraining`." in proc.stderr
