"""Every bad stack config of issue 2 fails with one message naming key, value, rule and fix; nothing registered."""
from __future__ import annotations

import json
from typing import Callable

import pytest

from components.errors import SettingsError
from components.settings import load_settings
from tests.helpers import fixture_raw, run_main, stack_raw


def _dev() -> dict:
    return stack_raw("dev")


def _pool() -> dict:
    return fixture_raw("guide-shared-pool")


def _set(path: str, value) -> Callable[[dict], None]:
    def mutate(raw: dict) -> None:
        node = raw
        parts = path.split("|")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is _DELETE:
            del node[parts[-1]]
        else:
            node[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return mutate


_DELETE = object()
IT = "kueue-cohorts:inferenceTraining"
SP = "kueue-cohorts:sharedPool"

# (case id, base config, mutation, expected key, expected words in the rule)
CASES = [
    ("inference-borrowing-nonzero", _dev, _set("inferenceTraining|inference|borrowingLimit", {"nvidia.com/gpualloc": "1"}),
     f'{IT}.inference.borrowingLimit["nvidia.com/gpualloc"]', "must never borrow"),
    ("inference-reclaim-lower", _dev, _set("inferenceTraining|inference|preemption|reclaimWithinCohort", "LowerPriority"),
     f"{IT}.inference.preemption.reclaimWithinCohort", "reclaim"),
    ("nominal-above-capacity", _dev, _set("nodePools|0|capacity|nvidia.com/gpucores", "10"),
     f'{IT}.inference.nominalQuota["nvidia.com/gpucores"]', "above the physical capacity 10"),
    ("cohort-quota-counts-toward-capacity", _dev, _set("inferenceTraining|cohortQuota", {"nvidia.com/gpualloc": "1"}),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "sums to 2"),
    ("capacity-undeclared", _dev, _set("nodePools|0|capacity", {"cpu": "8", "memory": "32Gi"}),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "no node pool declares"),
    ("inference-quota-on-cohort", _dev, lambda r: (
        r["inferenceTraining"]["inference"]["nominalQuota"].update({"nvidia.com/gpualloc": "0"}),
        r["inferenceTraining"].update({"cohortQuota": {"nvidia.com/gpualloc": "1"}})),
     f'{IT}.inference.nominalQuota["nvidia.com/gpualloc"]', "Cohort object"),
    ("inference-workload-too-big", _dev, _set("inferenceTraining|inference|services",
                                             [{"name": "big", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                               "requests": {"nvidia.com/gpucores": "50"}}]),
     f'{IT}.inference.services[0].requests["nvidia.com/gpucores"]', "can never be admitted"),
    ("training-priority-not-below", _dev, _set("inferenceTraining|training|priorityClass|value", 1000),
     f"{IT}.training.priorityClass.value", "below the inference priority"),
    ("undefined-priority-class", _dev, _set("inferenceTraining|inference|services",
                                           [{"name": "w", "modelFormat": "huggingface", "storageUri": "pvc://m",
                                             "requests": {"cpu": "1"}, "priorityClass": "nope"}]),
     f"{IT}.inference.services[0].priorityClass", "does not define"),
    ("lending-above-nominal", _pool, _set("sharedPool|tenants|0|lendingLimit", {"nvidia.com/gpualloc": "3"}),
     f'{SP}.tenants[0].lendingLimit["nvidia.com/gpualloc"]', "cannot exceed the floor"),
    ("borrowing-beyond-pool", _pool, _set("sharedPool|tenants|0|borrowingLimit", {"nvidia.com/gpualloc": "5"}),
     f'{SP}.tenants[0].borrowingLimit["nvidia.com/gpualloc"]', "cannot exceed the pool total 6"),
    ("negative-quantity", _pool, _set("sharedPool|tenants|1|floor|nvidia.com/gpualloc", "-2"),
     f'{SP}.tenants[1].floor["nvidia.com/gpualloc"]', "must not be negative"),
    ("not-a-quantity", _pool, _set("sharedPool|tenants|1|floor|nvidia.com/gpualloc", "two"),
     f'{SP}.tenants[1].floor["nvidia.com/gpualloc"]', "not a Kubernetes quantity"),
    ("no-cohort", _pool, _set("sharedPool|cohort", _DELETE), f"{SP}.cohort", "Field required"),
    ("not-dns-1123", _dev, _set("inferenceTraining|inference|clusterQueue", "C12_Inference"),
     f"{IT}.inference.clusterQueue", "DNS-1123"),
    ("duplicate-tenant", _pool, lambda r: r["sharedPool"]["tenants"].append(
        {"name": "ns-a", "clusterQueue": "other-cq", "namespaces": ["other"], "floor": {"nvidia.com/gpualloc": "0"}}),
     f"{SP}.tenants", "duplicate tenant name"),
    ("duplicate-cluster-queue", _dev, _set("inferenceTraining|training|clusterQueue", "c12-inference-cq"),
     f"{IT}.training.clusterQueue", "duplicate ClusterQueue name"),
    ("typo-key", _dev, _set("inferenceTraining|training|borowingLimit", {"cpu": "1"}),
     f"{IT}.training.borowingLimit", "Extra inputs are not permitted"),
    ("typo-top-level-key", _dev, _set("inferenceTrainig", {}), "kueue-cohorts:inferenceTrainig", "Extra inputs"),
    ("enum-wrong-case", _dev, _set("inferenceTraining|training|preemption|withinClusterQueue", "lowerPriority"),
     f"{IT}.training.preemption.withinClusterQueue", "'LowerPriority'"),
    ("borrow-within-cohort-needs-reclaim", _pool, _set("sharedPool|preemption",
        {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}),
     f"{SP}.preemption.borrowWithinCohort.policy", "reclaimWithinCohort is Never"),
    ("floors-differ-in-resources", _pool, _set("sharedPool|tenants|0|floor|cpu", "1"),
     f'{SP}.tenants[1].floor.cpu', "same resources"),
    ("render-without-dir", _pool, _set("cluster|renderDir", _DELETE), "kueue-cohorts:cluster.renderDir", "render mode"),
    ("manage-jobs-without-selector", _dev, _set("kueue", {"manageJobsWithoutQueueName": True}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "must exclude ['kube-system', 'kueue-system']"),
    ("manage-jobs-selector-keeps-kube-system", _dev, _set("kueue", {
        "manageJobsWithoutQueueName": True, "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kueue-system"]}]}}),
     "kueue-cohorts:kueue.managedJobsNamespaceSelector", "must exclude"),
    ("wait-for-pods-ready-needs-backoff-limit", _dev, _set("kueue", {"waitForPodsReady": {"timeout": "5m"}}),
     "kueue-cohorts:kueue.waitForPodsReady.requeuingStrategy", "Field required"),
    ("wait-for-pods-ready-bad-timeout", _dev, _set("kueue", {"waitForPodsReady": {
        "timeout": "5 minutes", "requeuingStrategy": {"backoffLimitCount": 3}}}),
     "kueue-cohorts:kueue.waitForPodsReady.timeout", "Go duration"),
    ("unknown-integration", _dev, _set("kueue", {"integrations": ["batch/job", "kserve"]}),
     "kueue-cohorts:kueue.integrations[1]", "not a Kueue integration"),
    ("runtime-asks-more-than-training-can-borrow", _dev, _set("trainingRuntime", {"limits": {
        "cpu": "2", "memory": "4Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "50", "nvidia.com/gpumem": "4096"}}),
     'kueue-cohorts:trainingRuntime.limits["nvidia.com/gpucores"]', "can never admit"),
    ("runtime-without-checkpoint", _dev, _set("inferenceTraining|training|checkpoint", _DELETE),
     "kueue-cohorts:trainingRuntime", "mounts their checkpoint PVC"),
    ("no-layout", _dev, _set("inferenceTraining", _DELETE), "kueue-cohorts:inferenceTraining", "at least one"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_config_is_refused_with_its_problem(case):
    _, base, mutate, key, words = case
    raw = base()
    mutate(raw)
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    matching = [p for p in caught.value.problems if p.key == key]
    assert matching, f"no problem at {key}; got {[p.key for p in caught.value.problems]}"
    problem = matching[0]
    assert words in problem.rule
    assert problem.fix
    assert key in str(caught.value) and "Fix:" in str(caught.value)


def test_every_problem_is_reported_at_once():
    raw = _dev()
    _set("inferenceTraining|inference|borrowingLimit", {"cpu": "1"})(raw)
    _set("inferenceTraining|inference|preemption|reclaimWithinCohort", "Never")(raw)
    _set("inferenceTraining|training|priorityClass|value", 5000)(raw)
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    keys = [p.key for p in caught.value.problems]
    assert keys == [
        "kueue-cohorts:inferenceTraining.inference.borrowingLimit.cpu",
        "kueue-cohorts:inferenceTraining.inference.preemption.reclaimWithinCohort",
        # the dev stack's borrowWithinCohort LowerPriority is invalid once reclaimWithinCohort is Never
        "kueue-cohorts:inferenceTraining.inference.preemption.borrowWithinCohort.policy",
        "kueue-cohorts:inferenceTraining.training.priorityClass.value",
    ]
    assert str(caught.value).startswith("invalid stack config: 4 problems")


def test_bad_config_registers_no_resource():
    raw = _dev()
    raw["cluster"] = {"mode": "render", "renderDir": "build/rendered/unit"}
    _set("inferenceTraining|inference|borrowingLimit", {"nvidia.com/gpualloc": "1"})(raw)
    config = {f"kueue-cohorts:{k}": json.dumps(v) for k, v in raw.items()}
    recorded = []
    with pytest.raises(Exception) as caught:
        recorded.append(run_main(config))
    assert "must never borrow" in str(caught.value)
    assert not recorded  # the program raised before registering anything (the mocks saw no resource)


def test_good_stacks_validate():
    for name in ("dev", "staging", "prod"):
        load_settings(stack_raw(name))


def test_a_misspelt_required_key_is_one_problem_with_a_suggestion():
    raw = _dev()
    raw["inferenceTraining"]["training"]["localQeue"] = raw["inferenceTraining"]["training"].pop("localQueue")
    with pytest.raises(SettingsError) as caught:
        load_settings(raw)
    assert [(p.key, p.rule, p.fix) for p in caught.value.problems] == [
        ("kueue-cohorts:inferenceTraining.training.localQeue", "unknown key (a typo?)",
         "did you mean 'localQueue'? Rename the key")]
