"""cluster-queue-pinned-selector
(kueue_cohorts/policy/rules/cluster_queue_pinned_selector.py): a ClusterQueue's namespaceSelector pins the namespace
names it may select, so that overlap between queues is decidable (test_cluster_queue_selector_overlap.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings

from kueue_cohorts.policy.rules.cluster_queue_pinned_selector import check_pinned_selector
from kueue_cohorts.policy.rules.cluster_queue_selector_overlap import check_selector_overlap
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from tests.policy.fixtures import kube, stack
from tests.policy.rules.test_cluster_queue_selector_overlap import (
    OVERLAP,
    PINNED,
    QUEUE,
    manifests,
    names,
    pinned,
)


@pytest.mark.parametrize("selector,pins", [
    (pinned("c12-training-cq", "c12-training"), True),
    ({"matchLabels": {NAME_LABEL: "c12-training"}}, True),
    ({"matchLabels": {QUEUE: "c12-training-cq"}}, False),
    ({}, False),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}]}, False),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "Exists"}]}, False),
])
def test_pinned_selector(selector, pins):
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"] = selector
    found = check_pinned_selector(kube("training-cq", m["training-cq"]), PINNED)
    if pins:
        assert found == []
        return
    [v] = found
    assert (v.subject, v.field, v.value, v.policy) == (ObjectRef("ClusterQueue", None, "c12-training-cq"),
                                                       "spec.namespaceSelector", selector, PINNED)
    assert v.rule == (f"a ClusterQueue's namespaceSelector must pin the immutable {NAME_LABEL} label to the declared "
                      "namespaces, because any namespace owner can add a tenant label to their namespace and queue "
                      "work here")
    assert v.fix == (f"add matchExpressions [{{key: {NAME_LABEL}, operator: In, values: [<the tenant's "
                     "namespaces>]}] next to the tenant label")


def test_pinned_selector_ignores_other_kinds_and_missing_selectors():
    m = manifests()
    del m["training-cq"]["spec"]["namespaceSelector"]
    assert check_pinned_selector(kube("training-cq", m["training-cq"]), PINNED) == []
    assert check_pinned_selector(kube("job", m["job"]), PINNED) == []


@settings(max_examples=200)
@given(names, names)
def test_pinned_queues_overlap_iff_their_names_intersect(first, second):
    m = manifests()
    m["inference-cq"]["spec"]["namespaceSelector"] = pinned("c12-inference-cq", *first)
    m["training-cq"]["spec"]["namespaceSelector"] = pinned("c12-inference-cq", *second)
    found = check_selector_overlap(stack(m), OVERLAP)
    assert bool(found) == bool(set(first) & set(second))
