"""workload-priority-class and inference-fits-nominal."""
from __future__ import annotations

from kueue_cohorts.policy.rules.inference_fits_nominal import check_inference_fits_nominal
from kueue_cohorts.policy.rules.workload_priority_class import check_workload_priority_class
from tests.policy.fixtures import UNKNOWN, compliant, messages, priority_class, stack, urn


def test_compliant_stack_passes_both():
    assert check_workload_priority_class(stack(compliant())) == []
    assert check_inference_fits_nominal(stack(compliant())) == []


# --- workload-priority-class -----------------------------------------------------------------------------------------

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


# --- inference-fits-nominal ------------------------------------------------------------------------------------------

def test_replica_above_nominal_fails():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpucores"] = "40"
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["memory"] = "9Gi"
    violations = check_inference_fits_nominal(stack(manifests))
    head = ("The InferenceService 'c12-inference/c12-inference-demo' requests per replica more than the nominalQuota "
            "of ClusterQueue 'c12-inference-cq' behind LocalQueue 'c12-inference/c12-inference-lq': ")
    tail = ("; lower the predictor's requests or raise the ClusterQueue's nominalQuota, so that serving never runs on "
            "borrowed quota.")
    assert messages(violations) == [head + "'memory' 9Gi (nominalQuota 8Gi)" + tail,
                                    head + "'nvidia.com/gpucores' 40 (nominalQuota 20)" + tail]
    assert [v.urn for v in violations] == [urn("isvc", manifests["isvc"])] * 2
    assert [v.field for v in violations] == ["spec.predictor.model.resources.requests.memory",
                                             'spec.predictor.model.resources.requests["nvidia.com/gpucores"]']


def test_limit_counts_where_request_is_missing():
    manifests = compliant()
    resources = manifests["isvc"]["spec"]["predictor"]["model"]["resources"]
    del resources["requests"]["cpu"]
    resources["limits"]["cpu"] = "5"
    assert "'cpu' 5 (nominalQuota 4)" in messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_inline_containers_are_summed():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["containers"] = [
        {"name": "sidecar", "resources": {"requests": {"cpu": "3500m"}}}]
    assert "'cpu' 4.5 (nominalQuota 4)" in messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_uncovered_resource_fails():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    assert "'nvidia.com/gpu' 1 (the ClusterQueue covers no such resource)" in \
        messages(check_inference_fits_nominal(stack(manifests)))[0]


def test_queue_not_in_stack_fails_closed():
    manifests = compliant()
    del manifests["inference-lq"]
    assert messages(check_inference_fits_nominal(stack(manifests))) == [
        "The InferenceService 'c12-inference/c12-inference-demo' is queued to LocalQueue "
        "'c12-inference/c12-inference-lq', but the LocalQueue 'c12-inference/c12-inference-lq' is not in this stack, "
        "so its nominalQuota cannot be checked and the policy fails closed; define the queue in this stack or queue "
        "the InferenceService to one that is."]


def test_unknown_request_fails_closed():
    manifests = compliant()
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["nvidia.com/gpumem"] = UNKNOWN
    [violation] = check_inference_fits_nominal(stack(manifests))
    assert violation.message.startswith(
        "The InferenceService 'c12-inference/c12-inference-demo' has "
        "spec.predictor.model.resources.requests[\"nvidia.com/gpumem\"] unknown at preview")


def test_unknown_nominal_quota_is_blamed_on_the_cluster_queue():
    manifests = compliant()
    manifests["inference-cq"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = UNKNOWN
    [violation] = check_inference_fits_nominal(stack(manifests))
    assert violation.message.startswith("The ClusterQueue 'c12-inference-cq' has spec.resourceGroups[0].flavors[0]"
                                        ".resources[2].nominalQuota unknown at preview")
    assert violation.urn == urn("inference-cq", manifests["inference-cq"])


def test_unqueued_inference_service_is_not_judged():
    manifests = compliant()
    del manifests["isvc"]["metadata"]["labels"]
    manifests["isvc"]["spec"]["predictor"]["model"]["resources"]["requests"]["cpu"] = "64"
    assert check_inference_fits_nominal(stack(manifests)) == []
