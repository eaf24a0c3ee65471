"""PODS_FIT_NODES finding 3 without a declared serving pod: inference's nominalQuota judged as 1-GPU pods with the
quota's per-GPU share of cpu and memory (`pods_fit_nodes._share_pods`; issue 42: its survivors in the mutation
target rules-placement). The share is rounded down to a milli-unit (a quantity's finest step, apimachinery
`resource.Quantity` MilliValue), so the pods together never ask more than the quota holds; extended resources other
than the GPU are not shared out (a device is not split per GPU); a quota with no whole GPU count is not judged so.
"""
from __future__ import annotations

from typing import Any

import pytest

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from tests.policy.rules.test_pods_fit_nodes_serving_pods import objects

GPU = "nvidia.com/gpu"
FPGA = "example.com/fpga"


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def inference(*flavors: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """ClusterQueue inf-cq (no cohort): one resource group over `flavors` [(name, nominalQuota by resource)]."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
            "spec": {"resourceGroups": [{"coveredResources": list(flavors[0][1]), "flavors": [
                {"name": name, "resources": [{"name": r, "nominalQuota": v} for r, v in quota.items()]}
                for name, quota in flavors]}]}}


def nodes(*capacities: dict[str, str]) -> Any:
    pools, problems = parse_node_pools([{"name": f"p{k}", "count": 1, "labels": {}, "capacity": capacity}
                                        for k, capacity in enumerate(capacities)])
    assert problems == []
    return pools


def judge(cq: dict[str, Any], pools: Any, *flavors: str) -> list[Any]:
    return check_pods_fit_nodes(objects(*(flavor(f) for f in flavors or ("f",)), cq), pools, ["inf-cq"])


@pytest.mark.parametrize("quota", [{"cpu": "8", "memory": "16Gi"}, {GPU: "1.5", "cpu": "3"}, {GPU: "0", "cpu": "3"},
                                   {"cpu": "8", GPU: "0.5"}])
def test_a_quota_without_a_whole_gpu_count_is_not_judged_as_gpu_pods(quota):
    """No extended resource with a whole count of at least 1: no share pods, no finding, no error (kills `_share_pods`
    raising StopIteration when it finds no GPU, or taking a fractional or zero GPU quota as a count)."""
    assert judge(inference(("f", quota)), nodes({GPU: "1", "cpu": "1", "memory": "1Gi"})) == []


def test_the_share_is_rounded_down_to_a_milli_unit():
    """4 cpus over 6 GPUs: 0.666 cpu per 1-GPU pod (0.6666... rounded down), so each of three nodes of 2 GPUs and
    1.3335 cpus holds two and the six place. Rounded to nearest (0.667) a node would hold one (1.334 > 1.3335) while
    the quota still admits five: the rounding must never make the share pods ask more than the quota's share."""
    pools = nodes(*[{GPU: "2", "cpu": "1333500u"}] * 3)
    assert judge(inference(("f", {GPU: "6", "cpu": "4"})), pools) == []


def test_other_extended_resources_are_not_shared_out_per_gpu():
    """A quota of 4 GPUs and 2 FPGAs on a node of 3 GPUs + 1 FPGA and one of 1 GPU + 1 FPGA: the share pods ask one
    GPU each and no FPGA, and all four place; shared out (half an FPGA each) the first node would hold two."""
    pools = nodes({GPU: "3", FPGA: "1"}, {GPU: "1", FPGA: "1"})
    assert judge(inference(("f", {GPU: "4", FPGA: "2"})), pools) == []


def test_flavors_placed_together_name_the_flavor_of_the_stranded_share_pod():
    """Two flavors without nodeLabels share both nodes (a 1-GPU node of 3Gi, a 1-GPU node of 1Gi): flavor f1's
    1-GPU, 1Gi pod may take the 3Gi node, and flavor f0's 1-GPU, 3Gi pod then fits no node. The finding names the
    stranded pod with its flavor (kills the mutant that drops "of flavor 'f0'" when the group has several)."""
    cq = inference(("f0", {GPU: "1", "memory": "3Gi"}), ("f1", {GPU: "1", "memory": "1Gi"}))
    found = judge(cq, nodes({GPU: "1", "memory": "3Gi"}, {GPU: "1", "memory": "1Gi"}), "f0", "f1")
    assert [(v.policy, v.field) for v in found] == [
        (PODS_FIT_NODES.name, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")]
    assert found[0].rule.startswith("the nominalQuota of flavors 'f0' and 'f1' (their nodeLabels select common nodes) "
                                    "admits pods the nodes cannot all hold")
    assert ("a node of pool 'p0' holds 1 pod(s) (1-GPU pod of the nominalQuota's per-GPU share of flavor 'f1' (no "
            "serving workload declares its pods)), one more 1-GPU pod of the nominalQuota's per-GPU share of flavor "
            f"'f0' (no serving workload declares its pods) ('memory' 3Gi, '{GPU}' 1), still within the quota, fits no "
            "node") in found[0].rule
    # the group's safe quota is 1 GPU (one pod): f0 keeps what is left of it after f1's 1 GPU, 0
    assert found[0].fix == (
        f"lower the nominalQuota of '{GPU}' in flavor 'f0' to at most 0, or give the flavors nodeLabels that select "
        "disjoint nodes, or size the pods to divide the nodes (or add nodes), or give the flavor a Topology "
        "(spec.topologyName) so that Kueue checks per-node fit before it admits")


def test_a_share_pod_wider_than_every_node_is_stranded_with_nothing_placed():
    """1 GPU and 20Gi of quota on two (4 GPU, 16Gi) nodes: the one share pod asks 20Gi, which no node has, though the
    nodes have 32Gi together; reported at the quota as stranded after nothing placed, decided (not a search out of
    budget)."""
    found = judge(inference(("f", {GPU: "1", "memory": "20Gi"})),
                  nodes({GPU: "4", "memory": "16Gi"}, {GPU: "4", "memory": "16Gi"}))
    assert [(v.field, v.value) for v in found] == [("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", "1")]
    assert found[0].rule == (
        "the nominalQuota of flavor 'f' admits pods the nodes cannot all hold: the kube-scheduler binds them one at a "
        "time on any node with room, and after nothing placed, one more 1-GPU pod of the nominalQuota's per-GPU share "
        f"(no serving workload declares its pods) ('memory' 20Gi, '{GPU}' 1), still within the quota, fits no node "
        "and stays Pending while training is preempted for nothing")


def test_a_quota_over_the_nodes_summed_is_left_to_the_capacity_rule():
    """Without declared pods the share pods are the quota itself: 3 GPUs on 2 GPUs of nodes, one unit over, is the
    capacity rule's finding, not a stranding here (kills comparing with the nodes plus one)."""
    assert judge(inference(("f", {GPU: "3"})), nodes({GPU: "2"})) == []
