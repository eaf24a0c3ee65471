"""inference-namespace-selector and cluster-queue-namespace-selector
(kueue_cohorts/policy/rules/namespace_selector.py): an inference ClusterQueue has a namespaceSelector, and no
ClusterQueue's selector is empty (an empty selector selects every namespace)."""
from __future__ import annotations

from kueue_cohorts.policy.rules.namespace_selector import check_namespace_selector
from tests.policy.fixtures import compliant, kube, messages
from tests.policy.rules.test_inference_borrowing_limit_zero import _inference


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
