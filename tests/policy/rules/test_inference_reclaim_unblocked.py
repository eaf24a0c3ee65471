"""inference-reclaim-unblocked: the model of Kueue 0.19.2's reclaim over the whole cohort tree (fair sharing without
FairSharingPreemptWithinNominal over a borrowing subtree, another queue's borrowWithinCohort, WorkloadPriorityClasses
at or above inference that training namespaces can name), with several members of each class, and the structures
the model says cannot block reclaim (lendingLimit, Cohort quota, nesting, fair-sharing weights with the gate on)."""
from __future__ import annotations

import copy
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.components.checks.validation import validate
from kueue_cohorts.policy.rules.book import RULES, run
from kueue_cohorts.policy.rules.inference_reclaim_unblocked import INFERENCE_RECLAIM_UNBLOCKED, fair_sharing_settings
from tests.helpers import stack_raw
from tests.policy.fixtures import (
    GPU_RESOURCES,
    INFERENCE_NOMINAL,
    SAFE_MANAGER_CONFIG,
    UNKNOWN,
    cluster_queue,
    compliant,
    kueue_config_map,
    priority_class,
    stack,
)

CONFIG = {"inference-reclaim-unblocked": {"inferenceClusterQueues": ["c12-inference-cq"],
                                          "inferencePriorityClasses": ["c12-inference-prio"],
                                          "trainingPriorityClasses": ["c12-training-prio"]}}
ZERO = {k: "0" for k in GPU_RESOURCES}


def findings(manifests: dict[str, dict], config: dict | None = None) -> list[str]:
    return [v.message for rule, v in run(stack(manifests), config or CONFIG) if rule is INFERENCE_RECLAIM_UNBLOCKED]


def cohort(name: str, parent: str | None = None, resources: list[dict] | None = None, weight: str | None = None
           ) -> dict:
    spec: dict = {}
    if parent:
        spec["parentName"] = parent
    if resources is not None:
        spec["resourceGroups"] = [{"coveredResources": sorted({r["name"] for r in resources}),
                                   "flavors": [{"name": "c12-default", "resources": resources}]}]
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def fair_sharing(gate: bool | None, strategies: str = "", flag: bool = False) -> str:
    text = SAFE_MANAGER_CONFIG + f"fairSharing: {{{strategies}}}\n"
    if gate is not None and not flag:
        text += f"featureGates:\n  FairSharingPreemptWithinNominal: {str(gate).lower()}\n"
    return text


def nested(manifests: dict[str, dict], sibling_borrowing: dict | None, cohort_limit: str | None = None) -> None:
    """Put the inference queue in Cohort 'serving' under root 'c12-shared', beside a 'batch' queue in the same
    subtree that may borrow (`sibling_borrowing`: its borrowingLimit, None = unlimited); training stays under the
    root. `cohort_limit`: the borrowingLimit of 'serving' on every resource."""
    manifests["inference-cq"]["spec"]["cohortName"] = "serving"
    resources = None
    if cohort_limit is not None:
        resources = [{"name": r, "nominalQuota": "0", "borrowingLimit": cohort_limit} for r in GPU_RESOURCES]
    manifests["serving"] = cohort("serving", "c12-shared", resources)
    manifests["batch-cq"] = cluster_queue("batch-cq", "training", {**ZERO, "cpu": "1"}, sibling_borrowing,
                                          cohort="serving")


# --- fair sharing ---------------------------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["", "preemptionStrategies: [LessThanOrEqualToFinalShare]",
                        "preemptionStrategies: [LessThanInitialShare]",
                        "preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]"]),
       st.sampled_from([None, {**ZERO, "cpu": "2"}, {k: "1" for k in GPU_RESOURCES}]),
       st.booleans())
def test_fair_sharing_with_the_gate_off_over_a_borrowing_subtree_blocks_reclaim(strategies, borrowing, grand):
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(fair_sharing(False, strategies))
    nested(manifests, borrowing)
    if grand:  # one more level: serving -> platform -> c12-shared
        manifests["serving"]["spec"]["parentName"] = "platform"
        manifests["platform"] = cohort("platform", "c12-shared")
    found = findings(manifests)
    assert len(found) == 1, found
    assert found[0].startswith(
        "The ConfigMap 'kueue-system/kueue-manager-config' has data['controller_manager_config.yaml'].featureGates."
        "FairSharingPreemptWithinNominal = False: with fair sharing on and FairSharingPreemptWithinNominal off, "
        "Kueue 0.19.2 lets the inference ClusterQueue 'c12-inference-cq' preempt a borrower outside Cohort 'serving' "
        "only when the share of 'serving'")
    assert "ClusterQueue 'batch-cq' in that subtree may borrow" in found[0]
    assert found[0].endswith(
        "remove featureGates.FairSharingPreemptWithinNominal: false (Kueue's default is on), or set borrowingLimit 0 "
        f"for '{found[0].split(' for ')[-1].split(chr(39))[1]}' of flavor 'c12-default' on Cohort 'serving', or put "
        "'c12-inference-cq' directly under the root of its tree.")


def test_the_gate_off_through_the_manager_flag_counts_too():
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(fair_sharing(None))
    manifests["kueue-manager"] = {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                                  "spec": {"template": {"spec": {"containers": [{
                                      "name": "manager", "image": "kueue",
                                      "args": ["--config=/c.yaml",
                                               "--feature-gates=TopologyAwareScheduling=true,"
                                               "FairSharingPreemptWithinNominal=false"]}]}}}}
    nested(manifests, None)
    assert len(findings(manifests)) == 1


def test_the_gate_off_through_the_kueue_charts_values_counts_too():
    manifests = compliant()
    manifests.pop("kueue-config")
    manifests["kueue"] = {"apiVersion": "helm.sh/v4", "kind": "Chart", "metadata": {"name": "kueue"},
                          "chart": "oci://registry.k8s.io/kueue/charts/kueue",
                          "values": {"controllerManager": {"featureGates": [
                              {"name": "FairSharingPreemptWithinNominal", "enabled": False}]},
                              "managerConfig": {"controllerManagerConfigYaml": fair_sharing(None)}}}
    nested(manifests, None)
    found = findings(manifests)
    assert len(found) == 1 and found[0].startswith(
        "The Chart 'kueue' has values.managerConfig.controllerManagerConfigYaml.featureGates."
        "FairSharingPreemptWithinNominal = False"), found


@pytest.mark.parametrize("gate, weight", list(product([None, True], ["0", "0.5", None])))
def test_fair_sharing_with_the_gate_on_or_default_never_blocks(gate, weight):
    """FairSharingPreemptWithinNominal (on by default since 0.17): a within-nominal preemptor bypasses the shares,
    whatever the weights (preemption.go runFirstFsStrategy)."""
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(fair_sharing(gate))
    nested(manifests, None)
    manifests["serving"] = cohort("serving", "c12-shared", weight=weight)
    assert findings(manifests) == []


@pytest.mark.parametrize("limit", ["0", None])
def test_flat_tree_or_a_closed_subtree_passes_with_the_gate_off(limit):
    """The inference queue directly under the root (its almost-LCA share is its own, 0), or a subtree whose Cohort
    sets borrowingLimit 0 (it never borrows, share 0)."""
    flat = compliant()
    flat["kueue-config"] = kueue_config_map(fair_sharing(False))
    assert findings(flat) == []
    closed = compliant()
    closed["kueue-config"] = kueue_config_map(fair_sharing(False))
    nested(closed, None, cohort_limit="0")
    if limit is None:  # the sibling itself may not borrow
        nested(closed, ZERO)
    assert findings(closed) == []


def test_fair_sharing_off_with_the_gate_off_passes():
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(SAFE_MANAGER_CONFIG + "featureGates:\n"
                                                 "  FairSharingPreemptWithinNominal: false\n")
    nested(manifests, None)
    assert findings(manifests) == []


def test_an_unknown_configuration_fails_closed():
    manifests = compliant()
    manifests["kueue-config"]["data"]["controller_manager_config.yaml"] = UNKNOWN
    found = findings(manifests)
    assert any("data.controller_manager_config.yaml unknown at preview" in m or
               "controller_manager_config.yaml" in m and "unknown at preview" in m for m in found), found


def test_fair_sharing_settings_reads_v1beta1_enable():
    objs = stack({"c": kueue_config_map(SAFE_MANAGER_CONFIG + "fairSharing:\n  enable: false\n")})
    assert [f.enabled for f in fair_sharing_settings(objs)] == [False]


# --- borrowWithinCohort ---------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.sampled_from([None, 1000, 5000]), st.sampled_from(["cpu", "nvidia.com/gpualloc"]),
       st.sampled_from([None, "1"]))
def test_borrow_within_cohort_reaches_an_inference_queue_that_may_borrow(threshold, resource, limit):
    manifests = compliant()
    for entry in manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if entry["name"] == resource:
            if limit is None:
                entry.pop("borrowingLimit")
            else:
                entry["borrowingLimit"] = limit
    bwc: dict = {"policy": "LowerPriority"}
    if threshold is not None:
        bwc["maxPriorityThreshold"] = threshold
    manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"] = bwc
    manifests["urgent"] = priority_class("c12-urgent", 2000, "training")  # outranks inference (ranked elsewhere)
    found = findings(manifests)
    assert len(found) == 1, found
    assert found[0].startswith("The ClusterQueue 'c12-training-cq' has spec.preemption.borrowWithinCohort = ")
    assert (f"the inference ClusterQueue 'c12-inference-cq' of the same cohort tree 'c12-shared' may borrow "
            f"'{resource}' of flavor 'c12-default'") in found[0]


@pytest.mark.parametrize("threshold, inference_borrows", list(product([0, 10, 999], [False, True])))
def test_borrow_within_cohort_cannot_reach_inference(threshold, inference_borrows):
    """Below the inference priority the threshold keeps inference out of reach; and an inference queue with
    borrowingLimit 0 is never above its nominal quota, so no borrower can preempt it (candidate_generator.go)."""
    manifests = compliant()
    manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"] = {
        "policy": "LowerPriority", "maxPriorityThreshold": threshold}
    manifests["urgent"] = priority_class("c12-urgent", 2000, "training")
    if inference_borrows:
        manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("borrowingLimit")
    else:
        manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"].pop("maxPriorityThreshold")
    assert findings(manifests) == []


# --- WorkloadPriorityClasses ----------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1000, max_value=1_000_000_000), st.sampled_from([None, "tenant", "batch"]))
def test_a_priority_class_at_or_above_inference_that_training_can_name_is_refused(value, role):
    manifests = compliant()
    manifests["urgent"] = priority_class("urgent", value, role)
    found = findings(manifests)
    assert found == [
        f"The WorkloadPriorityClass 'urgent' has value = {value}: any training or tenant namespace may name it in "
        "kueue.x-k8s.io/priority-class (Kueue 0.19.2 has no per-namespace restriction on WorkloadPriorityClasses; "
        "e.g. LocalQueue 'c12-training/c12-training-lq'), and its value is at or above the lowest inference priority "
        "1000, so such workloads rank with inference in Kueue's admission and preemption order; lower its value "
        "below 1000, or delete it, or label it kueue-cohorts/role: inference when only inference uses it."]


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1000, max_value=10**6))
def test_a_cluster_priority_class_from_the_pack_config_counts_too(value):
    config = copy.deepcopy(CONFIG)
    config[INFERENCE_RECLAIM_UNBLOCKED.name]["priorityClasses"] = {"cluster-urgent": value, "cluster-low": 5}
    found = findings(compliant(), config)
    assert len(found) == 1 and found[0].startswith(
        f"The WorkloadPriorityClass 'cluster-urgent' of the cluster (policy config priorityClasses, value {value})")


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=-10**6, max_value=999))
def test_classes_below_inference_or_of_inference_pass(value):
    manifests = compliant()
    manifests["low"] = priority_class("low", value)
    manifests["serve-2"] = priority_class("serve-2", 5000, "inference")
    assert findings(manifests) == []


def test_no_training_queue_no_finding():
    manifests = compliant()
    for name in ("training-cq", "training-lq", "job", "runtime", "ckpt"):
        manifests.pop(name)
    manifests["urgent"] = priority_class("urgent", 5000)
    assert findings(manifests) == []


# --- what cannot block reclaim in 0.19.2 ----------------------------------------------------------------------------

@pytest.mark.parametrize("lending, cohort_quota, nest, fs",
                         list(product([None, "0", "1", "4"], [None, "2"], [False, True], [False, True])))
def test_lending_limits_cohort_quota_and_nesting_do_not_block_classical_reclaim(lending, cohort_quota, nest, fs):
    """A lendingLimit on inference only lowers what it lends; Cohort quota and nested Cohorts keep a borrower of
    inference's quota above nominal up to the common ancestor (hierarchical_preemption.go), so classical reclaim
    (and fair sharing with its default gate) takes it back."""
    manifests = compliant()
    if lending is not None:
        for entry in manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
            entry["lendingLimit"] = lending
    if nest:
        nested(manifests, None)
    if cohort_quota is not None:
        manifests["root"] = cohort("c12-shared", None, [{"name": "cpu", "nominalQuota": cohort_quota}])
    if fs:
        manifests["kueue-config"] = kueue_config_map(fair_sharing(None))
    assert findings(manifests) == []


def test_the_rule_is_in_the_book_under_promise_3():
    rule = next(r for r in RULES if r.name == INFERENCE_RECLAIM_UNBLOCKED.name)
    assert rule.mandatory and rule.stack and rule.promise.value == "inference-can-reclaim"
    assert INFERENCE_NOMINAL  # the fixture's inference queue is the one judged


# --- fail closed ----------------------------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(st.sampled_from([("urgent", ("value",), "value"),
                        ("urgent", ("metadata", "name"), "metadata.name"),
                        ("training-cq", ("spec", "preemption", "borrowWithinCohort"),
                         "spec.preemption.borrowWithinCohort"),
                        ("serving", ("spec", "parentName"), "spec.parentName"),
                        ("batch-cq", ("spec", "resourceGroups"), "spec.resourceGroups")]))
def test_a_value_unknown_at_preview_is_a_named_violation_never_an_exception(case):
    name, path, field = case
    manifests = compliant()
    manifests["kueue-config"] = kueue_config_map(fair_sharing(False))
    nested(manifests, None)
    manifests["urgent"] = priority_class("urgent", 5000)
    manifests["training-cq"]["spec"]["preemption"]["borrowWithinCohort"] = {"policy": "LowerPriority"}
    # an inference queue that may borrow, so the borrowWithinCohort of the others is read (only needed values count)
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].pop("borrowingLimit")
    node = manifests[name]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = UNKNOWN
    found = findings(manifests)
    assert any(f"has {field} unknown at preview, so this policy cannot check it and fails closed" in m
               for m in found), found


# --- the settings check ---------------------------------------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["prod", "staging"]), st.integers(min_value=1000, max_value=2**31 - 1))
def test_the_settings_check_refuses_a_shared_pool_class_at_or_above_inference_at_its_key(stack_name, value):
    raw = stack_raw(stack_name)
    raw["sharedPool"]["priorityClasses"][0]["value"] = value
    problems = [p for p in validate(raw).problems if p.policy == INFERENCE_RECLAIM_UNBLOCKED.name]
    assert [(p.key, p.value) for p in problems] == [("kueue-cohorts:sharedPool.priorityClasses[0].value", value)]
    assert problems[0].fix == ("lower its value below 1000, or delete it, or label it kueue-cohorts/role: inference "
                               "when only inference uses it")
    raw["sharedPool"]["priorityClasses"][0]["value"] = 999
    assert not [p for p in validate(raw).problems if p.policy == INFERENCE_RECLAIM_UNBLOCKED.name]
