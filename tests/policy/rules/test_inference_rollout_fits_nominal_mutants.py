"""inference-rollout-fits-nominal: what the policy-inference-rollout-fits-nominal mutation run found no test pinning
down. Whole findings (policy, object, field, value, message written out by hand) for the serving kinds' edge cases:
a LeaderWorkerSet's maxSurge that Kubernetes' validation refuses (lws@v0.9.0 `leaderworkerset_types.go`:
`rollingUpdateConfiguration.maxSurge` an int or percentage, default 0; `rolloutStrategy.type` only RollingUpdate), its
`leaderWorkerTemplate.size` left out (default 1), a request that is no quantity in the worker or leader template.
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import UNKNOWN, compliant, stack
from tests.policy.rules.test_inference_rollout_fits_nominal import CONFIG, lws

POLICY = "inference-rollout-fits-nominal"
VLLM = ObjectRef("LeaderWorkerSet", "c12-inference", "vllm")
SURGE = "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge"


def whole(workload: dict) -> list[tuple[Any, ...]]:
    """The policy's findings for the compliant stack without its InferenceService, plus `workload`:
    (policy, subject, field, value, message) each."""
    manifests = compliant()
    manifests.pop("isvc")
    manifests["workload"] = workload
    return [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(manifests), CONFIG)
            if rule.name == POLICY]


@pytest.mark.parametrize("surge, shown", [("lots", "'lots'"), (-1, "-1"), (True, "True"), ("25", "'25'")])
def test_a_leaderworkerset_surge_kubernetes_refuses_is_one_whole_finding(surge, shown):
    """A maxSurge that is neither an int >= 0 nor a percentage: the finding at the field, with the value, and a fix
    for a LeaderWorkerSet, whose rolloutStrategy has no Recreate type (before, the fix said "or type Recreate", which
    its API refuses). Kills the mutants of `lws_strategy_of`'s validation and of the invalid Strategy's fields."""
    assert whole(lws(1, 2, {"cpu": "1"}, surge=surge)) == [(
        POLICY, VLLM, SURGE, surge,
        f"The LeaderWorkerSet 'c12-inference/vllm' has {SURGE} = {shown}: maxSurge {shown} is neither an integer >= 0 "
        "nor a percentage such as '25%'; use an integer >= 0 or a percentage of spec.replicas such as '25%' (a "
        "LeaderWorkerSet's rolloutStrategy has no Recreate type).")]


def test_a_deployment_surge_kubernetes_refuses_keeps_the_recreate_fix():
    """The same value on a Deployment (apps/v1 strategy RollingUpdate or Recreate): its fix names Recreate."""
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["deploymentStrategy"] = {"rollingUpdate": {"maxSurge": "lots"}}
    found = [v for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]
    assert [(v.field, v.value, v.fix) for v in found] == [(
        "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge", "lots",
        "use an integer >= 0 or a percentage such as '25%' (RollingUpdate), or type Recreate")]


def test_a_leaderworkerset_without_size_has_groups_of_one_pod():
    """`leaderWorkerTemplate.size` left out is 1 (lws API default): 2 groups of one cpu-1 pod plus a surge of 1 fit
    cpu 4; 5 groups in steady state do not. Kills the mutants of the size default."""
    assert whole(lws(2, None, {"cpu": "1"}, surge=1)) == []
    assert whole(lws(5, None, {"cpu": "1"})) == [(
        POLICY, VLLM, "spec.replicas", 5,
        "The LeaderWorkerSet 'c12-inference/vllm' has spec.replicas = 5: replicas 5 x the per-replica requests needs "
        "more than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 5 > 4); inference never borrows, so the "
        "replicas beyond 4 stay SchedulingGated for ever and every rollout deadlocks; lower replicas to 4, or raise "
        "the nominalQuota of 'cpu' to 5.")]


@pytest.mark.parametrize("template", ["workerTemplate", "leaderTemplate"])
def test_a_request_that_is_no_quantity_names_its_template(template):
    """A cpu request 'lots' in the worker or the leader template: the finding names the template's container
    (kills the mutants of the `where` of `_lws_group_requests`)."""
    workload = lws(1, 2, {"cpu": "1"}, leader={"cpu": "1"})
    workload["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = \
        "lots"
    assert [f[4] for f in whole(workload)] == [
        f"The LeaderWorkerSet 'c12-inference/vllm' has spec.leaderWorkerTemplate.{template}.spec.containers[0]."
        "resources of 'cpu' is 'lots', which is not a Kubernetes quantity; fix the quantity."]


def test_a_resource_only_the_workers_request_counts_size_minus_one_times():
    """Leader cpu 500m; workers cpu 500m and memory 3Gi; size 2: a group is cpu 1 and memory 3Gi (the workers'
    memory counted from zero, not from the leader's), so 3 groups need memory 9Gi > 8Gi and 2 fit. Kills the
    mutants of the per-resource start in `_lws_group_requests`."""
    assert whole(lws(3, 2, {"cpu": "500m", "memory": "3Gi"}, leader={"cpu": "500m"})) == [(
        POLICY, VLLM, "spec.replicas", 3,
        "The LeaderWorkerSet 'c12-inference/vllm' has spec.replicas = 3: replicas 3 x the per-replica requests needs "
        "more than the nominalQuota of ClusterQueue 'c12-inference-cq' ('memory' 9Gi > 8Gi); inference never borrows, "
        "so the replicas beyond 2 stay SchedulingGated for ever and every rollout deadlocks; lower replicas to 2, or "
        "raise the nominalQuota of 'memory' to 9Gi.")]


@pytest.mark.parametrize("kind", ["BlueGreen", "rollingupdate"])
def test_a_deployment_strategy_type_kubernetes_refuses_is_one_whole_finding(kind):
    """apps/v1 DeploymentStrategy.type is RollingUpdate or Recreate (case-sensitive; k8s.io/api apps/v1 types.go):
    any other type is reported at spec.strategy.type with its value (kills the mutants of that Strategy's
    fields)."""
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["deploymentStrategy"] = {"type": kind}
    found = [(v.policy, v.field, v.value, v.message) for rule, v in run(stack(manifests), CONFIG)
             if rule.name == POLICY]
    assert found == [(
        POLICY, "spec.predictor.deploymentStrategy.type", kind,
        f"The InferenceService 'c12-inference/c12-inference-demo' has spec.predictor.deploymentStrategy.type = "
        f"'{kind}': the strategy type must be RollingUpdate or Recreate; use an integer >= 0 or a percentage such as "
        "'25%' (RollingUpdate), or type Recreate.")]


def _deployment(containers: list[dict], init: list[dict] | None = None, replicas: int = 1) -> dict:
    """A Deployment on the inference queue with these containers (and init containers), maxSurge 0."""
    pod: dict = {"containers": containers}
    if init is not None:
        pod["initContainers"] = init
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve", "namespace": "c12-inference"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "serve"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                     "template": {"metadata": {"labels": {"app": "serve",
                                                          "kueue.x-k8s.io/queue-name": "c12-inference-lq"}},
                                  "spec": pod}}}


def _container(name: str, requests: dict | None = None, limits: dict | None = None) -> dict:
    resources: dict = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "vllm", "resources": resources}


ONE_POD = ("The Deployment 'c12-inference/serve' has spec.template.spec = \"'cpu' 5 > 4\": one pod asks for more "
           "than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 5 > 4); inference never borrows, so it can "
           "never be admitted; lower the pod's requests, or raise the nominalQuota of 'cpu' to 5.")


@pytest.mark.parametrize("containers, init", [
    ([_container("a", limits={"cpu": "5"})], None),
    ([_container("a", {"cpu": "3"}), _container("b", {"cpu": "2"})], None),
    ([_container("a", {"cpu": "5"})], [_container("fetch", {"cpu": "1"})]),
    ([_container("a", {"cpu": "1"})], [_container("fetch", {"cpu": "5"})]),
])
def test_a_pods_requests_are_counted_as_kueue_counts_them(containers, init):
    """Per pod, the effective requests (Kubernetes v1.36 k8s.io/component-helpers `resource.PodRequests`, what Kueue
    counts for a pod): a limit without a request requests the limit (core/v1 defaulting), the containers add up, an
    init container counts at least its own request, never added to them.
    Each pod here needs cpu 5 > 4. Kills the mutants of the limits read, of the sum
    and of the init containers' max."""
    manifests = compliant()
    manifests["serve"] = _deployment(containers, init)
    found = [v.message for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]
    assert found == [ONE_POD]


def test_a_resource_only_an_init_container_requests_counts_from_zero():
    """5 replicas of a pod whose containers request memory 1Gi and whose init container alone requests cpu 500m:
    cpu 2.5 and memory 5Gi fit cpu 4 and 8Gi (the init container's cpu is not raised to a whole core)."""
    manifests = compliant()
    manifests["serve"] = _deployment([_container("a", {"memory": "1Gi"})], [_container("fetch", {"cpu": "500m"})],
                                     replicas=5)
    assert [v for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY] == []


@pytest.mark.parametrize("where", ["containers", "initContainers"])
def test_a_request_that_is_no_quantity_names_its_container(where):
    """A Deployment's container or init container requesting cpu 'lots': the finding names it under
    spec.template.spec (kills the mutants of `_pod_requests`' default `where` and of the container paths)."""
    manifests = compliant()
    pod = [_container("a", {"cpu": "1"})]
    bad = [_container("x", {"cpu": "lots"})]
    manifests["serve"] = _deployment(bad if where == "containers" else pod, bad if where == "initContainers" else None)
    found = [v.message for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]
    assert found == [f"The Deployment 'c12-inference/serve' has spec.template.spec.{where}[0].resources of 'cpu' is "
                     "'lots', which is not a Kubernetes quantity; fix the quantity."]


def _inference_queue(flavors: list[tuple[str, dict]]) -> dict:
    """The inference ClusterQueue with these (flavor, nominalQuota) pairs, borrowingLimit 0 everywhere."""
    covered = sorted({r for _, nominal in flavors for r in nominal})
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "c12-inference-cq", "labels": {"kueue-cohorts/role": "inference"}},
            "spec": {"cohortName": "c12-shared",
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "c12-inference"}},
                     "resourceGroups": [{"coveredResources": covered, "flavors": [
                         {"name": flavor, "resources": [{"name": r, "nominalQuota": q, "borrowingLimit": "0"}
                                                        for r, q in nominal.items()]}
                         for flavor, nominal in flavors]}],
                     "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}}}


def _rollout_messages(manifests: dict[str, dict]) -> list[str]:
    return [v.message for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]


def test_the_largest_flavor_quota_of_a_resource_is_the_nominal():
    """Flavors 'big' (cpu 8) then 'small' (cpu 2): the nominalQuota read is the largest, 8 (as INFERENCE_FITS_NOMINAL
    reads it), so 5 replicas of cpu 1 fit and 9 do not (kills the mutant that keeps the last flavor's)."""
    manifests = compliant()
    manifests["inference-cq"] = _inference_queue([("big", {"cpu": "8", "memory": "64Gi"}),
                                                  ("small", {"cpu": "2", "memory": "64Gi"})])
    manifests["serve"] = _deployment([_container("a", {"cpu": "1", "memory": "1Gi"})], replicas=5)
    assert _rollout_messages(manifests) == []
    manifests["serve"]["spec"]["replicas"] = 9
    assert _rollout_messages(manifests) == [
        "The Deployment 'c12-inference/serve' has spec.replicas = 9: replicas 9 x the per-replica requests needs more "
        "than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 9 > 8); inference never borrows, so the "
        "replicas beyond 8 stay SchedulingGated for ever and every rollout deadlocks; lower replicas to 8, or raise "
        "the nominalQuota of 'cpu' to 9."]


def test_byte_resources_are_shown_in_binary_units():
    """ephemeral-storage and hugepages-2Mi are bytes, shown like memory ('3Gi'), not as '3221225472' (kills the
    mutants of `_binary`)."""
    manifests = compliant()
    manifests["inference-cq"] = _inference_queue([("c12-default", {
        "cpu": "8", "memory": "8Gi", "ephemeral-storage": "2Gi", "hugepages-2Mi": "2Gi"})])
    manifests["serve"] = _deployment([_container("a", {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi",
                                                       "hugepages-2Mi": "1Gi"})], replicas=3)
    assert _rollout_messages(manifests) == [
        "The Deployment 'c12-inference/serve' has spec.replicas = 3: replicas 3 x the per-replica requests needs more "
        "than the nominalQuota of ClusterQueue 'c12-inference-cq' ('ephemeral-storage' 3Gi > 2Gi, 'hugepages-2Mi' "
        "3Gi > 2Gi); inference never borrows, so the replicas beyond 2 stay SchedulingGated for ever and every "
        "rollout deadlocks; lower replicas to 2, or raise the nominalQuota of 'ephemeral-storage' to 3Gi, "
        "'hugepages-2Mi' to 3Gi."]


def test_replicas_that_arrive_as_a_whole_float_are_that_many():
    """JSON numbers reach the pack as floats through the gRPC Struct: replicas 5.0 is 5 replicas (kills the mutants
    of `_int`'s float branch)."""
    manifests = compliant()
    manifests["serve"] = _deployment([_container("a", {"cpu": "1"})], replicas=5)
    manifests["serve"]["spec"]["replicas"] = 5.0
    assert _rollout_messages(manifests) == [
        "The Deployment 'c12-inference/serve' has spec.replicas = 5.0: replicas 5 x the per-replica requests needs "
        "more than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 5 > 4); inference never borrows, so the "
        "replicas beyond 4 stay SchedulingGated for ever and every rollout deadlocks; lower replicas to 4, or raise "
        "the nominalQuota of 'cpu' to 5."]


def test_an_inference_service_without_min_replicas_runs_one():
    """minReplicas left out is 1 (KServe's default, `component.go`): the guide's one-replica service fits (kills the
    mutants of the default)."""
    manifests = compliant()
    del manifests["isvc"]["spec"]["predictor"]["minReplicas"]
    assert _rollout_messages(manifests) == []


def test_the_peak_finding_carries_max_replicas_as_written():
    """The lifecycle model's maxReplicas value is what the advisory peak policy reports (kills the mutant that drops
    it from the lifecycle)."""
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["maxReplicas"] = 3
    found = [(v.field, v.value) for rule, v in run(stack(manifests), {}) if rule.name == "inference-peak-fits-nominal"]
    assert found == [("spec.predictor.maxReplicas", 3)]


def test_an_update_above_the_replicas_that_fit_is_judged_at_them_and_says_so():
    """maxReplicas 3 of a service whose quota fits 1 replica, KServe's default strategy (25%: 1 surge pod): the update
    is judged at the 1 replica that fits, and the message says it was capped (kills the mutant of that clause)."""
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["maxReplicas"] = 3
    del manifests["isvc"]["spec"]["predictor"]["deploymentStrategy"]
    assert _rollout_messages(manifests) == [
        "The InferenceService 'c12-inference/c12-inference-demo' has spec.predictor.deploymentStrategy = missing: an "
        "update of 1 replicas (maxReplicas, capped at the 1 that fit) with maxSurge the default 25% starts 1 surge "
        "pod(s) and needs 2 replicas' worth of quota, more than the nominalQuota of ClusterQueue 'c12-inference-cq' "
        "('nvidia.com/gpualloc' 2 > 1, 'nvidia.com/gpucores' 40 > 20, 'nvidia.com/gpumem' 4096 > 2048); inference "
        "never borrows and the old replicas have the same priority, so the surge pod stays SchedulingGated and the "
        "rollout never finishes; set the rolling update's maxSurge to 0 and maxUnavailable to 1 (one replica is down "
        "while it is replaced), or reserve headroom: raise the nominalQuota of 'nvidia.com/gpualloc' to 2, "
        "'nvidia.com/gpucores' to 40, 'nvidia.com/gpumem' to 4096."]


def test_an_inference_service_without_max_replicas_peaks_at_its_min():
    """maxReplicas left out reads as minReplicas (KServe `hpa_reconciler.go`): no peak finding, no crash (kills the
    mutant of its default)."""
    manifests = compliant()
    del manifests["isvc"]["spec"]["predictor"]["maxReplicas"]
    assert [v for rule, v in run(stack(manifests), {}) if rule.name in (POLICY, "inference-peak-fits-nominal")] == []


def test_a_leaderworkerset_of_size_one_counts_pods():
    """size 1: each replica is one pod, and the findings say "pod" (kills the mutants of the unit's words)."""
    assert whole(lws(4, 1, {"cpu": "1"}, surge=1)) == [(
        POLICY, VLLM, SURGE, 1,
        f"The LeaderWorkerSet 'c12-inference/vllm' has {SURGE} = 1: an update of 4 replicas with maxSurge 1 starts 1 "
        "surge pod(s) and needs 5 replicas' worth of quota, more than the nominalQuota of ClusterQueue "
        "'c12-inference-cq' ('cpu' 5 > 4); inference never borrows and the old replicas have the same priority, so "
        "the surge pod stays SchedulingGated and the rollout never finishes; set "
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge to 0 (LeaderWorkerSet's default), or reserve "
        "headroom: raise the nominalQuota of 'cpu' to 5.")]
    assert [f[4] for f in whole(lws(1, 1, {"cpu": "6"}))] == [
        "The LeaderWorkerSet 'c12-inference/vllm' has spec.leaderWorkerTemplate = \"'cpu' 6 > 4\": one pod asks for "
        "more than the nominalQuota of ClusterQueue 'c12-inference-cq' ('cpu' 6 > 4); inference never borrows, so it "
        "can never be admitted; lower the pod's requests, or raise the nominalQuota of 'cpu' to 6."]


@pytest.mark.parametrize("where", ["predictor", "worker"])
def test_the_queue_label_where_each_kind_carries_it(where):
    """The queue-name label only on an InferenceService's spec.predictor.labels (KServe copies them to the pods), or
    only on a LeaderWorkerSet's worker template (lws copies it to every pod): the workload is judged (kills the
    mutants of `queue_of`'s paths)."""
    manifests = compliant()
    if where == "predictor":
        labels = manifests["isvc"]["metadata"].pop("labels")
        manifests["isvc"]["spec"]["predictor"]["labels"] = labels
        manifests["isvc"]["spec"]["predictor"]["maxReplicas"] = 3
        del manifests["isvc"]["spec"]["predictor"]["deploymentStrategy"]
        assert [v.subject for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY] == [
            ObjectRef("InferenceService", "c12-inference", "c12-inference-demo")]
        return
    workload = lws(5, 1, {"cpu": "1"})
    del workload["metadata"]["labels"]
    assert [(f[1], f[2]) for f in whole(workload)] == [(VLLM, "spec.replicas")]


def test_a_queue_name_is_looked_up_in_the_workloads_own_namespace():
    """A LocalQueue is namespaced (Kueue 0.19.2 `localqueue_types.go`): a Deployment in c12-training naming
    'c12-inference-lq', which lives only in c12-inference, reaches no ClusterQueue and is not this policy's (kills the
    mutant that looks the name up without the namespace)."""
    manifests = compliant()
    manifests["serve"] = _deployment([_container("a", {"cpu": "1"})], replicas=9)
    manifests["serve"]["metadata"]["namespace"] = "c12-training"
    assert _rollout_messages(manifests) == []


def test_a_request_that_is_no_quantity_is_one_whole_finding():
    """Every part of the bad-quantity finding: the policy, the object, field `spec`, no value, the clause and the fix
    (kills the mutants of that Violation's arguments)."""
    manifests = compliant()
    manifests["serve"] = _deployment([_container("x", {"cpu": "lots"})])
    err = "spec.template.spec.containers[0].resources of 'cpu' is 'lots', which is not a Kubernetes quantity"
    found = [(v.policy, v.subject, v.field, v.value, v.rule, v.fix, v.message)
             for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]
    assert found == [(POLICY, ObjectRef("Deployment", "c12-inference", "serve"), "spec", MISSING, f"has {err}",
                      "fix the quantity", f"The Deployment 'c12-inference/serve' has {err}; fix the quantity.")]


def test_a_nominal_quota_unknown_at_preview_fails_closed_on_the_queue():
    """The inference queue's nominalQuota unknown at preview: the fail-closed finding names the ClusterQueue and the
    field (kills the mutants of that `unknown_violation`'s arguments)."""
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = UNKNOWN
    found = [(v.policy, v.subject, v.field) for rule, v in run(stack(manifests), CONFIG) if rule.name == POLICY]
    assert found == [("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-inference-cq"),
                      "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")]
