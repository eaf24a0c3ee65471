"""cluster-queue-selector-overlap: what the policy-cluster-queue-selector-overlap mutation run found no test pinning
down. Whole findings through the rule book (Kueue v0.19.2 ClusterQueue `spec.namespaceSelector`, a metav1.LabelSelector;
Kubernetes v1.36 sets `kubernetes.io/metadata.name` on every Namespace, so a selector requiring its absence selects
none).
"""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.book import run
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from kueue_cohorts.policy.rules.vocabulary.values import ObjectRef
from tests.policy.fixtures import GPU_RESOURCES, UNKNOWN, cluster_queue, stack
from tests.policy.rules.test_cluster_queue_selector_overlap import OVERLAP, QUEUE, manifests

FIX = ("give each ClusterQueue its own namespaces and pin them with matchExpressions [{key: "
       "kubernetes.io/metadata.name, operator: In, values: [<the tenant's namespaces>]}]")
TRAINING = ObjectRef("ClusterQueue", None, "c12-training-cq")


def findings(m: dict[str, dict]) -> list[tuple[Any, ...]]:
    """(policy, subject, field, value, message) of the policy's findings through the rule book."""
    return [(v.policy, v.subject, v.field, v.value, v.message) for rule, v in run(stack(m), {}) if rule.name == OVERLAP]


def test_an_overlap_no_namespace_of_the_stack_shows_yet_is_one_whole_finding():
    """Both queues select on the tenant label 'c12-inference-cq' and the stack declares no Namespace: the overlap is
    reported without the "both already select" clause (kills the mutants of that clause)."""
    m = manifests()
    del m["ns-inference"], m["ns-training"]
    selector = {"matchLabels": {QUEUE: "c12-inference-cq"}}
    m["training-cq"]["spec"]["namespaceSelector"] = selector
    assert findings(m) == [(
        OVERLAP, TRAINING, "spec.namespaceSelector", selector,
        "The ClusterQueue 'c12-training-cq' has spec.namespaceSelector = {'matchLabels': {'kueue.x-k8s.io/queue': "
        "'c12-inference-cq'}}: two ClusterQueues must never select the same namespace, but this namespaceSelector and "
        "that of ClusterQueue 'c12-inference-cq' can both select one, so its owner could queue work at either quota; "
        f"{FIX}.")]


def test_only_the_namespaces_both_select_are_named():
    """The training queue selects c12-inference and c12-training by name, the inference queue c12-inference only:
    the finding names c12-inference alone (kills `and` made `or`)."""
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": NAME_LABEL, "operator": "In", "values": ["c12-inference", "c12-training"]}]}
    [(policy, subject, field, _, message)] = findings(m)
    assert (policy, subject, field) == (OVERLAP, TRAINING, "spec.namespaceSelector")
    assert message.endswith(
        "two ClusterQueues must never select the same namespace, but this namespaceSelector and that of ClusterQueue "
        "'c12-inference-cq' can both select one; both already select 'c12-inference', so its owner could queue work "
        f"at either quota; {FIX}.")


def test_a_selector_that_requires_no_name_label_selects_no_namespace():
    """`kubernetes.io/metadata.name DoesNotExist` beside a queue that selects every namespace: no Namespace lacks that
    label, so nothing overlaps (kills the mutants that judge the pair as arbitrary label sets)."""
    m = manifests()
    m["inference-cq"]["spec"]["namespaceSelector"] = {}
    m["training-cq"]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": NAME_LABEL, "operator": "DoesNotExist"}]}
    assert findings(m) == []


def _third(name: str, selector: dict) -> dict:
    queue = cluster_queue(name, "tenant", {k: "0" for k in GPU_RESOURCES}, None, cohort=name)
    queue["spec"]["namespaceSelector"] = selector
    return queue


def test_an_unknown_selector_does_not_end_the_list_nor_a_disjoint_pair_the_search():
    """Listed first, a queue whose selector is unknown at preview (its fail-closed finding); then the pinned inference
    and training queues (disjoint); then 'late-cq' selecting c12-training by name: its overlap with the training queue
    is still reported (kills the `continue`s made `break`)."""
    m = manifests()
    m = {"unknown": _third("unknown-cq", {"matchLabels": {QUEUE: UNKNOWN}}), **m,
         "late": _third("late-cq", {"matchExpressions": [{"key": NAME_LABEL, "operator": "In",
                                                            "values": ["c12-training"]}]})}
    assert [(f[0], f[1], f[2]) for f in findings(m)] == [
        ("unknown-at-preview", ObjectRef("ClusterQueue", None, "unknown-cq"),
         'spec.namespaceSelector.matchLabels["kueue.x-k8s.io/queue"]'),
        (OVERLAP, ObjectRef("ClusterQueue", None, "late-cq"), "spec.namespaceSelector")]


def test_a_stray_selector_on_another_kueue_kind_is_no_queue():
    """A LocalQueue manifest carrying `spec.namespaceSelector: {}` (not in its schema: the apiserver prunes it) is not
    a ClusterQueue and overlaps nothing (kills `is_kueue(None)`)."""
    m = manifests()
    m["training-lq"]["spec"]["namespaceSelector"] = {}
    assert findings(m) == []


def test_a_pair_that_cannot_overlap_does_not_end_the_search():
    """Three queues selecting on a team label (no name pinned, so every pair is tried): 'a' and 'b' cannot overlap,
    'b' and 'c' can; the later pair is still reported (kills the `continue` made `break` in the pair loop)."""
    m = manifests()
    m["inference-cq"]["spec"]["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    m["training-cq"]["spec"]["namespaceSelector"] = {"matchLabels": {"team": "b"}}
    m["c"] = _third("c-cq", {"matchLabels": {"team": "b"}})
    assert [(f[1], f[3]) for f in findings(m)] == [(ObjectRef("ClusterQueue", None, "c-cq"),
                                                    {"matchLabels": {"team": "b"}})]
