"""workload-priority-class
(kueue_cohorts/policy/rules/workload_priority_class.py): every queued workload names a WorkloadPriorityClass of the
stack, found on its metadata, pod template, JobSet or predictor labels, and inference's is above every training
one."""
from __future__ import annotations

from kueue_cohorts.policy.rules.inference_fits_nominal import check_inference_fits_nominal
from kueue_cohorts.policy.rules.workload_priority_class import check_workload_priority_class
from tests.policy.fixtures import UNKNOWN, compliant, messages, priority_class, stack, urn


def test_compliant_stack_passes_both():
    assert check_workload_priority_class(stack(compliant())) == []
    assert check_inference_fits_nominal(stack(compliant())) == []


def test_queued_job_without_priority_label_fails():
    manifests = compliant()
    del manifests["job"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    violations = check_workload_priority_class(stack(manifests))
    assert messages(violations) == [
        "The Job 'c12-training/warmup' sets kueue.x-k8s.io/queue-name: c12-training-lq in metadata.labels but no "
        "kueue.x-k8s.io/priority-class label there; add kueue.x-k8s.io/priority-class naming a WorkloadPriorityClass "
        "of the stack (known: 'c12-inference-prio', 'c12-training-prio')."]
    assert violations[0].urn == urn("job", manifests["job"])


def test_pod_template_labels_are_checked_too():
    manifests = compliant()
    del manifests["job"]["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    assert messages(check_workload_priority_class(stack(manifests))) == [
        "The Job 'c12-training/warmup' sets kueue.x-k8s.io/queue-name: c12-training-lq in spec.template.metadata"
        ".labels but no kueue.x-k8s.io/priority-class label there; add kueue.x-k8s.io/priority-class naming a "
        "WorkloadPriorityClass of the stack (known: 'c12-inference-prio', 'c12-training-prio')."]


def test_jobset_and_predictor_labels_are_found():
    manifests = compliant()
    manifests["jobset"] = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                           "metadata": {"name": "js", "namespace": "c12-training"},
                           "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                               "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "c12-training-lq"}}}}}}]}}
    manifests["isvc"]["spec"]["predictor"]["labels"] = {"kueue.x-k8s.io/queue-name": "c12-inference-lq"}
    found = messages(check_workload_priority_class(stack(manifests)))
    assert [m.split(" sets ")[0] for m in found] == ["The InferenceService 'c12-inference/c12-inference-demo'",
                                                     "The JobSet 'c12-training/js'"]
    assert "in spec.predictor.labels" in found[0]
    assert "in spec.replicatedJobs[0].template.spec.template.metadata.labels" in found[1]


def test_unknown_priority_class_fails():
    manifests = compliant()
    manifests["job"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    assert messages(check_workload_priority_class(stack(manifests))) == [
        "The Job 'c12-training/warmup' names WorkloadPriorityClass 'urgent' in metadata.labels, which is neither in "
        "this stack nor in the policy config priorityClasses (known: 'c12-inference-prio', 'c12-training-prio'); use "
        "one of those or add the class."]
    assert check_workload_priority_class(stack(manifests), priority_classes={"urgent": 5}) == []


def test_inference_priority_must_be_above_training():
    manifests = compliant()
    manifests["training-prio"] = priority_class("c12-training-prio", 1000, "training")
    assert messages(check_workload_priority_class(stack(manifests))) == [
        "The inference priority must be above every training priority, but the InferenceService "
        "'c12-inference/c12-inference-demo' with WorkloadPriorityClass 'c12-inference-prio' (1000) is not above the "
        "WorkloadPriorityClass 'c12-training-prio' (1000); give inference a WorkloadPriorityClass with a higher value "
        "than any training one."]


def test_inference_workload_using_a_low_class_is_caught_through_its_queue():
    manifests = compliant()
    manifests["isvc"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "c12-training-prio"
    assert messages(check_workload_priority_class(stack(manifests))) == [
        "The inference priority must be above every training priority, but the InferenceService "
        "'c12-inference/c12-inference-demo' with WorkloadPriorityClass 'c12-training-prio' (10) is not above the "
        "WorkloadPriorityClass 'c12-training-prio' (10); give inference a WorkloadPriorityClass with a higher value "
        "than any training one."]


def test_unknown_queue_label_fails_closed():
    manifests = compliant()
    manifests["job"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = UNKNOWN
    assert messages(check_workload_priority_class(stack(manifests))) == [
        "The Job 'c12-training/warmup' has metadata.labels[\"kueue.x-k8s.io/queue-name\"] unknown at preview, so this "
        "policy cannot check it and fails closed; give metadata.labels[\"kueue.x-k8s.io/queue-name\"] a value known at "
        "preview (a literal or stack config, not an output of another resource)."]


def test_unknown_values_elsewhere_in_a_workload_do_not_matter():
    manifests = compliant()
    manifests["job"]["spec"]["template"]["spec"]["containers"][0]["image"] = UNKNOWN
    assert check_workload_priority_class(stack(manifests)) == []
