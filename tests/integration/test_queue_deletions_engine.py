"""Issue 28 finding 10 through the real pulumi CLI (render mode, no cluster): the engine's own preview steps, as
`python -m kueue_cohorts.deploy` reads them before `up` and `destroy` (deploy/queue_holders.py `deletions`), say which
Kueue
objects the run deletes:
- renaming the training ClusterQueue: the old queue is deleted (a new resource name), its LocalQueue replaced in
  place, and the renamed queue written with the stack's flavor;
- renaming the ResourceFlavor: the old flavor is replaced (deleted after the queues move) and both queues are
  rewritten to the new one, so no queue of the stack holds the old flavor, only another stack's would (`holders`
  with the queues as they are live);
- a destroy: every queue object of the state.
The same steps with a running Job on the sandbox: tests/e2e/test_20_queues_in_use.py."""
from __future__ import annotations

import pytest
from pulumi import automation as auto

from kueue_cohorts.deploy import engine, queue_holders
from kueue_cohorts.deploy.queue_holders import Deletion
from tests.integration.project import Project

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _preview_steps(project: Project, op: str = "preview") -> queue_holders.Steps:
    stack = project.open("dev")
    events: list[auto.EngineEvent] = []
    run = stack.preview if op == "preview" else stack.preview_destroy
    run(on_event=events.append, **engine.run_kwargs(stack, policy=False, color="never", operation=op))
    return queue_holders.deletions(events)


def test_the_engines_preview_says_which_queue_objects_a_run_deletes(project: Project, tmp_path):
    project.make_offline("dev", tmp_path / "rendered")
    assert project.run("dev", "up").summary.result == "succeeded"
    assert _preview_steps(project) == queue_holders.Steps((), {"c12-inference-cq": frozenset({"c12-default"}),
                                                               "c12-training-cq": frozenset({"c12-default"})})
    layout = project.config("dev")["inferenceTraining"]

    layout["training"]["clusterQueue"] = "c12-train-cq"
    project.set_config("dev", "inferenceTraining", layout)
    steps = _preview_steps(project)
    assert [(d.kind, d.name, d.namespace, d.op) for d in steps.deleted] == [
        ("ClusterQueue", "c12-training-cq", None, "delete"),
        ("LocalQueue", "c12-training-lq", "c12-training", "delete-replaced")]
    assert steps.queue_flavors["c12-train-cq"] == frozenset({"c12-default"})

    layout["training"]["clusterQueue"] = "c12-training-cq"
    project.set_config("dev", "inferenceTraining", layout)
    project.set_config("dev", "resourceFlavor", {"name": "c12-gpu"})
    steps = _preview_steps(project)
    # The same resource with a new name: a replacement, the old flavor deleted after the queues moved off it.
    assert steps.deleted == (Deletion("ResourceFlavor", "c12-default", op="replace"),)
    assert steps.queue_flavors == {name: frozenset({"c12-gpu"}) for name in ("c12-inference-cq", "c12-training-cq")}
    live = [{"metadata": {"name": name}, "spec": {"resourceGroups": [{"flavors": [{"name": "c12-default"}]}]}}
            for name in ("c12-inference-cq", "c12-training-cq")]
    assert queue_holders.holders(steps, live, []) == {}
    foreign = {"metadata": {"name": "team-cq"}, "spec": {"resourceGroups": [{"flavors": [{"name": "c12-default"}]}]}}
    assert queue_holders.holders(steps, [*live, foreign], []) == {steps.deleted[0]: ["ClusterQueue team-cq"]}

    assert [(d.kind, d.name) for d in _preview_steps(project, "destroy").deleted] == [
        ("ClusterQueue", "c12-inference-cq"), ("ClusterQueue", "c12-training-cq"),
        ("LocalQueue", "c12-inference-lq"), ("LocalQueue", "c12-training-lq"), ("ResourceFlavor", "c12-default"),
        ("TrainingRuntime", "c12-checkpoint-runtime")]  # issue 39: TrainJobs hold a runtime (the Trainer's finalizer)
