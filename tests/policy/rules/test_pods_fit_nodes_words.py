"""PODS_FIT_NODES finding 1 worded whole when a pod is short of several resources at once (issue 42: the survivors of
`_one_pod` and `_binary` in the mutation target rules-placement).

What the sentence says is written out by hand: kube-scheduler v1.36.3 `noderesources/fit.go` fitsRequest names each
resource a node lacks ("Insufficient <resource>"), judged only for a request above 0; a node that does not report a
resource has 0 of it; quantities print as Kubernetes writes them, memory, ephemeral-storage and hugepages-<size> in
binary suffixes (apimachinery `resource.Quantity`: BinarySI for those, DecimalSI for cpu and extended resources);
component-helpers PodRequests adds the pod's `overhead` (RuntimeClass) to its containers' requests.
"""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from kueue_cohorts.policy.rules.vocabulary.values import MISSING
from tests.policy.rules.test_pods_fit_nodes_reclaim import TRN_LQ, covering, requesting
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, GPU, LQ, objects
from tests.policy.rules.test_pods_fit_nodes_skips import deployment
from tests.policy.rules.test_pods_fit_nodes_trainjobs import whole

CLOSING = ("Kueue admits it by quota in flavor 'f' of ClusterQueue 'inf-cq' and the kube-scheduler leaves it Pending "
           "for ever (NodeResourcesFit: Insufficient), holding that quota")


def pools() -> Any:
    """Pool a (one node: 4 GPUs, 8Gi memory, 100Gi ephemeral-storage, 2Gi of 2Mi hugepages, no cpu reported) and
    pool c (two nodes: 8 cpus, one FPGA, nothing else)."""
    parsed, problems = parse_node_pools([
        {"name": "a", "count": 1, "labels": {}, "capacity": {GPU: "4", "memory": "8Gi", "ephemeral-storage": "100Gi",
                                                            "hugepages-2Mi": "2Gi"}},
        {"name": "c", "count": 2, "labels": {}, "capacity": {"cpu": "8", "example.com/fpga": "1"}}])
    assert problems == []
    return parsed


CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
      "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": [
          {"name": "f", "resources": [{"name": r, "nominalQuota": q}
                                      for r, q in (("cpu", "64"), ("memory", "1Ti"), (GPU, "8"))]}]}]}}


def test_a_pod_short_of_four_resources_names_each_in_its_own_units():
    """One pod asks cpu 1, 16Gi memory, 200Gi ephemeral-storage, 4Gi of 2Mi hugepages, 1 GPU and 0 FPGAs. Pool a
    misses four (cpu 1 > 0 not reported, and the three binary ones), pool c four too (the three binary ones and
    the GPU): the first of a tie, a, is the closest. The sentence lists what the pod asks above 0 (not the FPGA:
    mutant 24, `>= 0`; the cpu of 1: mutant 25, `> 1`), what a node of a has of each (0 cpu: mutant 39, a missing
    resource read as 1), each short one joined by ", " (43) in binary units for memory, ephemeral-storage and
    hugepages (45, 47, 50, 52 and `_binary` 5, 6, 8, 9), and is reported at the first short resource's field."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, CQ, deployment("w", {
        "cpu": "1", "memory": "16Gi", "ephemeral-storage": "200Gi", "hugepages-2Mi": "4Gi", GPU: "1",
        "example.com/fpga": "0"})), pools(), [])
    field = "spec.template.spec.containers[0].resources.requests.cpu"
    rule = (f"one Deployment 'inf/w' pod asks for 'cpu' 1, 'ephemeral-storage' 200Gi, 'hugepages-2Mi' 4Gi, 'memory' "
            f"16Gi, '{GPU}' 1 on one node, and no node of flavor 'f' has that (the closest, pool 'a', has 'cpu' 0, "
            f"'ephemeral-storage' 100Gi, 'hugepages-2Mi' 2Gi, 'memory' 8Gi, '{GPU}' 4 per node: 'cpu' 1 > 0, "
            "'ephemeral-storage' 200Gi > 100Gi, 'hugepages-2Mi' 4Gi > 2Gi, 'memory' 16Gi > 8Gi); " + CLOSING)
    fix = ("request at most 0 of 'cpu', 100Gi of 'ephemeral-storage', 2Gi of 'hugepages-2Mi', 8Gi of 'memory' per pod "
           "(split the work over more pods), or add a node pool whose nodes have 1 of 'cpu', 200Gi of "
           "'ephemeral-storage', 4Gi of 'hugepages-2Mi', 16Gi of 'memory' and carry the nodeLabels of flavor 'f'")
    assert whole(found) == [(PODS_FIT_NODES.name, "Deployment", "inf", "w", field, "1", rule, fix,
                             f"The Deployment 'inf/w' has {field} = '1': {rule}; {fix}.")]


def test_a_resource_only_the_pod_s_overhead_asks_for_is_reported_on_the_workload_as_a_whole():
    """A pod whose 16Gi of memory is its `overhead` (no container asks memory): no container field gives it, so the
    finding is on the Deployment as a whole, field "" (kills `_one_pod` 17, 19 and 20, the default field of a
    resource no container asks). Pool c (8 cpus, no memory reported) misses only the memory."""
    workload = deployment("w", {"cpu": "1"})
    workload["spec"]["template"]["spec"]["overhead"] = {"memory": "16Gi"}
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, CQ, workload), pools(), [])
    rule = ("one Deployment 'inf/w' pod asks for 'cpu' 1, 'memory' 16Gi on one node, and no node of flavor 'f' has "
            "that (the closest, pool 'c', has 'cpu' 8, 'memory' 0 per node: 'memory' 16Gi > 0); " + CLOSING)
    fix = ("request at most 0 of 'memory' per pod (split the work over more pods), or add a node pool whose nodes "
           "have 16Gi of 'memory' and carry the nodeLabels of flavor 'f'")
    assert whole(found) == [(PODS_FIT_NODES.name, "Deployment", "inf", "w", "", MISSING, rule, fix,
                             f"The Deployment 'inf/w': {rule}; {fix}.")]


def test_the_packing_fix_names_a_memory_quota_in_binary_units():
    """Three 683-byte pods on two 1000-byte nodes, memory quota 3000: one pod on each node leaves 317 bytes each, the
    third (2049 bytes in all, within 3000) fits neither. A quota below 2049 admits no third: at most 2048 bytes,
    written 2Ki as Kubernetes writes memory (mutants 204 and 206 of `_inference_packing`: printed 2048)."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "inf-cq"},
          "spec": {"resourceGroups": [{"coveredResources": ["memory"], "flavors": [
              {"name": "f", "resources": [{"name": "memory", "nominalQuota": "3000"}]}]}]}}
    nodes, problems = parse_node_pools([{"name": "p", "count": 2, "labels": {}, "capacity": {"memory": "1000"}}])
    assert problems == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, cq, deployment("w", {"memory": "683"}, 3)), nodes, ["inf-cq"])
    field = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    rule = ("the nominalQuota of flavor 'f' admits pods the nodes cannot all hold: the kube-scheduler binds them one "
            "at a time on any node with room, and after a node of pool 'p' holds 1 pod(s) (Deployment 'inf/w' pod); "
            "a node of pool 'p' holds 1 pod(s) (Deployment 'inf/w' pod), one more Deployment 'inf/w' pod ('memory' "
            "683), still within the quota, fits no node and stays Pending while training is preempted for nothing")
    fix = ("lower the nominalQuota of 'memory' in flavor 'f' to at most 2Ki, or size the pods to divide the nodes (or "
           "add nodes), or give the flavor a Topology (spec.topologyName) so that Kueue checks per-node fit before it "
           "admits")
    assert whole(found) == [(PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", field, "3000", rule, fix,
                             f"The ClusterQueue 'inf-cq' has {field} = '3000': {rule}; {fix}.")]


def test_the_reclaim_fix_names_a_memory_quota_in_binary_units():
    """Inference owns 3000 bytes of memory and runs one 1500-byte replica; training borrows 549 bytes with one
    549-byte pod, on one 2000-byte node: the training pod leaves 1451 and the replica (2049 bytes in all, within
    3000) fits no node. A quota below 2049 admits no replica beside it: at most 2048 bytes, written 2Ki (mutants 208
    and 210 of `_reclaim_packing`: 2048); training's pods sized like the replica strand it too (1500 + 1500 within
    3000 on a 2000-byte node), so no resize is offered."""
    nodes, problems = parse_node_pools([{"name": "p", "count": 1, "labels": {}, "capacity": {"memory": "2000"}}])
    assert problems == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [("memory", 3000, 0)]),
                                         covering("trn-cq", [("memory", 0, 549)]),
                                         requesting("w", "inf", {"memory": "1500"}, 1),
                                         requesting("t", "trn", {"memory": "549"}, 1)), nodes, ["inf-cq"])
    field = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    rule = ("training borrows the idle nominalQuota of flavor 'f' with pods of other shapes (Deployment 'trn/t' pod "
            "('memory' 549)), and Kueue picks the workloads it preempts to reclaim that quota by quota, not by node "
            "(kueue#5243): after a node of pool 'p' holds 1 pod(s) (Deployment 'trn/t' pod), one more Deployment "
            "'inf/w' pod ('memory' 1500), within inference's nominalQuota, fits no node, so it is admitted and stays "
            "Pending although training gave back its quota")
    fix = "lower the nominalQuota of 'memory' in flavor 'f' to at most 2Ki, or add nodes"
    assert whole(found) == [(PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", field, "3000", rule, fix,
                             f"The ClusterQueue 'inf-cq' has {field} = '3000': {rule}; {fix}.")]
