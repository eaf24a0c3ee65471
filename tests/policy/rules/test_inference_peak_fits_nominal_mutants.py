"""inference-peak-fits-nominal: what the policy-inference-peak-fits-nominal mutation run found no test pinning down.

The advisory finding written out whole (policy, object, URN, field, value, rule, fix), the workloads it leaves to
the mandatory rules (not autoscaled, one replica that never fits, minReplicas beyond the quota), several
InferenceServices in one stack, and the fail-closed findings it passes on. KServe's autoscaler scales an
InferenceService between minReplicas and maxReplicas (KServe v0.16 `pkg/apis/serving/v1beta1/component.go`); a
replica Kueue cannot admit within nominalQuota stays pending, since inference never borrows.
"""
from __future__ import annotations

import copy
from typing import Any

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import ObjectRef
from tests.policy.fixtures import UNKNOWN, compliant, stack, urn
from tests.policy.rules.test_inference_rollout_fits_nominal import deployment, predictor

POLICY = "inference-peak-fits-nominal"
ISVC = ObjectRef("InferenceService", "c12-inference", "c12-inference-demo")


def findings(manifests: dict[str, dict]) -> list[tuple[Any, ...]]:
    """The policy's findings through the rule book: (policy, urn, subject, field, value, rule, fix, message)."""
    return [(v.policy, v.urn, v.subject, v.field, v.value, v.rule, v.fix, v.message)
            for rule, v in run(stack(manifests), {}) if rule.name == POLICY]


def test_a_peak_beyond_nominal_is_one_whole_finding():
    """maxReplicas 5 of a replica of cpu 1, memory 2Gi, one GPU slice (20 cores, 2048 MiB) against nominalQuota cpu
    4, memory 8Gi, one slice: every resource over is named with need > quota, and the fix raises each to its need.
    Kills the mutants of the message, the field, the value and the policy name."""
    manifests = compliant()
    predictor(manifests)["maxReplicas"] = 5
    rule = ("maxReplicas 5 x the per-replica requests needs more than the nominalQuota of ClusterQueue "
            "'c12-inference-cq' ('cpu' 5 > 4, 'memory' 10Gi > 8Gi, 'nvidia.com/gpualloc' 5 > 1, "
            "'nvidia.com/gpucores' 100 > 20, 'nvidia.com/gpumem' 10240 > 2048); replicas beyond 1 stay pending, and "
            "an update started above 1 replicas waits until the autoscaler scales down to 1")
    fix = ("lower maxReplicas to 1, or raise the nominalQuota of 'cpu' to 5, 'memory' to 10Gi, 'nvidia.com/gpualloc' "
           "to 5, 'nvidia.com/gpucores' to 100, 'nvidia.com/gpumem' to 10240")
    assert findings(manifests) == [(
        POLICY, urn("isvc", manifests["isvc"]), ISVC, "spec.predictor.maxReplicas", 5, rule, fix,
        f"The InferenceService 'c12-inference/c12-inference-demo' has spec.predictor.maxReplicas = 5: {rule}; {fix}.")]


def _second(manifests: dict[str, dict], max_replicas: int) -> dict:
    """A second InferenceService 'second' like the guide's, with maxReplicas `max_replicas`."""
    other = copy.deepcopy(manifests["isvc"])
    other["metadata"]["name"] = "second"
    other["spec"]["predictor"]["maxReplicas"] = max_replicas
    return other


def test_services_left_to_the_mandatory_rules_do_not_hide_the_next_one():
    """Listed first: a service whose one replica never fits (40 GPU cores, INFERENCE_FITS_NOMINAL's), one whose
    minReplicas 2 is beyond the quota (INFERENCE_ROLLOUT_FITS_NOMINAL's) and a Deployment (no autoscaling): none is
    this policy's, and the service after them whose maxReplicas 2 is beyond the quota is still reported. Kills each
    skip's mutants (`continue` made `break`, `fit < steady` made `<=`, the `not` and `or` of the skip)."""
    manifests = compliant()
    never = _second(manifests, 3)
    never["metadata"]["name"] = "never"
    never["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpucores"] = "40"
    steady = _second(manifests, 3)
    steady["metadata"]["name"] = "steady"
    steady["spec"]["predictor"]["minReplicas"] = 2
    manifests = {"never": never, "steady": steady, "serve": deployment(replicas=3), **manifests}
    manifests["second"] = _second(manifests, 2)
    assert [(f[2], f[3], f[4]) for f in findings(manifests)] == [
        (ObjectRef("InferenceService", "c12-inference", "second"), "spec.predictor.maxReplicas", 2)]


def test_a_peak_within_nominal_passes_and_one_replica_more_fails():
    """maxReplicas 4 of a cpu-only replica (cpu 1, memory 2Gi) fits cpu 4 and memory 8Gi exactly; 5 does not (the
    boundary of `overflow`, `need > quota`)."""
    manifests = compliant()
    requests = predictor(manifests)["model"]["resources"]
    requests["requests"] = {"cpu": "1", "memory": "2Gi"}
    requests["limits"] = {"cpu": "2", "memory": "2Gi"}
    predictor(manifests)["maxReplicas"] = 4
    assert findings(manifests) == []
    predictor(manifests)["maxReplicas"] = 5
    assert [f[5] for f in findings(manifests)] == [
        "maxReplicas 5 x the per-replica requests needs more than the nominalQuota of ClusterQueue "
        "'c12-inference-cq' ('cpu' 5 > 4, 'memory' 10Gi > 8Gi); replicas beyond 4 stay pending, and an update "
        "started above 4 replicas waits until the autoscaler scales down to 4"]


def test_a_value_unknown_at_preview_fails_closed_and_a_bad_quantity_is_left_to_the_mandatory_rule():
    """The inference queue's nominalQuota unknown at preview: the peak cannot be judged, its fail-closed finding is
    passed on; a request that is no quantity is the mandatory rule's finding, not this one's (kills the filter of
    the problems)."""
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = UNKNOWN
    found = findings(manifests)
    assert [(f[0], f[2], f[3]) for f in found] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-inference-cq"),
         "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota")]
    manifests = compliant()
    predictor(manifests)["model"]["resources"]["requests"]["cpu"] = "lots"
    predictor(manifests)["maxReplicas"] = 5
    assert findings(manifests) == []


def test_a_service_whose_requests_no_quota_covers_is_not_judged():
    """An InferenceService requesting only example.com/foo, which the inference queue does not quota: no replica
    count is bounded by the quota (INFERENCE_FITS_NOMINAL reports the uncovered resource), so nothing here, and no
    comparison with an unknown bound (kills the skip's `or` made `and`)."""
    manifests = compliant()
    predictor(manifests)["model"]["resources"] = {"requests": {"example.com/foo": "1"},
                                                  "limits": {"example.com/foo": "1"}}
    predictor(manifests)["maxReplicas"] = 5
    assert findings(manifests) == []
