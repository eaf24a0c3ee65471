"""kueue-api-version (kueue_cohorts/policy/rules/kueue_api_version.py): Kueue
objects are kueue.x-k8s.io/v1beta2; a v1beta1 ClusterQueue gets its migration (cohort -> cohortName)."""
from __future__ import annotations

from kueue_cohorts.policy.rules.kueue_api_version import check_kueue_api_version
from tests.policy.fixtures import (
    compliant,
    kube,
    messages,
    stack,
)


def test_v1beta2_objects_pass():
    assert [v for o in stack(compliant()) for v in check_kueue_api_version(o)] == []


def test_v1beta1_cluster_queue_gets_its_migration():
    manifest = compliant()["inference-cq"]
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    manifest["spec"]["cohort"] = manifest["spec"].pop("cohortName")
    manifest["spec"]["flavorFungibility"] = {"whenCanBorrow": "Borrow"}
    violations = check_kueue_api_version(kube("inference-cq", manifest))
    assert messages(violations) == [
        "The ClusterQueue 'c12-inference-cq' uses kueue.x-k8s.io/v1beta1, which Kueue deprecates since v0.16; migrate "
        "it to kueue.x-k8s.io/v1beta2: set apiVersion: kueue.x-k8s.io/v1beta2; rename spec.cohort to "
        "spec.cohortName; replace flavorFungibility.whenCanBorrow Borrow with MayStopSearch."]
    assert violations[0].urn.endswith("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue::inference-cq")


def test_v1beta1_local_queue_needs_only_the_version():
    manifest = compliant()["inference-lq"]
    manifest["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert messages(check_kueue_api_version(kube("lq", manifest))) == [
        "The LocalQueue 'c12-inference/c12-inference-lq' uses kueue.x-k8s.io/v1beta1, which Kueue deprecates since "
        "v0.16; migrate it to kueue.x-k8s.io/v1beta2: set apiVersion: kueue.x-k8s.io/v1beta2; its fields need no "
        "change."]


def test_v1beta2_cluster_queue_with_v1beta1_cohort_field_fails():
    manifest = compliant()["training-cq"]
    manifest["spec"]["cohort"] = manifest["spec"].pop("cohortName")
    assert messages(check_kueue_api_version(kube("training-cq", manifest))) == [
        "The ClusterQueue 'c12-training-cq' sets spec.cohort, a kueue.x-k8s.io/v1beta1 field that "
        "kueue.x-k8s.io/v1beta2 does not have (the API server drops it and the queue joins no cohort); rename it to "
        "spec.cohortName."]
