"""deploy.engine.run_kwargs: the policy pack goes to preview and up only (refresh and destroy have no such flag), with
a pack config generated from the run's own stack file (never the committed copy)."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.model.pack_config import render as render_pack_config
from kueue_cohorts.deploy import engine

REPO = Path(__file__).resolve().parents[3]


def _stack(tmp_path, name="dev"):
    return SimpleNamespace(name=name, workspace=SimpleNamespace(work_dir=str(tmp_path)))


def _project(tmp_path: Path, name: str) -> Path:
    (tmp_path / "stacks").mkdir()
    shutil.copy(REPO / "stacks" / f"Pulumi.{name}.yaml", tmp_path / "stacks" / f"Pulumi.{name}.yaml")
    return tmp_path / "stacks" / f"Pulumi.{name}.yaml"


@pytest.mark.parametrize("operation", ["preview", "up"])
@pytest.mark.parametrize("name", ["dev", "staging", "prod"])
def test_preview_and_up_get_the_pack_and_its_stack_config(tmp_path, operation, name):
    stack_file = _project(tmp_path, name)
    kwargs = engine.run_kwargs(_stack(tmp_path, name), operation=operation)
    assert kwargs["policy_packs"] == [str(engine.policy_pack_dir())]
    (config,) = kwargs["policy_pack_configs"]
    assert Path(config).read_text() == render_pack_config(load_stack_file(stack_file))
    assert kwargs["config_file"] == str(stack_file)


@pytest.mark.parametrize("count", [3, 5, 10])
def test_the_pack_config_follows_the_stack_file_not_the_committed_copy(tmp_path, count):
    """A capacity increase in the stack file, policy/config/<stack>.json not regenerated: the pack judges with the
    stack file's capacity (the committed copy would turn the legitimate change into a violation)."""
    stack_file = _project(tmp_path, "staging")
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"]["kueue-cohorts:nodePools"][0]["count"] = count
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    (config,) = engine.run_kwargs(_stack(tmp_path, "staging"), operation="preview")["policy_pack_configs"]
    pools = json.loads(Path(config).read_text())["cohort-nominal-within-capacity"]["nodePools"]
    assert (pools[0]["count"], pools[0]["capacity"]["nvidia.com/gpu"]) == (count, "4")
    committed = json.loads((REPO / "kueue_cohorts" / "policy" / "config" / "staging.json").read_text())
    assert committed["cohort-nominal-within-capacity"]["nodePools"][0]["count"] == 2


def test_an_invalid_stack_file_gets_no_pack_config(tmp_path):
    """The program's settings check refuses it with every problem before the pack is asked anything."""
    stack_file = _project(tmp_path, "staging")
    stack_file.write_text(stack_file.read_text().replace('value: 1000', 'value: -5000000000'))
    kwargs = engine.run_kwargs(_stack(tmp_path, "staging"), operation="up")
    assert "policy_pack_configs" not in kwargs and kwargs["policy_packs"]


@pytest.mark.parametrize("operation", ["refresh", "destroy"])
def test_refresh_and_destroy_get_no_policy_arguments(tmp_path, operation):
    kwargs = engine.run_kwargs(_stack(tmp_path), operation=operation)
    assert "policy_packs" not in kwargs and "policy_pack_configs" not in kwargs
    assert kwargs["config_file"] == str(tmp_path / "stacks" / "Pulumi.dev.yaml")
