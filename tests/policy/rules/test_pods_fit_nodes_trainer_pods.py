"""PODS_FIT_NODES finding 2 (a training job's numNodes pods together on the flavor's nodes) and the rule as the book
calls it (issue 42: the mutants of `per_node`, `homogeneous_capacity`, `_job_pods`, `_trainer_pods` and
`check_pods_fit_nodes_options` in the mutation target rules-placement, which no test reached).

The oracle of how many identical pods the nodes hold is a first-fit simulation: bind trainer pods one at a time on
the first node with room for all their requests (Kubernetes v1.36.3 NodeResourcesFit `fitsRequest`, only on the
resources some pool declares), until one fits no node. Identical pods fill every node to the same count whatever
the order, so first-fit is exact; it is another algorithm than the rule's per-node floor division.
"""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_cohorts.policy.rules.pods_fit_nodes import PODS_FIT_NODES, check_pods_fit_nodes, check_pods_fit_nodes_options
from kueue_cohorts.policy.rules.vocabulary.node_pools import parse_node_pools
from tests.policy.rules.test_pods_fit_nodes_serving_pods import FLAVOR, LQ, QUEUE, gpu_pools, inference_cq, objects

GPU = "nvidia.com/gpu"
RESOURCES = (GPU, "cpu")
TRN_LQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "trn"},
          "spec": {"clusterQueue": "trn-cq"}}


def training_cq(quota: dict[str, str]) -> dict[str, Any]:
    """ClusterQueue trn-cq (no cohort) with one flavor f of `quota`."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "trn-cq"},
            "spec": {"resourceGroups": [{"coveredResources": list(quota), "flavors": [
                {"name": "f", "resources": [{"name": r, "nominalQuota": v} for r, v in quota.items()]}]}]}}


def runtime(requests: dict[str, str], num_nodes: Any) -> dict[str, Any]:
    """TrainingRuntime trn/rt: a JobSet whose `node` job's container asks `requests`; mlPolicy.numNodes when given."""
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
        "template": {"spec": {"containers": [{"name": "node", "resources": {"requests": requests}}]}}}}}]}}}
    if num_nodes is not None:
        spec["mlPolicy"] = {"numNodes": num_nodes}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
            "metadata": {"name": "rt", "namespace": "trn"}, "spec": spec}


def first_fit(requests: dict[str, int], nodes: list[dict[str, int]], judged: set[str]) -> int:
    """How many pods of `requests` first-fit binds on `nodes` (per node: resource -> allocatable) before one fits
    none; a resource no pool declares is not judged. Stops at 100 (unbounded: the pod asks for nothing judged)."""
    rooms = [dict(n) for n in nodes]
    for placed in range(100):
        node = next((room for room in rooms if all(room.get(r, 0) >= a for r, a in requests.items()
                                                    if a > 0 and r in judged)), None)
        if node is None:
            return placed
        for r, a in requests.items():
            node[r] = node.get(r, 0) - a
    return 100


pool_st = st.tuples(st.integers(1, 3), st.sampled_from([None, 0, 1, 2, 4]), st.sampled_from([None, 1, 2, 8]))
"""A pool: node count, GPUs and cpus per node (None: the pool does not declare the resource)."""


@settings(max_examples=300, deadline=None)
@given(pools=st.lists(pool_st, min_size=1, max_size=2).filter(lambda ps: any(g is not None or c is not None
                                                                             for _, g, c in ps)),
       gpus=st.sampled_from([0, 1, 2, 3]), cpus=st.sampled_from([0, 1, 2]), fpga=st.booleans(),
       num_nodes=st.sampled_from([None, 1, 2, 3, 5, 8, 4.0]), roomy=st.booleans())
def test_a_job_s_trainer_pods_must_fit_the_flavor_s_nodes_together(pools, gpus, cpus, fpga, num_nodes, roomy):
    """Kills `per_node`'s and `homogeneous_capacity`'s mutants (a resource not judged, a request of 0 or 1, a pool
    that does not declare a requested resource, the sum over nodes) and `_job_pods`' (numNodes 1, a job the nodes
    hold, a pod no node holds): finding 2 at spec.mlPolicy.numNodes exactly when numNodes pods that fit the quota
    together do not all fit the nodes (first-fit), and the most they hold in its fix."""
    requests = {GPU: gpus, "cpu": cpus, **({"example.com/fpga": 1} if fpga else {})}
    if not any(requests.values()):
        requests[GPU] = 1
    declared = [{"name": f"p{i}", "count": count, "labels": {},
                 "capacity": {r: str(v) for r, v in ((GPU, g), ("cpu", c)) if v is not None}}
                for i, (count, g, c) in enumerate(pools)]
    node_pools, problems = parse_node_pools(declared)
    assert problems == []
    judged = {r for p in declared for r in p["capacity"]}
    nodes = [{r: int(v) for r, v in p["capacity"].items()} for p in declared for _ in range(p["count"])]
    n = 1 if num_nodes is None else int(num_nodes)
    quota = {r: str(a * (n if roomy else 1)) for r, a in requests.items() if r in RESOURCES}
    stack = objects(FLAVOR, TRN_LQ, training_cq(quota), runtime({r: str(a) for r, a in requests.items()}, num_nodes))
    found = [v for v in check_pods_fit_nodes(stack, node_pools, []) if v.field == "spec.mlPolicy.numNodes"]
    holds = first_fit(requests, nodes, judged)
    asked = {r: a for r, a in requests.items() if a > 0 and r in RESOURCES}
    together = bool(asked) and (roomy or n == 1)  # Kueue admits numNodes pods at once only when their sum fits
    if not (together and 0 < holds < n):
        assert found == [], [v.message for v in found]
        return
    amounts = ", ".join(f"'{r}' {a}" for r, a in sorted(requests.items()) if a > 0)
    assert [(v.policy, v.value, v.fix) for v in found] == [
        (PODS_FIT_NODES.name, num_nodes, f"lower numNodes to at most {holds}, or add nodes to the flavor's pools")]
    assert found[0].rule == (
        f"numNodes {n} trainer pods of {amounts} each fit the quota of flavor 'f' of ClusterQueue 'trn-cq', which "
        f"Kueue admits at once, but the nodes of that flavor hold only {holds} of them together, so the rest stay "
        "Pending and the job never starts")


def test_a_trainjob_s_own_num_nodes_and_resources_per_node_are_judged_at_its_fields():
    """A TrainJob overriding numNodes (spec.trainer.numNodes) and the node container's resources
    (spec.trainer.resourcesPerNode, Trainer v2.2.1 jobset builder): its 3 pods of 3 GPUs on two 4-GPU nodes are
    reported at its numNodes, and a 5-GPU override at its resourcesPerNode (finding 1); the runtime's own 1-GPU pods
    fit. Kills `_trainer_pods` reading the runtime instead of the override."""
    override = {"requests": {GPU: "3"}}
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "j", "namespace": "trn", "labels": QUEUE},
           "spec": {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"},
                    "trainer": {"numNodes": 3, "resourcesPerNode": override}}}
    stack = objects(FLAVOR, TRN_LQ, training_cq({GPU: "16"}), runtime({GPU: "1"}, 2), job)
    found = check_pods_fit_nodes(stack, gpu_pools(2, 4), [])
    assert [(v.subject.name if v.subject else None, v.field, v.value, v.fix) for v in found] == [
        ("j", "spec.trainer.numNodes", 3, "lower numNodes to at most 2, or add nodes to the flavor's pools")]
    wide = {**job, "spec": {**job["spec"], "trainer": {"resourcesPerNode": {"requests": {GPU: "5"}}}}}
    found = check_pods_fit_nodes(objects(FLAVOR, TRN_LQ, training_cq({GPU: "16"}), runtime({GPU: "1"}, 2), wide),
                                 gpu_pools(2, 4), [])
    assert [(v.field, v.value) for v in found] == [("spec.trainer.resourcesPerNode", {"requests": {GPU: "5"}})]


def test_the_book_s_entry_reads_the_node_pools_the_legacy_capacity_and_the_inference_roles():
    """check_pods_fit_nodes_options (the book's call): `nodePools` are the nodes, else the legacy `capacity` is one
    node; the ClusterQueues named in `inferenceClusterQueues` get the packing finding. Kills the mutants of every
    argument it passes on (no test reached it before)."""
    serving = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "inf"},
               "spec": {"replicas": 3, "strategy": {"type": "Recreate"}, "template": {
                   "metadata": {"labels": QUEUE},
                   "spec": {"containers": [{"name": "m", "resources": {"requests": {GPU: "3"}}}]}}}}
    stack = objects(FLAVOR, LQ, inference_cq(12), serving)
    pools = [{"name": "p", "count": 2, "labels": {}, "capacity": {GPU: "4"}}]
    by_pools = check_pods_fit_nodes_options(stack, {"nodePools": pools, "inferenceClusterQueues": ["inf-cq"]})
    assert by_pools == check_pods_fit_nodes(stack, gpu_pools(2, 4), ["inf-cq"])
    assert [v.field for v in by_pools] == ["spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"]
    assert "to at most 8," in by_pools[0].fix  # two 3-GPU pods place (a quota of 8 admits no third), three do not
    assert check_pods_fit_nodes_options(stack, {"nodePools": pools}) == []  # no inference role: no packing
    legacy = check_pods_fit_nodes_options(stack, {"capacity": {GPU: "2"}, "inferenceClusterQueues": ["inf-cq"]})
    assert [(v.field, v.fix) for v in legacy] == [(
        f'spec.template.spec.containers[0].resources.requests["{GPU}"]',
        f"request at most 2 of '{GPU}' per pod (split the work over more pods), or add a node pool whose nodes have "
        f"3 of '{GPU}' and carry the nodeLabels of flavor 'f'")]
    assert check_pods_fit_nodes_options(stack, {"inferenceClusterQueues": ["inf-cq"]}) == []  # no nodes declared
