"""cohort-nominal-within-capacity: the whole sentence of every kind of finding (rule and fix), written out by hand:
more holders than a message names (counted, "and 2 more"), a Topology-Aware flavor with and without nodeLabels
whose level labels no pool carries, node pools without labels (undecidable), no node pool at all, memory shown in
binary units."""
from __future__ import annotations

from tests.policy.rules.test_cohort_nominal_within_capacity import A100, H100, flavor, judge, pool, queue, topology

SEVEN = {f"q{i}": queue(f"q{i}-cq", {"h100": 1}, "c") for i in range(7)}
RACK = ("cloud/block", "kubernetes.io/hostname")


def _one(manifests, pools):
    found = judge(manifests, pools)
    assert len(found) == 1, found
    return found[0]


def test_over_capacity_with_more_holders_than_named():
    v = _one({"f": flavor("h100", H100), **SEVEN}, [pool("h100", 4, H100)])
    assert v.rule == (
        "the nominalQuota of ResourceFlavor 'h100' over every ClusterQueue and Cohort of the stack sums to 7 of "
        "'nvidia.com/gpu' (ClusterQueue 'q0-cq' 1, ClusterQueue 'q1-cq' 1, ClusterQueue 'q2-cq' 1, ClusterQueue "
        "'q3-cq' 1, ClusterQueue 'q4-cq' 1 and 2 more), above the 4 of the nodes it selects (node pool 'h100'; "
        "nodeLabels gpu=h100): reservations are guarantees and must exist on the nodes Kueue places their pods on")
    assert v.fix == ("lower the nominalQuota of 'nvidia.com/gpu' in flavor 'h100' to at most 4 in total over every "
                     "cohort, or add nodes that carry its nodeLabels")


def test_no_nodes_with_more_holders_than_named_counts_the_rest():
    v = _one({"f": flavor("h100", H100), **SEVEN}, [pool("a100", 4, A100)])
    assert (v.field, v.value) == ("spec.nodeLabels", {"gpu": "h100"})
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100, which no node pool carries, so the 7 of "
        "'nvidia.com/gpu' it holds in nominalQuota (ClusterQueue 'q0-cq', ClusterQueue 'q1-cq', ClusterQueue "
        "'q2-cq', ClusterQueue 'q3-cq', ClusterQueue 'q4-cq' and 2 more) has no nodes")
    assert v.fix == ("put the labels gpu=h100 on the node pool of those nodes (kueue-cohorts:nodePools[].labels), or "
                     "set the flavor's nodeLabels to labels its nodes carry")


def test_no_nodes_with_exactly_the_named_holders_counts_none():
    five = {k: v for k, v in SEVEN.items() if k not in ("q5", "q6")}
    v = _one({"f": flavor("h100", H100), **five}, [pool("a100", 4, A100)])
    assert v.rule.endswith("(ClusterQueue 'q0-cq', ClusterQueue 'q1-cq', ClusterQueue 'q2-cq', ClusterQueue 'q3-cq', "
                           "ClusterQueue 'q4-cq') has no nodes")


def test_a_topology_aware_flavor_without_node_labels_asks_for_the_level_labels():
    tas = flavor("tas")
    tas["spec"]["topologyName"] = "default"
    manifests = {"t": topology("default", *RACK), "f": tas, "a": queue("a-cq", {"tas": 2}, "c")}
    assert judge(manifests, [pool("p", 4, {"cloud/block": "b1", "kubernetes.io/hostname": "n"})]) == []
    v = _one(manifests, [pool("p", 4, {"gpu": "x", "cloud/block": "b1"})])
    assert v.rule == (
        "ResourceFlavor 'tas' selects the nodes with the Topology level labels cloud/block, kubernetes.io/hostname, "
        "which no node pool carries, so the 2 of 'nvidia.com/gpu' it holds in nominalQuota (ClusterQueue 'a-cq') "
        "has no nodes")
    assert v.fix == ("put the Topology level labels cloud/block, kubernetes.io/hostname on the node pool of those "
                     "nodes (kueue-cohorts:nodePools[].labels), or set the flavor's nodeLabels to labels its nodes "
                     "carry")


def test_a_topology_aware_flavor_with_node_labels_asks_for_both():
    tas = flavor("h100", H100)
    tas["spec"]["topologyName"] = "default"
    manifests = {"t": topology("default", *RACK), "f": tas, "a": queue("a-cq", {"h100": 2}, "c")}
    v = _one(manifests, [pool("p", 4, H100)])
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100 with the Topology level labels cloud/block, "
        "kubernetes.io/hostname, which no node pool carries, so the 2 of 'nvidia.com/gpu' it holds in nominalQuota "
        "(ClusterQueue 'a-cq') has no nodes")
    assert v.fix == ("put the labels gpu=h100 and the Topology level labels cloud/block, kubernetes.io/hostname on "
                     "the node pool of those nodes (kueue-cohorts:nodePools[].labels), or set the flavor's "
                     "nodeLabels to labels its nodes carry")


def test_pools_without_labels_make_a_labelled_flavor_undecidable():
    v = _one({"f": flavor("h100", H100), "a": queue("a-cq", {"h100": 2}, "c")}, [pool("p", 4, None)])
    assert v.rule == (
        "ResourceFlavor 'h100' selects nodes labelled gpu=h100, and the policy config gives node pool 'p' "
        "(nodePools[0]) without node labels, so whether its 2 of 'nvidia.com/gpu' in nominalQuota has nodes cannot "
        "be decided")
    assert v.fix == ("describe the nodes in the cohort-nominal-within-capacity config nodePools with their labels "
                     "(kueue-cohorts validate --stack NAME --pack-config --write generates them from the "
                     "stack file)")
