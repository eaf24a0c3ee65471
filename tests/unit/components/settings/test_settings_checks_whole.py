"""Whole problems of the settings-only checks (`components.checks.settings_rules`): key, value, rule and fix, written
out by hand (issue 42: the mutants of these checks that survived were judged by tests asserting a word of the rule or
the key alone)."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from kueue_cohorts.components.checks import settings_rules
from kueue_cohorts.components.settings import parse_settings
from kueue_cohorts.components.settings.errors import Problem
from tests.helpers import fixture_raw, stack_raw

IT = "kueue-cohorts:inferenceTraining"
SP = "kueue-cohorts:sharedPool"


def _dev() -> dict[str, Any]:
    return stack_raw("dev")


def _problems(check: Callable[..., list[Problem]], raw: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(p.key, p.value, p.rule, p.fix, p.policy) for p in check(parse_settings(raw))]


# --- cluster target --------------------------------------------------------------------------------------------------

RENDER_DIR = ("kueue-cohorts:cluster.renderDir", "build/x")


@pytest.mark.parametrize("cluster, expected", [
    ({"mode": "render"}, [("kueue-cohorts:cluster.renderDir", "<absent>", "render mode writes manifests to a directory",
                           "set renderDir (relative to the project root)", "")]),
    ({"mode": "render", "renderDir": "build/x"}, []),
    ({"mode": "sandbox", "renderDir": "build/x"}, [
        (*RENDER_DIR, "renderDir only applies to mode render (mode is sandbox)", "remove renderDir or set mode: render",
         "")]),
    ({"mode": "kubeconfig", "renderDir": "build/x", "kubeconfig": "~/k", "context": "c"}, [
        (*RENDER_DIR, "renderDir only applies to mode render (mode is kubeconfig)",
         "remove renderDir or set mode: render", "")]),
    ({"mode": "sandbox", "kubeconfig": "~/k", "context": "c"}, [
        ("kueue-cohorts:cluster.kubeconfig", "~/k", "kubeconfig only applies to mode kubeconfig (mode is sandbox)",
         "remove kubeconfig or set mode: kubeconfig", ""),
        ("kueue-cohorts:cluster.context", "c", "context only applies to mode kubeconfig (mode is sandbox)",
         "remove context or set mode: kubeconfig", "")]),
    ({"mode": "render", "renderDir": "build/x", "context": "c"}, [
        ("kueue-cohorts:cluster.context", "c", "context only applies to mode kubeconfig (mode is render)",
         "remove context or set mode: kubeconfig", "")]),
    ({"mode": "render", "renderDir": "build/x", "kubeClientSettings": {"burst": 5}}, [
        ("kueue-cohorts:cluster.kubeClientSettings", {"burst": 5},
         "kubeClientSettings only applies to an API server (mode is render)",
         "remove kubeClientSettings or set mode: sandbox or kubeconfig", "")]),
    ({"mode": "sandbox", "kubeClientSettings": {"burst": 5}}, []),
])
def test_cluster_target_whole(cluster, expected):
    raw = _dev()
    raw["cluster"] = cluster
    assert _problems(settings_rules.check_cluster_target, raw) == expected


# --- layouts, preemption, frameworks, runtime home -------------------------------------------------------------------

def test_no_layout_whole():
    raw = _dev()
    del raw["inferenceTraining"]
    del raw["trainingRuntime"]
    assert _problems(settings_rules.check_some_layout, raw) == [(
        "kueue-cohorts:inferenceTraining", "<absent>", "a stack needs at least one cohort layout",
        "add kueue-cohorts:inferenceTraining (asymmetric) and/or kueue-cohorts:sharedPool (symmetric)", "")]
    assert _problems(settings_rules.check_some_layout, _dev()) == []
    assert _problems(settings_rules.check_some_layout, fixture_raw("guide-shared-pool")) == []


def _borrow_rule(key: str, policy: str) -> tuple[Any, ...]:
    return (key, policy, "Kueue rejects borrowWithinCohort.policy other than Never when reclaimWithinCohort is Never",
            "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never", "")


@pytest.mark.parametrize("side", ["inference", "training"])
@pytest.mark.parametrize("reclaim, borrow, refused", [
    ("Never", "LowerPriority", True), ("Never", "Never", False), ("Never", None, False),
    ("LowerPriority", "LowerPriority", False), ("Any", "LowerPriority", False)])
def test_borrow_within_cohort_needs_reclaim_whole(side, reclaim, borrow, refused):
    raw = _dev()
    preemption = raw["inferenceTraining"][side].setdefault("preemption", {})
    preemption["reclaimWithinCohort"] = reclaim
    preemption.pop("borrowWithinCohort", None)
    if borrow is not None:
        preemption["borrowWithinCohort"] = {"policy": borrow, "maxPriorityThreshold": 100}
    key = f"{IT}.{side}.preemption.borrowWithinCohort.policy"
    assert _problems(settings_rules.check_preemption, raw) == ([_borrow_rule(key, borrow)] if refused else [])


def test_borrow_within_cohort_of_the_shared_pool_whole():
    raw = fixture_raw("guide-shared-pool")
    raw["sharedPool"]["preemption"] = {"reclaimWithinCohort": "Never",
                                       "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1}}
    assert _problems(settings_rules.check_preemption, raw) == [
        _borrow_rule(f"{SP}.preemption.borrowWithinCohort.policy", "LowerPriority")]


def test_unknown_kueue_framework_whole():
    raw = _dev()
    raw["kueue"] = {"integrations": ["batch/job", "bogus", "pod", "nope"]}
    fix = f"use one of {', '.join(settings_rules.KUEUE_FRAMEWORKS)}"
    assert "batch/job" in settings_rules.KUEUE_FRAMEWORKS and "pod" in settings_rules.KUEUE_FRAMEWORKS
    assert _problems(settings_rules.check_kueue_integrations, raw) == [
        ("kueue-cohorts:kueue.integrations[1]", "bogus", "not a Kueue integration framework", fix, ""),
        ("kueue-cohorts:kueue.integrations[3]", "nope", "not a Kueue integration framework", fix, "")]


RUNTIME_HOME = ("kueue-cohorts:trainingRuntime", "<set>",
                "the preemptible TrainingRuntime lives in the training namespaces of kueue-cohorts:inferenceTraining "
                "and mounts their checkpoint PVC",
                "add inferenceTraining.training.checkpoint (claimName, storageClassName, size), or remove "
                "trainingRuntime", "")


def test_training_runtime_home_whole():
    assert _problems(settings_rules.check_training_runtime_home, _dev()) == []
    without_checkpoint = _dev()
    del without_checkpoint["inferenceTraining"]["training"]["checkpoint"]
    assert _problems(settings_rules.check_training_runtime_home, without_checkpoint) == [RUNTIME_HOME]
    without_layout = fixture_raw("guide-shared-pool")
    without_layout["trainingRuntime"] = _dev()["trainingRuntime"]
    assert _problems(settings_rules.check_training_runtime_home, without_layout) == [RUNTIME_HOME]
    without_runtime = _dev()
    del without_runtime["trainingRuntime"]
    del without_runtime["inferenceTraining"]["training"]["checkpoint"]
    assert _problems(settings_rules.check_training_runtime_home, without_runtime) == []


# --- reclaim budget floor, node capacity, uncovered keys, names used twice --------------------------------------------

@pytest.mark.parametrize("budget, refused", [(1, True), (59, True), (60, False), (61, False), (900, False)])
def test_reclaim_budget_below_the_grace_floor_whole(budget, refused):
    # 60 s: CHECKPOINT_SAFE_RUNTIME's least terminationGracePeriodSeconds, written here by hand.
    raw = _dev()
    raw["inferenceTraining"]["inference"]["reclaimBudgetSeconds"] = budget
    assert _problems(settings_rules.check_reclaim_budget_floor, raw) == ([(
        f"{IT}.inference.reclaimBudgetSeconds", budget,
        f"the training runtime's grace period must be at least 60 s to save on SIGTERM, and a reclaim budget of "
        f"{budget} s cannot hold it, so no runtime meets both", "set reclaimBudgetSeconds to at least 60",
        "reclaim-within-budget")] if refused else [])
    del raw["trainingRuntime"]
    assert _problems(settings_rules.check_reclaim_budget_floor, raw) == []


def test_a_fraction_of_a_device_in_node_capacity_whole():
    raw = _dev()
    raw["nodePools"][0]["capacity"].update({"nvidia.com/gpualloc": "1.5", "cpu": "1.5", "nvidia.com/gpucores": "20"})
    assert _problems(settings_rules.check_node_capacity, raw) == [(
        'kueue-cohorts:nodePools[0].capacity["nvidia.com/gpualloc"]', "1500m",
        "'nvidia.com/gpualloc' is an extended resource, which Kubernetes accepts only in whole numbers",
        'write a whole number such as "1" (device plugins cannot hand out a fraction of a device)', "quantities")]


COVERED = "cpu, memory, nvidia.com/gpualloc, nvidia.com/gpucores, nvidia.com/gpumem"


def _uncovered(key: str, resource: str, amount: str) -> tuple[Any, ...]:
    return (key, amount, f"'{resource}' is not a covered resource of this cohort ({COVERED}), so the value would "
            "never be rendered",
            f"remove it, or add '{resource}' to the nominalQuota that defines the covered resources", "")


@pytest.mark.parametrize("path", [("training", "borrowingLimit"), ("inference", "lendingLimit"),
                                  ("inference", "borrowingLimit")])
def test_a_limit_on_a_resource_the_cohort_does_not_cover_whole(path):
    raw = _dev()
    raw["inferenceTraining"][path[0]][path[1]] = {"nvidia.com/gpualloc": "0", "example.com/x": "2", "b.io/y": "1"}
    got = _problems(settings_rules.check_inference_training_keys, raw)
    base = f"{IT}.{path[0]}.{path[1]}"
    assert [p for p in got if "covered resource" in p[2]] == [
        _uncovered(f'{base}["example.com/x"]', "example.com/x", "2"), _uncovered(f'{base}["b.io/y"]', "b.io/y", "1")]


def test_a_cohort_quota_on_an_uncovered_resource_whole():
    raw = _dev()
    raw["inferenceTraining"]["cohortQuota"] = {"example.com/x": "3"}
    assert _problems(settings_rules.check_inference_training_keys, raw) == [
        _uncovered(f'{IT}.cohortQuota["example.com/x"]', "example.com/x", "3")]


def _twice(key: str, what: str, name: str, first: str, fix: str) -> tuple[Any, ...]:
    return (key, name, f"the {what} '{name}' is already used at {first}", fix, "")


def test_names_used_twice_whole():
    raw = _dev()
    it = raw["inferenceTraining"]
    it["training"]["priorityClass"]["name"] = it["inference"]["priorityClass"]["name"]
    it["training"]["namespaces"] = ["c12-training", "c12-inference"]
    assert _problems(settings_rules.check_unique_names, raw) == [
        _twice(f"{IT}.training.priorityClass.name", "WorkloadPriorityClass name", "c12-inference-prio",
               f"{IT}.inference.priorityClass.name", "rename one of the WorkloadPriorityClasses"),
        _twice(f"{IT}.training.namespaces[1]", "namespace", "c12-inference", f"{IT}.inference.namespaces[0]",
               "list the namespace under one ClusterQueue only (each namespace belongs to exactly one ClusterQueue's "
               "namespaceSelector)")]
    same_queue = _dev()
    same_queue["inferenceTraining"]["training"]["clusterQueue"] = "c12-inference-cq"
    assert _problems(settings_rules.check_unique_names, same_queue) == [
        _twice(f"{IT}.training.clusterQueue", "ClusterQueue name", "c12-inference-cq", f"{IT}.inference.clusterQueue",
               "rename one of the ClusterQueues"),
        (f"{IT}.training.clusterQueue", "c12-inference-cq",
         "the tenant label value 'c12-inference-cq' of namespaceLabel kueue.x-k8s.io/queue is already used at "
         f"{IT}.inference.clusterQueue: both ClusterQueues would select kueue.x-k8s.io/queue=c12-inference-cq",
         "give each ClusterQueue its own tenant value (two ClusterQueues selecting the same tenant label would share "
         "its namespaces)", "")]
    assert _problems(settings_rules.check_unique_names, _dev()) == []


def test_names_used_twice_in_the_shared_pool_whole():
    # A tenant's ClusterQueue is its clusterQueue when set (key ...clusterQueue), else "<name>-cq" (key ...name); its
    # namespaces are its namespaces when set (key ...namespaces[j]), else its name (key ...name).
    raw = fixture_raw("guide-shared-pool")
    tenants = raw["sharedPool"]["tenants"]
    tenants[0]["clusterQueue"] = "q0"
    tenants[1].update(clusterQueue="q0", namespaces=["ns-b", "ns-a"])
    tenants.append({"name": "c", "floor": {"nvidia.com/gpualloc": "1"}})
    tenants.append({"name": "d", "clusterQueue": "c-cq", "floor": {"nvidia.com/gpualloc": "1"}})
    queue_fix = "rename one of the ClusterQueues"
    assert _problems(settings_rules.check_unique_names, raw) == [
        _twice(f"{SP}.tenants[1].clusterQueue", "ClusterQueue name", "q0", f"{SP}.tenants[0].clusterQueue", queue_fix),
        _twice(f"{SP}.tenants[3].clusterQueue", "ClusterQueue name", "c-cq", f"{SP}.tenants[2].name", queue_fix),
        _twice(f"{SP}.tenants[1].namespaces[1]", "namespace", "ns-a", f"{SP}.tenants[0].name",
               "list the namespace under one ClusterQueue only (each namespace belongs to exactly one ClusterQueue's "
               "namespaceSelector)")]


def test_priority_class_names_used_twice_across_both_layouts_whole():
    raw = stack_raw("prod")  # both layouts; inference and training name online-inference and online-training
    raw["sharedPool"]["priorityClasses"] = [{"name": "online-training", "value": 100}, {"name": "batch", "value": 50},
                                            {"name": "batch", "value": 40}]
    fix = "rename one of the WorkloadPriorityClasses"
    assert _problems(settings_rules.check_unique_names, raw) == [
        _twice(f"{SP}.priorityClasses[0].name", "WorkloadPriorityClass name", "online-training",
               f"{IT}.training.priorityClass.name", fix),
        _twice(f"{SP}.priorityClasses[2].name", "WorkloadPriorityClass name", "batch", f"{SP}.priorityClasses[1].name",
               fix)]
