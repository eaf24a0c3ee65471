"""training-priority-below-inference (promise 3, kueue_cohorts/policy/rules/training_priority_below_inference.py): a
workload in a training namespace of an inference cohort tree names no WorkloadPriorityClass and no pod PriorityClass
at or above inference's priority (Kueue v0.19.2 admits it ahead of inference and never reclaims it); each finding
asserted whole."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.training_priority_below_inference import (
    TRAINING_PRIORITY_BELOW_INFERENCE,
    check_training_priority_below_inference,
)
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from tests.policy.fixtures import compliant, stack

POLICY = TRAINING_PRIORITY_BELOW_INFERENCE.name
JOB = ObjectRef("Job", "c12-training", "warmup")
FIX = ("name a training WorkloadPriorityClass below 1000 and no PriorityClass at or above it, or run it in an "
       "inference namespace through the stack")


def _rule(what: str) -> str:
    return (f"a workload outside inference's namespaces may not run at or above inference's priority 1000 ({what}: "
            "Kueue admits it ahead of inference and never reclaims it, and its pods preempt inference's)")


def _whole(violations: list) -> list[tuple]:
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix) for v in violations]


def _at_inference_priority(manifests: dict) -> dict:
    job = manifests["job"]
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        labels["kueue.x-k8s.io/priority-class"] = "c12-inference-prio"
    return manifests


def test_the_compliant_stack_passes():
    assert check_training_priority_below_inference(stack(compliant()), {}) == []


def test_a_training_job_naming_inference_s_class_is_refused_at_each_label():
    found = check_training_priority_below_inference(stack(_at_inference_priority(compliant())), {})
    rule = _rule("WorkloadPriorityClass 'c12-inference-prio' (1000)")
    assert _whole(found) == [
        (POLICY, JOB, 'metadata.labels["kueue.x-k8s.io/priority-class"]', "c12-inference-prio", rule, FIX),
        (POLICY, JOB, 'spec.template.metadata.labels["kueue.x-k8s.io/priority-class"]', "c12-inference-prio", rule,
         FIX)]
    assert found[0].message == (
        f"The Job 'c12-training/warmup' has metadata.labels[\"kueue.x-k8s.io/priority-class\"] = "
        f"'c12-inference-prio': {rule}; {FIX}.")


@pytest.mark.parametrize("pod_class,value", [("system-cluster-critical", 2000000000),
                                             ("system-node-critical", 2000001000)])
def test_a_system_pod_priority_class_is_above_inference_too(pod_class, value):
    manifests = compliant()
    manifests["job"]["spec"]["template"]["spec"]["priorityClassName"] = pod_class
    found = check_training_priority_below_inference(stack(manifests), {})
    assert _whole(found) == [(POLICY, JOB, "spec.template.spec.priorityClassName", pod_class,
                              _rule(f"PriorityClass '{pod_class}' ({value})"), FIX)]


def test_a_workload_outside_the_inference_cohort_tree_is_not_judged():
    manifests = _at_inference_priority(compliant())
    manifests["job"]["metadata"]["namespace"] = "elsewhere"
    assert check_training_priority_below_inference(stack(manifests), {}) == []
