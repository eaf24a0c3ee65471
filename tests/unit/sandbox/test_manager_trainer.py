"""What serves the TrainJob API in a sandbox follows the stack's `multiKueue.managerTrainer`: the manager sandbox of a
CRDsOnly stack runs no Trainer controller (the pinned Trainer v2.2.1 ignores spec.managedBy), records that in its
state, and counts the absent controller as healthy; a worker always runs it. Starting and stopping it on a live
sandbox is tests/e2e/test_26_multikueue.py."""
from __future__ import annotations

import json

import pytest
import yaml

from kueue_cohorts.components.checks.validation import load_stack_file
from kueue_cohorts.components.settings import ManagerTrainer, parse_settings
from kueue_cohorts.sandbox.cluster import TRAINER, Sandbox
from kueue_cohorts.sandbox.paths import SandboxPaths
from kueue_cohorts.sandbox.state import State
from kueue_cohorts.sandbox.status import render
from tests.helpers import stack_raw

MULTI = {"workers": [{"name": "eu"}], "dispatch": [{"clusterQueue": "c12-training-cq", "workers": ["eu"]}]}


def _settings(manager_trainer: str | None):
    raw = stack_raw("dev")
    if manager_trainer is not None:
        raw["multiKueue"] = {**MULTI, "managerTrainer": manager_trainer}
    return parse_settings(raw)


@pytest.mark.parametrize(("manager_trainer", "manager", "worker"), [
    (None, ManagerTrainer.CONTROLLER, ManagerTrainer.CONTROLLER),  # no multiKueue: a plain sandbox
    ("Controller", ManagerTrainer.CONTROLLER, ManagerTrainer.CONTROLLER),
    ("CRDsOnly", ManagerTrainer.CRDS_ONLY, ManagerTrainer.CONTROLLER),  # the worker runs the dispatched TrainJob
])
def test_the_stack_decides_whether_the_manager_runs_the_trainer(tmp_path, manager_trainer, manager, worker):
    settings = _settings(manager_trainer)
    assert Sandbox(SandboxPaths(tmp_path)).manager_trainer(settings) == manager
    assert Sandbox(SandboxPaths(tmp_path).worker("eu"), worker="eu").manager_trainer(settings) == worker


def test_the_state_records_it_and_an_older_state_reads_as_controller(tmp_path):
    path = tmp_path / "state.json"
    State(manager_trainer=ManagerTrainer.CRDS_ONLY).save(path)
    assert json.loads(path.read_text())["manager_trainer"] == "CRDsOnly"
    assert State.load(path).manager_trainer == ManagerTrainer.CRDS_ONLY
    path.write_text(json.dumps({"ports": {}, "processes": {}, "stack": "", "versions": {}}))
    assert State.load(path).manager_trainer == ManagerTrainer.CONTROLLER
    path.write_text(json.dumps({"manager_trainer": "Sometimes"}))
    with pytest.raises(ValueError):
        State.load(path)


def test_a_crds_only_sandbox_is_healthy_without_the_trainer_and_says_why(tmp_path):
    box = Sandbox(SandboxPaths(tmp_path))
    State(manager_trainer=ManagerTrainer.CRDS_ONLY).save(box.paths.state_file)
    health = box.health()
    assert health[TRAINER] == (False, True, "not run: the stack's multiKueue.managerTrainer is CRDsOnly")
    assert [name for name, (_, ok, _) in health.items() if ok] == [TRAINER]  # nothing else runs here
    line = next(line for line in render(box)[0].splitlines() if line.startswith(TRAINER))
    assert " off (not run: the stack's multiKueue.managerTrainer is CRDsOnly)" in line, line
    State().save(box.paths.state_file)  # Controller: the same absent process is down
    assert box.health()[TRAINER] == (False, False, "not running")
    assert " DOWN " in next(line for line in render(box)[0].splitlines() if line.startswith(TRAINER))


def test_a_stack_file_with_crds_only_is_read_as_such(tmp_path):
    """The sandbox reads the stack file it is started with (`python -m kueue_cohorts.sandbox up --stack-file`), not
    only the
    models: the YAML key is `managerTrainer`."""
    raw = stack_raw("dev")
    raw["multiKueue"] = {**MULTI, "managerTrainer": "CRDsOnly"}
    path = tmp_path / "Pulumi.mk.yaml"
    path.write_text(yaml.safe_dump({"config": {f"kueue-cohorts:{k}": v for k, v in raw.items()}}))
    assert Sandbox(SandboxPaths(tmp_path / "sbx")).manager_trainer(load_stack_file(path)) == ManagerTrainer.CRDS_ONLY
