"""inference-borrowing-limit-zero, inference-reclaim-any and the two namespaceSelector policies."""
from __future__ import annotations

from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.namespace_selector import check_namespace_selector
from tests.policy.fixtures import UNKNOWN, compliant, kube, messages

CQ_URN = "urn:pulumi:test::kueue-cohorts::kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::inference-cq"
ENTRY = "spec.resourceGroups[0].flavors[0].resources"


def _inference(mutate=None):
    manifest = compliant()["inference-cq"]
    if mutate:
        mutate(manifest)
    return kube("inference-cq", manifest)


def _resources(m):
    return m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]


# --- inference-borrowing-limit-zero ----------------------------------------------------------------------------------

def test_compliant_queues_pass_every_cluster_queue_rule():
    for name in ("inference-cq", "training-cq"):
        obj = kube(name, compliant()[name])
        assert check_inference_borrowing_limit_zero(obj) == []
        assert check_inference_reclaim_any(obj) == []
        assert check_namespace_selector(obj, True) == []
        assert check_namespace_selector(obj, False) == []


def test_missing_borrowing_limit_means_unlimited_and_fails():
    def drop(m):
        del _resources(m)[3]["borrowingLimit"]
    violations = check_inference_borrowing_limit_zero(_inference(drop))
    assert messages(violations) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        "'nvidia.com/gpucores' of flavor 'c12-default', but spec.resourceGroups[0].flavors[0].resources[3]"
        ".borrowingLimit is missing, which Kueue reads as unlimited borrowing from cohort 'c12-shared'; set "
        "borrowingLimit: \"0\" so that inference never runs on quota it can lose."]
    assert violations[0].urn == CQ_URN


def test_nonzero_borrowing_limit_fails_per_resource():
    def borrow(m):
        _resources(m)[0]["borrowingLimit"] = "2"
        _resources(m)[1]["borrowingLimit"] = "1Gi"
    assert messages(check_inference_borrowing_limit_zero(_inference(borrow))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        f"'cpu' of flavor 'c12-default', but {ENTRY}[0].borrowingLimit is '2'; set borrowingLimit: \"0\" so that "
        "inference never runs on quota it can lose.",
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        f"'memory' of flavor 'c12-default', but {ENTRY}[1].borrowingLimit is '1Gi'; set borrowingLimit: \"0\" so "
        "that inference never runs on quota it can lose."]


def test_zero_written_as_other_quantities_passes():
    def zeros(m):
        _resources(m)[0]["borrowingLimit"] = 0
        _resources(m)[1]["borrowingLimit"] = "0Gi"
        _resources(m)[2]["borrowingLimit"] = "0m"
    assert check_inference_borrowing_limit_zero(_inference(zeros)) == []


def test_unparsable_borrowing_limit_fails():
    def bad(m):
        _resources(m)[4]["borrowingLimit"] = "none"
    assert messages(check_inference_borrowing_limit_zero(_inference(bad))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        f"'nvidia.com/gpumem' of flavor 'c12-default', but {ENTRY}[4].borrowingLimit is 'none', which is not a "
        "Kubernetes quantity; set borrowingLimit: \"0\" so that inference never runs on quota it can lose."]


def test_inference_queue_named_in_config_is_judged_without_label():
    def unlabel_and_borrow(m):
        del m["metadata"]["labels"]
        _resources(m)[0]["borrowingLimit"] = "1"
    obj = _inference(unlabel_and_borrow)
    assert check_inference_borrowing_limit_zero(obj) == []
    assert len(check_inference_borrowing_limit_zero(obj, ["c12-inference-cq"])) == 1


def test_training_queue_may_borrow():
    assert check_inference_borrowing_limit_zero(kube("training-cq", compliant()["training-cq"])) == []


def test_inference_queue_without_cohort_cannot_borrow_and_passes():
    def standalone(m):
        del m["spec"]["cohortName"]
        for r in _resources(m):
            del r["borrowingLimit"]
    assert check_inference_borrowing_limit_zero(_inference(standalone)) == []


def test_v1beta1_cohort_field_counts_as_cohort():
    def v1beta1(m):
        m["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        m["spec"]["cohort"] = m["spec"].pop("cohortName")
        del _resources(m)[0]["borrowingLimit"]
    manifest = compliant()["inference-cq"]
    v1beta1(manifest)
    obj = kube("inference-cq", manifest)
    assert obj.version == "v1beta1"
    assert len(check_inference_borrowing_limit_zero(obj)) == 1


def test_unknown_borrowing_limit_fails_closed_naming_the_field():
    def unknown(m):
        _resources(m)[2]["borrowingLimit"] = UNKNOWN
    assert messages(check_inference_borrowing_limit_zero(_inference(unknown))) == [
        "The ClusterQueue 'c12-inference-cq' has spec.resourceGroups[0].flavors[0].resources[2].borrowingLimit "
        "unknown at preview, so this policy cannot check it and fails closed; give spec.resourceGroups[0].flavors[0]"
        ".resources[2].borrowingLimit a value known at preview (a literal or stack config, not an output of another "
        "resource)."]


def test_unknown_role_label_fails_closed():
    def unknown(m):
        m["metadata"]["labels"]["kueue-cohorts/role"] = UNKNOWN
    [violation] = check_inference_borrowing_limit_zero(_inference(unknown))
    assert "metadata.labels[\"kueue-cohorts/role\"] unknown at preview" in violation.message


def test_non_cluster_queue_objects_are_ignored():
    assert check_inference_borrowing_limit_zero(kube("inference-lq", compliant()["inference-lq"])) == []


# --- inference-reclaim-any -------------------------------------------------------------------------------------------

def test_reclaim_missing_is_never_and_fails():
    def drop(m):
        del m["spec"]["preemption"]["reclaimWithinCohort"]
    assert messages(check_inference_reclaim_any(_inference(drop))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        "to Any, but it is not set (Kueue's default is Never); set it to Any so that inference takes its nominal "
        "quota back from borrowing workloads in the cohort whatever their priority."]


def test_reclaim_lower_priority_fails():
    def lower(m):
        m["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    assert messages(check_inference_reclaim_any(_inference(lower))) == [
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set spec.preemption.reclaimWithinCohort "
        "to Any, but it is 'LowerPriority'; set it to Any so that inference takes its nominal quota back from "
        "borrowing workloads in the cohort whatever their priority."]


def test_reclaim_unknown_fails_closed():
    def unknown(m):
        m["spec"]["preemption"] = UNKNOWN
    [violation] = check_inference_reclaim_any(_inference(unknown))
    assert violation.message.startswith("The ClusterQueue 'c12-inference-cq' has spec.preemption unknown at preview")


# --- namespaceSelector -----------------------------------------------------------------------------------------------

def test_missing_selector_on_inference_queue_fails_the_inference_policy_only():
    def drop(m):
        del m["spec"]["namespaceSelector"]
    obj = _inference(drop)
    assert messages(check_namespace_selector(obj, True)) == [
        "The ClusterQueue 'c12-inference-cq' has no spec.namespaceSelector, which Kueue reads as no namespace at all, "
        "so no LocalQueue can submit to it; select its tenant namespaces, e.g. matchLabels: "
        "{kubernetes.io/metadata.name: <tenant namespace>}."]
    assert check_namespace_selector(obj, False) == []


def test_empty_selector_on_training_queue_fails_the_general_policy_only():
    manifest = compliant()["training-cq"]
    manifest["spec"]["namespaceSelector"] = {}
    obj = kube("training-cq", manifest)
    assert messages(check_namespace_selector(obj, False)) == [
        "The ClusterQueue 'c12-training-cq' has an empty spec.namespaceSelector ({}), which admits workloads from "
        "every namespace; select its tenant namespaces only, e.g. matchLabels: "
        "{kubernetes.io/metadata.name: <tenant namespace>}."]
    assert check_namespace_selector(obj, True) == []


def test_selector_with_empty_lists_counts_as_empty():
    def empty(m):
        m["spec"]["namespaceSelector"] = {"matchLabels": {}, "matchExpressions": []}
    assert len(check_namespace_selector(_inference(empty), True)) == 1


def test_selector_with_expressions_only_passes():
    def expr(m):
        m["spec"]["namespaceSelector"] = {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-inference"]}]}
    assert check_namespace_selector(_inference(expr), True) == []
