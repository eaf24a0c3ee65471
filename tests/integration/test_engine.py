"""The real Pulumi engine (self-built CLI + kubernetes provider plugin) runs the program offline.

Through deploy.engine, i.e. the Automation API driving the pinned CLI with the repo's __main__.py inline, the
policy pack in policy/ (when present) and a file backend in a tmp dir. No mock stands in for the engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi import automation as auto

from tests.integration.project import STACKS, Project, dump, manifests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

MANAGED = {"app.kubernetes.io/managed-by": "kueue-cohorts"}
C12 = ["cpu", "memory", "nvidia.com/gpualloc", "nvidia.com/gpucores", "nvidia.com/gpumem"]


def _by_kind(objs: list[dict], kind: str) -> dict[str, dict]:
    out = {}
    for o in objs:
        if o.get("kind") == kind:
            meta = o["metadata"]
            out[f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]] = o
    return out


def _render_project(project: Project, name: str, tmp: Path) -> Path:
    """Point stack ``name`` of the copy at a render directory under ``tmp``; return that directory."""
    target = tmp / f"rendered-{name}"
    project.render_to(name, target)
    return target


@pytest.mark.parametrize("name", STACKS)
def test_preview_succeeds_for_every_stack(project, tmp_path, name):
    """Every stack previews through the engine, with the policy pack and its per-stack config.

    Made offline first (project.offline_config: render mode, Kueue chart from the pinned Go module): the stacks
    target clusters we do not have here (the sandbox is not what this test is about; tests/e2e run dev against it).
    """
    project.make_offline(name, tmp_path / f"rendered-{name}")
    stack = project.open(name)
    result = stack.preview(diff=True, **project.kwargs(stack))
    assert result.change_summary.get("create", 0) > 0, result.stdout
    assert project.resources(stack) == [], "a preview must not write resources to the state"


@pytest.fixture(scope="module")
def rendered_dev(tmp_path_factory, engine_binaries):
    """The dev stack rendered to a directory by one real ``up``: (project, stack, render dir, up result)."""
    tmp = tmp_path_factory.mktemp("render-dev")
    project = Project(tmp)
    target = _render_project(project, "dev", tmp)
    stack = project.open("dev")
    result = stack.up(**project.kwargs(stack))
    return project, stack, target, result


def test_render_up_writes_the_guide_cluster_queues(rendered_dev):
    _, _, target, result = rendered_dev
    assert result.summary.result == "succeeded"
    cqs = _by_kind(manifests(target), "ClusterQueue")
    assert set(cqs) == {"c12-inference-cq", "c12-training-cq"}, dump(cqs)
    inference = cqs["c12-inference-cq"]
    assert inference["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert inference["metadata"]["labels"] == {**MANAGED, "kueue-cohorts/role": "inference"}
    assert inference["spec"] == {
        "cohortName": "c12-shared",
        "namespaceSelector": {"matchLabels": {"kueue.x-k8s.io/queue": "c12-inference-cq"},
                              "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                    "values": ["c12-inference"]}]},
        "resourceGroups": [{"coveredResources": C12, "flavors": [{"name": "c12-default", "resources": [
            {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "0"},
            {"name": "memory", "nominalQuota": "8Gi", "borrowingLimit": "0"},
            {"name": "nvidia.com/gpualloc", "nominalQuota": "1", "borrowingLimit": "0"},
            {"name": "nvidia.com/gpucores", "nominalQuota": "20", "borrowingLimit": "0"},
            {"name": "nvidia.com/gpumem", "nominalQuota": "2048", "borrowingLimit": "0"},
        ]}]}],
        "preemption": {"reclaimWithinCohort": "Any",
                       "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
                       "withinClusterQueue": "LowerPriority"},
    }, dump(inference)
    training = cqs["c12-training-cq"]
    assert training["metadata"]["labels"] == {**MANAGED, "kueue-cohorts/role": "training"}
    assert training["spec"] == {
        "cohortName": "c12-shared",
        "namespaceSelector": {"matchLabels": {"kueue.x-k8s.io/queue": "c12-training-cq"},
                              "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                    "values": ["c12-training"]}]},
        "resourceGroups": [{"coveredResources": C12, "flavors": [{"name": "c12-default", "resources": [
            {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "4"},
            {"name": "memory", "nominalQuota": "0", "borrowingLimit": "8Gi"},
            {"name": "nvidia.com/gpualloc", "nominalQuota": "0", "borrowingLimit": "1"},
            {"name": "nvidia.com/gpucores", "nominalQuota": "0", "borrowingLimit": "20"},
            {"name": "nvidia.com/gpumem", "nominalQuota": "0", "borrowingLimit": "2048"},
        ]}]}],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
    }, dump(training)


def test_render_up_writes_the_guide_local_queues_and_priority_classes(rendered_dev):
    _, _, target, _ = rendered_dev
    objs = manifests(target)
    lqs = _by_kind(objs, "LocalQueue")
    assert {k: v["spec"] for k, v in lqs.items()} == {
        "c12-inference/c12-inference-lq": {"clusterQueue": "c12-inference-cq"},
        "c12-training/c12-training-lq": {"clusterQueue": "c12-training-cq"},
    }, dump(lqs)
    assert all(v["apiVersion"] == "kueue.x-k8s.io/v1beta2" for v in lqs.values())
    wpcs = _by_kind(objs, "WorkloadPriorityClass")
    assert {k: v["value"] for k, v in wpcs.items()} == {"c12-inference-prio": 1000, "c12-training-prio": 10}
    assert wpcs["c12-inference-prio"]["description"].startswith("Online inference")
    assert wpcs["c12-training-prio"]["description"].startswith("Opportunistic training")
    assert _by_kind(objs, "ResourceFlavor")["c12-default"]["spec"] == {}


def test_second_up_reports_no_changes(rendered_dev):
    project, stack, _, _ = rendered_dev
    result = stack.up(expect_no_changes=True, **project.kwargs(stack))
    assert result.summary.result == "succeeded"
    assert set(result.summary.resource_changes or {}) == {"same"}, result.summary.resource_changes


def test_equivalent_quantity_spellings_make_no_changes(rendered_dev):
    """"1000m", "2048Mi", "4" and 4 are the same quantities as "1", "2Gi", 4 and "4": no diff in the engine."""
    project, stack, _, _ = rendered_dev
    before = project.stack_file("dev").read_text()
    raw = project.config("dev")["inferenceTraining"]
    quota = raw["inference"]["nominalQuota"]
    assert quota == {"cpu": "4", "memory": "8Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
                     "nvidia.com/gpumem": "2048"}, "the dev stack changed: update this test's spellings"
    raw["inference"]["nominalQuota"] = {"cpu": 4, "memory": "8192Mi", "nvidia.com/gpualloc": "1000m",
                                        "nvidia.com/gpucores": 20, "nvidia.com/gpumem": "2048"}
    project.set_config("dev", "inferenceTraining", raw)
    pools = project.config("dev")["nodePools"]
    pools[0]["capacity"] = {"cpu": "8000m", "memory": "32768Mi", "nvidia.com/gpualloc": 1,
                            "nvidia.com/gpucores": "20", "nvidia.com/gpumem": 2048}
    project.set_config("dev", "nodePools", pools)
    try:
        preview = stack.preview(expect_no_changes=True, **project.kwargs(stack))
        assert set(preview.change_summary) == {"same"}, preview.change_summary
        result = stack.up(expect_no_changes=True, **project.kwargs(stack))
        assert set(result.summary.resource_changes or {}) == {"same"}, result.summary.resource_changes
    finally:
        project.stack_file("dev").write_text(before)


def test_destroy_removes_everything_from_the_state(project, tmp_path):
    target = _render_project(project, "dev", tmp_path)
    stack = project.open("dev")
    stack.up(**project.kwargs(stack))
    assert len(project.resources(stack)) > 5
    assert list(target.rglob("*.yaml"))
    result = stack.destroy(**project.kwargs(stack, policy=False))
    assert result.summary.result == "succeeded"
    assert project.resources(stack) == []
    left = [d for d in manifests(target)]
    assert [(d["kind"], d["metadata"]["name"]) for d in left] == [("PersistentVolumeClaim", "c12-ckpt")], (
        "render mode deletes the file of every destroyed object except the checkpoint PVC (retainOnDelete)")


def test_broken_config_fails_preview_with_the_settings_error_and_leaves_state(project, tmp_path):
    _render_project(project, "dev", tmp_path)
    stack = project.open("dev")
    stack.up(**project.kwargs(stack))
    checkpoint = project.checkpoint("dev")
    state_before = checkpoint.read_bytes()
    raw = project.config("dev")["inferenceTraining"]
    raw["inference"]["nominalQuota"]["cpu"] = "-4"
    raw["training"]["priorityClass"]["value"] = "ten"
    project.set_config("dev", "inferenceTraining", raw)
    with pytest.raises(auto.CommandError) as failure:
        stack.preview(**project.kwargs(stack))
    message = str(failure.value)
    assert "invalid stack config: 2 problems" in message, message
    assert "kueue-cohorts:inferenceTraining.inference.nominalQuota" in message, message
    assert "kueue-cohorts:inferenceTraining.training.priorityClass.value" in message, message
    assert checkpoint.read_bytes() == state_before, "a failed preview must not write the state"
    resources_before = project.resources(stack)
    with pytest.raises(auto.CommandError, match="invalid stack config"):
        stack.up(**project.kwargs(stack))
    # A failed up re-saves the checkpoint (new manifest time) but must not change a single resource.
    assert project.resources(stack) == resources_before
