"""PODS_FIT_NODES finding 4 with one TrainingRuntime behind several borrowing ClusterQueues (issue 42: found through
`_borrowers`' mutant 149, which kept a second borrower's pods of the same name).

A namespace whose LocalQueues lead to several ClusterQueues runs the runtime's pods in each of them: Kueue admits
each queue's Workloads against that queue's own quota (v0.19.2 `apis/kueue/v1beta2/clusterqueue_types.go`
nominalQuota, borrowingLimit), so the cohort holds as many of those pods as the queues' quotas together. Before the
fix the rule kept the pods of the first such ClusterQueue only (a borrower shape was kept once per name) and
accepted stacks whose borrowers strand an inference pod.
"""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.pods_fit_nodes import check_pods_fit_nodes
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from tests.policy.rules.test_pods_fit_nodes_borrowers import reclaim
from tests.policy.rules.test_pods_fit_nodes_reclaim import covering, gpu_nodes, requesting
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, GPU, LQ, QUOTA_FIELD, objects
from tests.policy.rules.test_pods_fit_nodes_trainjobs import trainer_runtime, whole

RUNTIME = "TrainingRuntime 'trn/rt' trainer pod"


def local_queue(name: str, cluster_queue: str) -> dict[str, Any]:
    """LocalQueue trn/`name` of ClusterQueue `cluster_queue`."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": "trn"}, "spec": {"clusterQueue": cluster_queue}}


def test_a_runtime_behind_two_borrowing_queues_runs_in_both():
    """trn-a and trn-b own 2 GPUs each (borrowingLimit 0) and both run the runtime's 2-GPU pod (two LocalQueues of
    namespace trn); inference owns 4 and runs a 3-GPU and a 1-GPU replica on three 3-GPU nodes. One runtime pod from
    each queue on two nodes and the 1-GPU replica on the third leave 1, 1 and 2 GPUs: the 3-GPU replica (1 + 3 of
    inference's 4, 8 of the cohort's 4 + 2 + 2) fits none. A quota of 3 admits no 3-GPU replica beside the 1-GPU
    one; 3-GPU borrower pods would fill whole nodes."""
    found = check_pods_fit_nodes(objects(FLAVOR, LQ, local_queue("lq-a", "trn-a"), local_queue("lq-b", "trn-b"),
                                         covering("inf-cq", [(GPU, 4, 0)]), covering("trn-a", [(GPU, 2, 0)]),
                                         covering("trn-b", [(GPU, 2, 0)]), requesting("w", "inf", {GPU: "3"}, 1),
                                         requesting("v", "inf", {GPU: "1"}, 1), trainer_runtime("rt", "2", 1)),
                                 gpu_nodes((3, 3, 3)), ["inf-cq"])
    replica = f"Deployment 'inf/w' pod ('{GPU}' 3)"
    assert whole(found) == [reclaim(
        "4", f"{RUNTIME} ('{GPU}' 2)",
        f"a node of pool 'p0' holds 1 pod(s) ({RUNTIME}); a node of pool 'p1' holds 1 pod(s) ({RUNTIME}); a node of "
        "pool 'p2' holds 1 pod(s) (Deployment 'inf/v' pod)", replica, 3,
        "size the borrowers' pods (the TrainingRuntime's trainer resources, a TrainJob's resourcesPerNode) as whole "
        f"multiples of one {replica}, or ")]


@settings(max_examples=150, deadline=None)
@given(owned=st.lists(st.integers(0, 6), min_size=1, max_size=3), pod=st.integers(1, 3), replica=st.integers(1, 4),
       nodes=st.integers(1, 4), capacity=st.integers(1, 5))
def test_the_runtime_s_pods_of_every_borrowing_queue_count(owned, pod, replica, nodes, capacity):
    """Borrowing queues q0.. own `owned` GPUs each (borrowingLimit 0) and run the runtime's `pod`-GPU pods: at most
    owned // pod each, all queues' together. Inference owns exactly one `replica`-GPU replica (cap 1) on `nodes`
    nodes of `capacity` GPUs. Written out: a node is left short of the replica by b = ceil((capacity - replica + 1)
    / pod) runtime pods (when they fit it, b x pod <= capacity), so the replica is stranded when it fits an empty
    node and the queues' pods together block every node: nodes x b <= sum of owned // pod."""
    if pod > capacity:
        return  # finding 1 on the runtime, not this
    queues = [f"q{i}" for i in range(len(owned))]
    stack = objects(FLAVOR, LQ, covering("inf-cq", [(GPU, replica, 0)]), requesting("w", "inf", {GPU: str(replica)}, 1),
                    trainer_runtime("rt", str(pod), 1),
                    *(local_queue(f"lq-{q}", q) for q in queues),
                    *(covering(q, [(GPU, n, 0)]) for q, n in zip(queues, owned, strict=True)))
    pools, problems = parse_node_pools([{"name": "p", "count": nodes, "labels": {}, "capacity": {GPU: str(capacity)}}])
    assert problems == []
    found = [v for v in check_pods_fit_nodes(stack, pools, ["inf-cq"]) if v.subject.name == "inf-cq"]
    block = -(-(capacity - replica + 1) // pod)
    strands = replica <= capacity and block * pod <= capacity and nodes * block <= sum(n // pod for n in owned)
    assert [v.field for v in found] == ([QUOTA_FIELD] if strands else [])
