"""PODS_FIT_NODES finding 4: the pods of the ClusterQueues that borrow inference's idle quota, each shape capped by
what its queue may hold (issue 42: the survivors of `_borrowers` in the mutation target rules-placement).

Upstream facts written out by hand: Kueue v0.19.2 lets a ClusterQueue of a cohort use its nominalQuota plus up to
its borrowingLimit of the cohort's unused quota (`apis/kueue/v1beta2/clusterqueue_types.go`), admits inference's
Workload by quota and preempts borrowers chosen by quota, never by node (`pkg/scheduler/preemption/preemption.go`,
kueue#5243); the kube-scheduler v1.36.3 binds each pod on a node with room for all its requests (`fit.go`).
"""
from __future__ import annotations

from typing import Any

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from tests.policy.rules.test_pods_fit_nodes_reclaim import TRN_LQ, covering, cpu_gpu_nodes, gpu_nodes, requesting
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, GPU, LQ, QUOTA_FIELD, objects
from tests.policy.rules.test_pods_fit_nodes_trainjobs import whole

SHARE = "1-GPU pod of ClusterQueue 'trn-cq' (no TrainingRuntime or workload declares its pods)"
PREEMPTS = ("and Kueue picks the workloads it preempts to reclaim that quota by quota, not by node (kueue#5243): "
            "after ")
STAYS = "within inference's nominalQuota, fits no node, so it is admitted and stays Pending although training gave " \
        "back its quota"


def reclaim(quota: str, borrowers: str, placed: str, target: str, most: int, resize: str = "") -> tuple[Any, ...]:
    """Finding 4 on inf-cq's GPU nominalQuota `quota`, written out."""
    rule = (f"training borrows the idle nominalQuota of flavor 'f' with pods of other shapes ({borrowers}), "
            f"{PREEMPTS}{placed}, one more {target}, {STAYS}")
    fix = f"{resize}lower the nominalQuota of '{GPU}' in flavor 'f' to at most {most}, or add nodes"
    return (PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", QUOTA_FIELD, quota, rule, fix,
            f"The ClusterQueue 'inf-cq' has {QUOTA_FIELD} = '{quota}': {rule}; {fix}.")


def test_a_borrower_without_declared_pods_runs_inference_s_per_gpu_share_of_the_group_s_quota():
    """Training borrows inference's 8 GPUs and 16 cpus and declares no pod: its pods are judged as 1-GPU pods with
    inference's per-GPU share of cpu, 16 / 8 = 2 (mutant 29: the group's total started at 1 made 17 / 9). Three on
    each (4 GPU, 32 cpu) node (6 GPUs, 12 cpus) leave 1 GPU each, and a (2 GPU, 4 cpu) replica, within inference's 8
    and the cohort's 8 (6 + 2), fits neither; a GPU quota of 7 admits no such replica beside them. Pods of the
    replica's own size would fill each node by whole replicas: the fix offers that resize."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 8, 0), ("cpu", 16, 0)]),
                                         covering("trn-cq", [(GPU, 0, 8), ("cpu", 0, 16)]),
                                         requesting("w", "inf", {GPU: "2", "cpu": "4"}, 4)),
                                 cpu_gpu_nodes(4, 32, 2), ["inf-cq"])
    replica = f"Deployment 'inf/w' pod ('cpu' 4, '{GPU}' 2)"
    assert whole(found) == [reclaim(
        "8", f"{SHARE} ('cpu' 2, '{GPU}' 1)",
        f"a node of pool 'p' holds 3 pod(s) ({SHARE}); a node of pool 'p' holds 3 pod(s) ({SHARE})", replica, 7,
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        f"multiples of one {replica}, or ")]


def test_a_borrower_s_pods_are_as_many_as_its_quota_holds_rounded_down():
    """trn-cq owns 7 GPUs (borrowingLimit 0) and runs 2-GPU pods: at most 3 at once (6 GPUs; a fourth makes 8). On
    four 3-GPU nodes its 3 pods leave one node empty, where inference's one 3-GPU replica (of 4 GPUs) fits: no
    stranding. A cap of 4 (mutants 135, 7 / 2 rounded half-even, and 136, 7 x 2) would block all four nodes, the
    replica (11 GPUs in all, within the cohort's 4 + 7) then fitting none."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 4, 0)]),
                                         covering("trn-cq", [(GPU, 7, 0)]),
                                         requesting("w", "inf", {GPU: "3"}, 1), requesting("t", "trn", {GPU: "2"}, 1)),
                                 cpu_gpu_nodes(3, 8, 4), ["inf-cq"])
    assert found == []


def test_a_borrower_that_may_use_no_gpu_of_inference_s_flavor_runs_no_gpu_pod_there():
    """Inference owns 3 GPUs and one 2-GPU replica on one 2-GPU node. trn-cq, of the cohort, declares no pod; in
    flavor f it covers only memory (no share pod it may run: mutants 145 and 147 raise on the empty caps, 148 gives
    it one 1-GPU pod), or GPUs with nothing to use (nominalQuota 0, borrowingLimit 0: mutant 58 counts 1 usable):
    nothing strands. With a borrowingLimit of 1 it may borrow one idle GPU (mutant 70 drops a usable quota of
    exactly 1): its 1-GPU pod leaves 1 GPU on the node, and the replica (3 GPUs in all, within the cohort's 3)
    fits no node; the largest safe quota, 2, admits no replica beside it."""
    def judge(trn: list[tuple[str, int, int]]) -> list[tuple[Any, ...]]:
        return whole(check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 3, 0)]),
                                                  covering("trn-cq", trn), requesting("w", "inf", {GPU: "2"}, 1)),
                                          cpu_gpu_nodes(2, 8, 1), ["inf-cq"]))

    assert judge([("memory", 8, 0)]) == []
    assert judge([(GPU, 0, 0)]) == []
    replica = f"Deployment 'inf/w' pod ('{GPU}' 2)"
    assert judge([(GPU, 0, 1)]) == [reclaim("3", f"{SHARE} ('{GPU}' 1)", f"a node of pool 'p' holds 1 pod(s) ({SHARE})",
                                            replica, 2, "size the borrowers' pods (the TrainingRuntime's trainer "
                                            f"resources, a TrainJob's resourcesPerNode) as whole multiples of one "
                                            f"{replica}, or ")]


def local_queue(namespace: str, cluster_queue: str) -> dict[str, Any]:
    """LocalQueue `namespace`/lq of ClusterQueue `cluster_queue`."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}}


def test_every_borrower_s_own_quota_adds_to_the_cohort_s():
    """Two borrowers own 2 GPUs each (borrowingLimit 0) and run one 2-GPU pod each; inference owns 4 and runs a
    3-GPU and a 1-GPU replica, on three 3-GPU nodes. The cohort holds 4 + 2 + 2 = 8: a borrower's pod on each of two
    nodes and the 1-GPU replica on the third (5 GPUs) leave 1, 1 and 2 GPUs, and the 3-GPU replica (8 in all, within
    inference's 4: 1 + 3) fits none (mutant 61 keeps only the last borrower's 2: a cohort of 6 admits no such
    replica). A quota of 3 admits no 3-GPU replica beside the 1-GPU one; pods of 3 GPUs would fill whole nodes."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, local_queue("ta", "trn-a"), local_queue("tb", "trn-b"),
                                         covering("inf-cq", [(GPU, 4, 0)]), covering("trn-a", [(GPU, 2, 0)]),
                                         covering("trn-b", [(GPU, 2, 0)]), requesting("w", "inf", {GPU: "3"}, 1),
                                         requesting("v", "inf", {GPU: "1"}, 1), requesting("a", "ta", {GPU: "2"}, 1),
                                         requesting("b", "tb", {GPU: "2"}, 1)),
                                 gpu_nodes((3, 3, 3)), ["inf-cq"])
    replica = f"Deployment 'inf/w' pod ('{GPU}' 3)"
    assert whole(found) == [reclaim(
        "4", f"Deployment 'ta/a' pod ('{GPU}' 2), Deployment 'tb/b' pod ('{GPU}' 2)",
        "a node of pool 'p0' holds 1 pod(s) (Deployment 'tb/b' pod); a node of pool 'p1' holds 1 pod(s) (Deployment "
        "'ta/a' pod); a node of pool 'p2' holds 1 pod(s) (Deployment 'inf/v' pod)", replica, 3,
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        f"multiples of one {replica}, or ")]


def test_a_borrower_pod_larger_than_the_cohort_holds_is_not_named_among_the_borrowers():
    """trn-b (no borrowingLimit) declares a 4-GPU pod: the cohort has 3 GPUs, so none of it is ever admitted beside
    inference's (finding 1 still says no node holds it), and finding 4 names only trn-cq's 1-GPU share pod, the
    one that strands the 2-GPU replica (mutant 150 names the 4-GPU pod too, as a shape of none)."""
    unlimited = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "trn-b"},
                 "spec": {"cohortName": "c", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                     {"name": "f", "resources": [{"name": GPU, "nominalQuota": "0"}]}]}]}}
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, local_queue("tb", "trn-b"),
                                         covering("inf-cq", [(GPU, 3, 0)]), covering("trn-cq", [(GPU, 0, 1)]),
                                         unlimited, requesting("w", "inf", {GPU: "2"}, 1),
                                         requesting("b", "tb", {GPU: "4"}, 1)),
                                 cpu_gpu_nodes(2, 8, 1), ["inf-cq"])
    field = f'spec.template.spec.containers[0].resources.requests["{GPU}"]'
    rule = (f"one Deployment 'tb/b' pod asks for '{GPU}' 4 on one node, and no node of flavor 'f' has that (the "
            f"closest, pool 'p', has '{GPU}' 2 per node: '{GPU}' 4 > 2); Kueue admits it by quota in flavor 'f' of "
            "ClusterQueue 'trn-b' and the kube-scheduler leaves it Pending for ever (NodeResourcesFit: Insufficient), "
            "holding that quota")
    fix = (f"request at most 2 of '{GPU}' per pod (split the work over more pods), or add a node pool whose nodes "
           f"have 4 of '{GPU}' and carry the nodeLabels of flavor 'f'")
    replica = f"Deployment 'inf/w' pod ('{GPU}' 2)"
    assert whole(found) == [
        (PODS_FIT_NODES.name, "Deployment", "tb", "b", field, "4", rule, fix,
         f"The Deployment 'tb/b' has {field} = '4': {rule}; {fix}."),
        reclaim("3", f"{SHARE} ('{GPU}' 1)", f"a node of pool 'p' holds 1 pod(s) ({SHARE})", replica, 2,
                "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as "
                f"whole multiples of one {replica}, or ")]


def test_the_resize_is_judged_with_inference_s_pods_within_its_own_quota():
    """The stack above with four 1-GPU replicas: the finding is the same, and the fix still offers borrowers' pods of
    the 3-GPU replica's size. With those (a whole 3-GPU node each) inference's replicas stay within its own 4 GPUs:
    a 1-GPU replica and the 3-GPU one, so two nodes are never both left short by 1-GPU replicas beside a filled
    one (mutants 168 and 174 of `_reclaim_packing` judge the resize with inference's pods bounded by the cohort's 8
    GPUs only: 1-GPU replicas on two nodes, a borrower on the third, and no resize offered)."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, local_queue("ta", "trn-a"), local_queue("tb", "trn-b"),
                                         covering("inf-cq", [(GPU, 4, 0)]), covering("trn-a", [(GPU, 2, 0)]),
                                         covering("trn-b", [(GPU, 2, 0)]), requesting("w", "inf", {GPU: "3"}, 1),
                                         requesting("v", "inf", {GPU: "1"}, 4), requesting("a", "ta", {GPU: "2"}, 1),
                                         requesting("b", "tb", {GPU: "2"}, 1)),
                                 gpu_nodes((3, 3, 3)), ["inf-cq"])
    replica = f"Deployment 'inf/w' pod ('{GPU}' 3)"
    assert whole(found) == [reclaim(
        "4", f"Deployment 'ta/a' pod ('{GPU}' 2), Deployment 'tb/b' pod ('{GPU}' 2)",
        "a node of pool 'p0' holds 1 pod(s) (Deployment 'tb/b' pod); a node of pool 'p1' holds 1 pod(s) (Deployment "
        "'ta/a' pod); a node of pool 'p2' holds 1 pod(s) (Deployment 'inf/v' pod)", replica, 3,
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        f"multiples of one {replica}, or ")]


def test_a_resource_the_stranded_replica_asks_none_of_does_not_size_the_resized_borrowers():
    """The stack of the borrowing limit of 1 above, inference covering cpu too (8) and its 2-GPU replica asking cpu
    0: the borrowers sized like the replica are counted by its GPUs only, a request of 0 dividing nothing (mutants
    150 and 151 of `_reclaim_packing` divide the cohort's cpu by it). The share pod asks 8 / 3 cpus rounded down
    to a milli-cpu."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [(GPU, 3, 0), ("cpu", 8, 0)]),
                                         covering("trn-cq", [(GPU, 0, 1)]),
                                         requesting("w", "inf", {GPU: "2", "cpu": "0"}, 1)),
                                 cpu_gpu_nodes(2, 8, 1), ["inf-cq"])
    replica = f"Deployment 'inf/w' pod ('{GPU}' 2)"
    assert whole(found) == [reclaim("3", f"{SHARE} ('cpu' 2.666, '{GPU}' 1)",
                                    f"a node of pool 'p' holds 1 pod(s) ({SHARE})", replica, 2,
                                    "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's "
                                    f"resourcesPerNode) as whole multiples of one {replica}, or ")]


def test_the_safe_quota_named_is_at_least_one_whole_replica_rounded_up():
    """Inference owns 4 cpus and runs one 2.5-cpu replica; training borrows 1 cpu with 0.5-cpu pods, on one node of
    2.9 cpus: one training pod leaves 2.4 and the replica (3 cpus in all) fits no node. A quota of 3 cpus still
    admits both, and below 2.5 no replica is admitted at all, so no quota of at least one replica is safe: at most
    0 (mutant 2 of `_largest_safe` rounds 2.5 half-even to 2 and names 2, a quota that admits no replica)."""
    nodes, problems = parse_node_pools([{"name": "p", "count": 1, "labels": {}, "capacity": {"cpu": "2900m"}}])
    assert problems == []
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, TRN_LQ, covering("inf-cq", [("cpu", 4, 0)]),
                                         covering("trn-cq", [("cpu", 0, 1)]),
                                         requesting("w", "inf", {"cpu": "2500m"}, 1),
                                         requesting("t", "trn", {"cpu": "500m"}, 1)), nodes, ["inf-cq"])
    replica = "Deployment 'inf/w' pod ('cpu' 2.5)"
    rule = ("training borrows the idle nominalQuota of flavor 'f' with pods of other shapes (Deployment 'trn/t' pod "
            f"('cpu' 0.5)), {PREEMPTS}a node of pool 'p' holds 1 pod(s) (Deployment 'trn/t' pod), one more "
            f"{replica}, {STAYS}")
    fix = ("size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as "
           f"whole multiples of one {replica}, or lower the nominalQuota of 'cpu' in flavor 'f' to at most 0, or add "
           "nodes")
    assert whole(found) == [(PODS_FIT_NODES.name, "ClusterQueue", None, "inf-cq", QUOTA_FIELD, "4", rule, fix,
                             f"The ClusterQueue 'inf-cq' has {QUOTA_FIELD} = '4': {rule}; {fix}.")]
