"""inference-borrowing-limit-zero
(kueue_cohorts/policy/rules/inference_borrowing_limit_zero.py): an inference ClusterQueue in a cohort sets a
borrowingLimit of 0 for every resource (a missing limit is unlimited), each finding asserted whole."""
from __future__ import annotations

import pytest

from kueue_cohorts.policy.rules.inference_borrowing_limit_zero import check_inference_borrowing_limit_zero
from kueue_cohorts.policy.rules.inference_reclaim_any import check_inference_reclaim_any
from kueue_cohorts.policy.rules.namespace_selector import check_namespace_selector
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.fixtures import UNKNOWN, compliant, kube, messages
from tests.policy.rules.test_inference_fits_nominal import whole

CQ_URN = "urn:pulumi:test::kueue-cohorts::kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::inference-cq"


ENTRY = "spec.resourceGroups[0].flavors[0].resources"


def _inference(mutate=None):
    manifest = compliant()["inference-cq"]
    if mutate:
        mutate(manifest)
    return kube("inference-cq", manifest)


def _resources(m):
    return m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]


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


BORROW_RULE = ("the inference ClusterQueue must never borrow: its borrowingLimit must be an explicit 0 on every "
               "resource of every flavor (Kueue reads a missing borrowingLimit as unlimited)")


BORROW_FIX = "set borrowingLimit to 0 (or leave it out of the stack config: the component writes 0)"


@pytest.mark.parametrize("raw, problem", [
    ("2", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is '2'"),
    ("lots", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is 'lots', which is not a Kubernetes "
             "quantity"),
    (MISSING, "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit is missing, which Kueue reads as "
              "unlimited borrowing from cohort 'c12-shared'")])
def test_borrowing_limit_finding_whole(raw, problem):
    manifest = compliant()["inference-cq"]
    entry = manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    if raw is MISSING:
        del entry["borrowingLimit"]
    else:
        entry["borrowingLimit"] = raw
    assert [whole(v) for v in check_inference_borrowing_limit_zero(kube("inference-cq", manifest))] == [(
        "inference-borrowing-limit-zero", "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", raw,
        BORROW_RULE, BORROW_FIX,
        "The ClusterQueue 'c12-inference-cq' is an inference queue and must set borrowingLimit to 0 for resource "
        f"'cpu' of flavor 'c12-default', but {problem}; set borrowingLimit: \"0\" so that inference never runs on "
        "quota it can lose.", CQ_URN)]


@pytest.mark.parametrize("kind", ["Cohort", "LocalQueue", "ResourceFlavor", "Workload"])
def test_only_a_cluster_queue_is_judged_for_borrowing(kind):
    # The same inference-labelled body with no borrowingLimit anywhere, as another Kueue kind: not a queue that
    # borrows, so nothing to find.
    manifest = compliant()["inference-cq"]
    manifest["kind"] = kind
    for entry in manifest["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        del entry["borrowingLimit"]
    assert check_inference_borrowing_limit_zero(kube("inference-cq", manifest)) == []
    assert check_inference_reclaim_any(kube("inference-cq", manifest)) == []
