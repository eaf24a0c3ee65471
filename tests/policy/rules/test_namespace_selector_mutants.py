"""inference-namespace-selector and cluster-queue-namespace-selector: what the policy-namespace-selector mutation run
found no test pinning down. Kueue v0.19.2 `apis/kueue/v1beta2/clusterqueue_types.go` (ClusterQueue
`spec.namespaceSelector`, a metav1.LabelSelector): a missing (null) selector matches no namespace, `{}` every one;
Kubernetes v1.36 `metav1.LabelSelectorAsSelector`: an empty matchLabels and matchExpressions match everything. Each
test asserts whole findings through the rule book: policy, object, field, value, rule, fix and message.
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.values import MISSING, ObjectRef
from tests.policy.fixtures import UNKNOWN, compliant, stack

FIX = "select the tenant namespaces by name (matchExpressions kubernetes.io/metadata.name In [...])"
NAMED = ("inference-namespace-selector", "cluster-queue-namespace-selector")


def findings(manifests: dict[str, dict], config: dict | None = None) -> list[tuple[Any, ...]]:
    """(policy, subject, field, value, rule, fix, message) of both policies' findings."""
    return [(v.policy, v.subject, v.field, v.value, v.rule, v.fix, v.message)
            for rule, v in run(stack(manifests), config or {}) if rule.name in NAMED]


def test_a_missing_selector_is_one_whole_finding_of_the_queues_policy():
    """The inference queue without namespaceSelector: the mandatory inference policy's finding, every part written out
    (kills the mutants of the Violation's policy, field, value, rule and fix)."""
    manifests = compliant()
    del manifests["inference-cq"]["spec"]["namespaceSelector"]
    assert findings(manifests) == [(
        "inference-namespace-selector", ObjectRef("ClusterQueue", None, "c12-inference-cq"), "spec.namespaceSelector",
        MISSING, "a ClusterQueue without namespaceSelector admits no namespace at all", FIX,
        "The ClusterQueue 'c12-inference-cq' has no spec.namespaceSelector, which Kueue reads as no namespace at all, "
        "so no LocalQueue can submit to it; select its tenant namespaces, e.g. matchLabels: "
        "{kubernetes.io/metadata.name: <tenant namespace>}.")]


@pytest.mark.parametrize("selector", [{}, {"matchLabels": {}}, {"matchExpressions": []},
                                      {"matchLabels": {}, "matchExpressions": []}])
def test_an_empty_selector_is_one_whole_finding_of_the_general_policy(selector):
    """The training queue's selector with no matchLabels entry and no matchExpressions entry selects every namespace:
    the advisory general policy's finding, with the selector as written."""
    manifests = compliant()
    manifests["training-cq"]["spec"]["namespaceSelector"] = selector
    assert findings(manifests) == [(
        "cluster-queue-namespace-selector", ObjectRef("ClusterQueue", None, "c12-training-cq"),
        "spec.namespaceSelector", selector, "an empty namespaceSelector ({}) admits workloads from every namespace",
        FIX, "The ClusterQueue 'c12-training-cq' has an empty spec.namespaceSelector ({}), which admits workloads from "
        "every namespace; select its tenant namespaces only, e.g. matchLabels: "
        "{kubernetes.io/metadata.name: <tenant namespace>}.")]


@pytest.mark.parametrize("selector", [
    {"matchLabels": {"kubernetes.io/metadata.name": "c12-training"}},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c12-training"]}]},
    {"matchLabels": {"kubernetes.io/metadata.name": "c12-training"}, "matchExpressions": []},
])
def test_a_selector_with_either_part_passes(selector):
    """matchLabels alone, matchExpressions alone, or one of them with the other empty: a selector (kills the `and`
    of the emptiness check made `or`)."""
    manifests = compliant()
    manifests["training-cq"]["spec"]["namespaceSelector"] = selector
    assert findings(manifests) == []


def test_a_queue_named_inference_in_the_config_is_judged_by_the_inference_policy():
    """Without its role label, the queue the policy config names an inference queue is the mandatory policy's; the
    general policy leaves it (kills the mutants of the role test and of the names handed to it)."""
    manifests = compliant()
    del manifests["inference-cq"]["metadata"]["labels"]
    manifests["inference-cq"]["spec"]["namespaceSelector"] = {}
    config = {name: {"inferenceClusterQueues": ["c12-inference-cq"]} for name in NAMED}
    assert [(f[0], f[1]) for f in findings(manifests, config)] == [
        ("inference-namespace-selector", ObjectRef("ClusterQueue", None, "c12-inference-cq"))]


def test_other_kinds_are_not_judged():
    """A LocalQueue or a Cohort, which have no namespaceSelector, are not ClusterQueues (kills the kind check)."""
    manifests = compliant()
    manifests["cohort"] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c12-shared"},
                           "spec": {}}
    assert findings(manifests) == []


def test_a_selector_unknown_at_preview_fails_closed_on_its_queue():
    """The training queue's namespaceSelector unknown at preview: the fail-closed finding names the queue (kills
    `guarded(None, ...)`)."""
    manifests = compliant()
    manifests["training-cq"]["spec"]["namespaceSelector"] = UNKNOWN
    assert [(f[0], f[1], f[2]) for f in findings(manifests)] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.namespaceSelector")]
