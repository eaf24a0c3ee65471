"""cluster-queue-selector-overlap
(kueue_cohorts/policy/rules/cluster_queue_selector_overlap.py): no two ClusterQueues select one namespace; the pinned
selectors of cluster-queue-pinned-selector (test_cluster_queue_pinned_selector.py) are what lets the rule decide."""
from __future__ import annotations

import pytest
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.cluster_queue_pinned_selector import check_pinned_selector
from kueue_cohorts.policy.rules.cluster_queue_selector_overlap import check_selector_overlap
from kueue_cohorts.policy.rules.vocabulary.objects import ObjectRef
from kueue_cohorts.policy.rules.vocabulary.selectors import NAME_LABEL
from tests.policy.fixtures import UNKNOWN, cluster_queue, compliant, stack

QUEUE = "kueue.x-k8s.io/queue"


OVERLAP, PINNED = "cluster-queue-selector-overlap", "cluster-queue-pinned-selector"


def pinned(tenant, *names):
    return {"matchLabels": {QUEUE: tenant},
            "matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": list(names)}]}


def namespace(name, labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def manifests():
    m = compliant()
    m["inference-cq"]["spec"]["namespaceSelector"] = pinned("c12-inference-cq", "c12-inference")
    m["training-cq"]["spec"]["namespaceSelector"] = pinned("c12-training-cq", "c12-training")
    m["ns-inference"] = namespace("c12-inference", {QUEUE: "c12-inference-cq"})
    m["ns-training"] = namespace("c12-training", {QUEUE: "c12-training-cq"})
    return m


def test_compliant_stack_passes_both():
    objects = stack(manifests())
    assert check_selector_overlap(objects, OVERLAP) == []
    assert [v for o in objects for v in check_pinned_selector(o, PINNED)] == []


def test_issue_13_item_5_training_tenant_is_the_inference_tenant():
    # `training.tenant: c12-inference-cq`: both queues select on the same tenant label, and the stack labels both
    # namespaces with it.
    m = compliant()
    m["inference-cq"]["spec"]["namespaceSelector"] = {"matchLabels": {QUEUE: "c12-inference-cq"}}
    m["training-cq"]["spec"]["namespaceSelector"] = {"matchLabels": {QUEUE: "c12-inference-cq"}}
    m["ns-inference"] = namespace("c12-inference", {QUEUE: "c12-inference-cq"})
    m["ns-training"] = namespace("c12-training", {QUEUE: "c12-inference-cq"})
    [found] = check_selector_overlap(stack(m), OVERLAP)
    assert (found.subject, found.field, found.value, found.policy) == (
        ObjectRef("ClusterQueue", None, "c12-training-cq"), "spec.namespaceSelector",
        {"matchLabels": {QUEUE: "c12-inference-cq"}}, OVERLAP)
    assert found.rule == ("two ClusterQueues must never select the same namespace, but this namespaceSelector and "
                          "that of ClusterQueue 'c12-inference-cq' can both select one; both already select "
                          "'c12-inference', 'c12-training', so its owner could queue work at either quota")
    assert found.fix == ("give each ClusterQueue its own namespaces and pin them with matchExpressions [{key: "
                         f"{NAME_LABEL}, operator: In, values: [<the tenant's namespaces>]}}]")


@pytest.mark.parametrize("selector,overlaps", [
    ({}, True),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn", "values": ["c12-inference"]}]}, False),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": ["c12-inference", "x"]}]}, True),
    ({"matchLabels": {QUEUE: "c12-inference-cq"}}, True),
    ({"matchLabels": {QUEUE: "c12-training-cq"}}, False),
    ({"matchExpressions": [{"key": QUEUE, "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": NAME_LABEL, "operator": "DoesNotExist"}]}, False),
    (None, False),
])
def test_one_broken_selector(selector, overlaps):
    m = manifests()
    if selector is None:
        del m["training-cq"]["spec"]["namespaceSelector"]
    else:
        m["training-cq"]["spec"]["namespaceSelector"] = selector
    found = check_selector_overlap(stack(m), OVERLAP)
    assert [(v.subject.name, v.value) for v in found] == ([("c12-training-cq", selector)] if overlaps else [])


def test_overlap_across_layouts_and_cohorts():
    m = manifests()
    other = cluster_queue("c13-tenant-cq", "training", {k: "0" for k in ["cpu", "memory", "nvidia.com/gpualloc",
                                                                          "nvidia.com/gpucores", "nvidia.com/gpumem"]},
                          None, cohort="c13-shared")
    other["spec"]["namespaceSelector"] = {"matchExpressions": [{"key": NAME_LABEL, "operator": "In",
                                                                "values": ["c12-training", "c13-a"]}]}
    m["c13-cq"] = other
    [found] = check_selector_overlap(stack(m), OVERLAP)
    assert found.subject.name == "c13-tenant-cq"
    assert "ClusterQueue 'c12-training-cq' can both select one; both already select 'c12-training'" in found.rule


def test_unknown_selector_fails_closed():
    m = manifests()
    m["training-cq"]["spec"]["namespaceSelector"]["matchLabels"][QUEUE] = UNKNOWN
    [found] = check_selector_overlap(stack(m), OVERLAP)
    assert "unknown at preview" in found.message and "c12-training-cq" in found.message


names = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True)
