"""kueue_cohorts/policy/rules/vocabulary/roles.py: inference ClusterQueues recognised from
the whole stack (role labels, the services and priorities that reach a queue, the cohort tree)."""
from __future__ import annotations

import copy

import pytest

from kueue_cohorts.policy.rules.cluster_queue_role import check_undecided
from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.vocabulary.roles import classify, cohort_roots
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, cluster_queue, compliant, local_queue, priority_class, stack

POLICY = "cluster-queue-role"


ROLE = "kueue-cohorts/role"


NOMINAL = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpucores": "20",
           "nvidia.com/gpumem": "2048"}


def unlabelled(name, cohort="c12-shared", reclaim="Any", borrowing=None):
    cq = cluster_queue(name, "x", NOMINAL, borrowing, reclaim=reclaim, cohort=cohort)
    del cq["metadata"]["labels"]
    return cq


def issue_item_1():
    """Issue 13 item 1: `serving-cq` written by hand in cohort c12-shared, no role label, no borrowingLimit,
    reclaimWithinCohort Never, and the InferenceService's LocalQueue points at it."""
    m = compliant()
    m["serving-cq"] = unlabelled("serving-cq", reclaim="Never")
    m["inference-lq"]["spec"]["clusterQueue"] = "serving-cq"
    return m


def test_issue_13_item_1_queue_reached_by_an_inference_service_is_inference():
    objects = stack(issue_item_1())
    roles = classify(objects)
    assert roles.role("serving-cq") == "inference"
    assert roles.why("serving-cq")[0] == ("InferenceService 'c12-inference/c12-inference-demo' is queued to it through "
                                          "LocalQueue 'c12-inference/c12-inference-lq' (metadata.labels)")
    [serving] = [o for o in objects if o.name == "serving-cq"]
    # The existing inference rules, given the classification, now judge it.
    assert len(check_inference_borrowing_limit_zero(serving, roles.inference())) == len(GPU_RESOURCES)
    assert len(check_inference_reclaim_any(serving, roles.inference())) == 1


def test_inference_service_queued_through_predictor_labels():
    m = issue_item_1()
    labels = m["isvc"]["metadata"].pop("labels")
    m["isvc"]["spec"]["predictor"]["labels"] = labels
    roles = classify(stack(m))
    assert roles.role("serving-cq") == "inference"
    assert roles.why("serving-cq")[0].endswith("(spec.predictor.labels)")


def test_llm_inference_service_counts_too():
    m = issue_item_1()
    m["isvc"]["kind"] = "LLMInferenceService"
    m["isvc"]["apiVersion"] = "serving.kserve.io/v1alpha1"
    del m["isvc"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    roles = classify(stack(m))
    assert roles.role("serving-cq") == "inference"
    assert roles.why("serving-cq")[0].startswith("LLMInferenceService 'c12-inference/c12-inference-demo' is queued")


def test_deployment_with_the_inference_priority_class():
    m = compliant()
    m["serving-cq"] = unlabelled("serving-cq")
    m["serving-lq"] = local_queue("serving-lq", "c12-serving", "serving-cq")
    labels = {"kueue.x-k8s.io/queue-name": "serving-lq", "kueue.x-k8s.io/priority-class": "c12-inference-prio"}
    m["deploy"] = {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "vllm", "namespace": "c12-serving"},
                   "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": []}}}}
    roles = classify(stack(m))
    assert roles.role("serving-cq") == "inference"
    assert roles.why("serving-cq") == [
        "Deployment 'c12-serving/vllm' with inference WorkloadPriorityClass 'c12-inference-prio' is queued to it "
        "through LocalQueue 'c12-serving/serving-lq' (spec.template.metadata.labels)"]


def test_declared_inference_priority_class_without_a_label():
    # Our components never label the priority classes; the pack config declares them.
    m = compliant()
    m["inference-prio"] = priority_class("c12-inference-prio", 1000)
    m["serving-cq"] = unlabelled("serving-cq")
    m["serving-lq"] = local_queue("serving-lq", "c12-serving", "serving-cq")
    m["job2"] = copy.deepcopy(m["job"])
    m["job2"]["metadata"].update(name="serve", namespace="c12-serving")
    for labels in (m["job2"]["metadata"]["labels"], m["job2"]["spec"]["template"]["metadata"]["labels"]):
        labels.update({"kueue.x-k8s.io/queue-name": "serving-lq",
                       "kueue.x-k8s.io/priority-class": "c12-inference-prio"})
    assert classify(stack(m)).role("serving-cq") is None
    assert classify(stack(m), {}, ["c12-inference-prio"]).role("serving-cq") == "inference"


@pytest.mark.parametrize("value,inference", [(999, False), (1000, True), (5000, True)])
def test_workload_at_or_above_the_inference_priority(value, inference):
    m = compliant()
    m["serving-cq"] = unlabelled("serving-cq")
    m["serving-lq"] = local_queue("serving-lq", "c12-serving", "serving-cq")
    m["high-prio"] = priority_class("high", value)
    m["job2"] = copy.deepcopy(m["job"])
    m["job2"]["metadata"].update(name="j", namespace="c12-serving")
    m["job2"]["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "serving-lq",
                                       "kueue.x-k8s.io/priority-class": "high"}
    roles = classify(stack(m))
    assert (roles.role("serving-cq") == "inference") is inference
    if inference:
        assert roles.why("serving-cq") == [
            f"Job 'c12-serving/j' with WorkloadPriorityClass 'high' ({value}, at or above the lowest inference "
            "priority 1000) is queued to it through LocalQueue 'c12-serving/serving-lq' (metadata.labels)"]


def test_declared_roles():
    m = compliant()
    m["serving-cq"] = unlabelled("serving-cq")
    m["other-cq"] = unlabelled("other-cq")
    roles = classify(stack(m), {"serving-cq": "inference", "other-cq": "tenant", "ghost": "inference"})
    assert roles.role("serving-cq") == "inference" and roles.role("other-cq") == "tenant"
    assert roles.role("ghost") is None
    assert roles.why("serving-cq") == ["the policy pack config declares it inference"]


def test_inference_evidence_wins_over_a_training_label():
    m = compliant()
    m["training-lq"]["spec"]["clusterQueue"] = "c12-training-cq"
    m["isvc"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "c12-training-lq"
    m["isvc"]["metadata"]["namespace"] = "c12-training"
    roles = classify(stack(m), {"c12-training-cq": "training"})
    assert roles.role("c12-training-cq") == "inference"


def test_cohort_tree_counts():
    m = compliant()
    m["other-cq"] = unlabelled("other-cq", cohort="c12-child")
    m["child"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c12-child"},
                  "spec": {"parentName": "c12-root"}}
    m["root-link"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c12-shared"},
                      "spec": {"parentName": "c12-root"}}
    objects = stack(m)
    assert cohort_roots(objects) == {"c12-child": "c12-root", "c12-shared": "c12-root", "c12-root": "c12-root"}
    [found] = check_undecided(objects, classify(objects), POLICY)
    assert found.subject.name == "other-cq" and "cohort 'c12-root'" in found.rule


def test_unknown_values_are_skipped_not_raised():
    m = compliant()
    m["job"]["metadata"]["labels"] = UNKNOWN
    m["training-cq"]["metadata"]["labels"][ROLE] = UNKNOWN
    roles = classify(stack(m))
    assert {o.name for o in roles.unknown} >= {"warmup", "c12-training-cq"}
    assert roles.role("c12-training-cq") is None
    [found] = check_undecided(stack(m), roles, POLICY)
    assert found.subject.name == "c12-training-cq"
